//! Where a project's audits are kept: `$XDG_STATE_HOME/bmb-monitor/audits/<project>/`,
//! the last report as JSON (what the next audit compares with) and as markdown.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The most a kept report may hold before it is not ours.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// The folder of `project`'s audits: its name and a hash of its path, so two
/// projects of one name keep apart.
pub(crate) fn folder(state_dir: &Path, project: &Path) -> PathBuf {
    let text = project.to_string_lossy();
    let name: String = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_string())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    state_dir
        .join("audits")
        .join(format!("{name}-{}", watchdog::session::fingerprint(&text)))
}

/// The last audit's JSON, if one was kept and can be read.
pub(super) fn last(folder: &Path) -> Result<Option<serde_json::Value>, String> {
    let path = folder.join("last.json");
    match probes::fs::file::read_regular_text(&path, MAX_REPORT_BYTES) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(probes::fs::file::ReadError::Missing) => Ok(None),
        Err(e) => Err(format!("{}: it {e}", path.display())),
    }
}

/// Keeps this audit: written beside and renamed into place, so a crash
/// leaves the previous one whole.
pub(super) fn keep(folder: &Path, json: &serde_json::Value, markdown: &str) -> Result<(), String> {
    make(folder)?;
    for (name, text) in [
        ("last.json", json.to_string()),
        ("report.md", markdown.to_string()),
    ] {
        let path = folder.join(name);
        let fresh = folder.join(format!(".{name}.new"));
        std::fs::File::create(&fresh)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&fresh, &path))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// When `folder`'s project last had an audit started, in seconds since the
/// epoch: what a restarted watcher waits a period from. `Err` says why a
/// kept time cannot be read.
pub(crate) fn last_started(folder: &Path) -> Result<Option<i64>, String> {
    let path = folder.join("started");
    match probes::fs::file::read_regular_text(&path, 64) {
        Ok(text) => text.trim().parse::<i64>().map(Some).map_err(|_| {
            format!(
                "{}: not a time in seconds: {:?}",
                path.display(),
                text.trim()
            )
        }),
        Err(probes::fs::file::ReadError::Missing) => Ok(None),
        Err(e) => Err(format!("{}: it {e}", path.display())),
    }
}

/// Keeps `epoch` as the start of `folder`'s project's latest audit.
pub(crate) fn mark_started(folder: &Path, epoch: i64) -> Result<(), String> {
    make(folder)?;
    let path = folder.join("started");
    let fresh = folder.join(".started.new");
    std::fs::write(&fresh, format!("{epoch}\n"))
        .and_then(|()| std::fs::rename(&fresh, &path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `<state>/audits/<project>` and the folders above it, private (mode
/// 0700), or refused when one exists open to others or another user's.
fn make_private(folder: &Path) -> Result<(), probes::fs::folder::FolderError> {
    match folder.ancestors().nth(2) {
        Some(state) => probes::fs::folder::ensure_private_under(state, folder),
        None => probes::fs::folder::ensure_private(folder),
    }
}

fn make(folder: &Path) -> Result<(), String> {
    make_private(folder).map_err(|e| e.to_string())
}

/// Held while an audit of `folder`'s project runs: a second audit of one
/// project at once (another watcher, a hand-run `audit`) is refused.
pub(crate) fn lock(folder: &Path) -> Result<Option<probes::fs::lock::Lock>, String> {
    match make_private(folder) {
        Ok(()) => {}
        Err(probes::fs::folder::FolderError::Refused(why)) => return Err(why),
        // Said when the report is not kept; the audit itself can run.
        Err(_) => return Ok(None),
    }
    match probes::fs::lock::try_lock(&folder.join("audit.lock")) {
        Ok(lock) => Ok(Some(lock)),
        Err(probes::fs::lock::LockError::Held(pid)) => Err(format!(
            "this project is being audited already{}",
            pid.map_or_else(String::new, |pid| format!(" (pid {pid})"))
        )),
        // Not guarded, but not stopped either: the audit itself can run.
        Err(probes::fs::lock::LockError::Failed(_)) => Ok(None),
    }
}

/// Moves an unreadable `last.json` aside (`last.json.unreadable`, replacing
/// an older one) before this audit takes its place: nothing is lost. Says
/// where it went, or why it stays.
pub(super) fn set_aside(folder: &Path) -> String {
    let path = folder.join("last.json");
    let aside = folder.join("last.json.unreadable");
    match std::fs::rename(&path, &aside) {
        Ok(()) => format!("it is kept as {}", aside.display()),
        Err(e) => format!("it cannot be moved aside ({e})"),
    }
}
