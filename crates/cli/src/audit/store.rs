//! Where a project's audits are kept: `$XDG_STATE_HOME/bmb-monitor/audits/<project>/`,
//! the last report as JSON (what the next audit compares with) and as markdown.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The most a kept report may hold before it is not ours.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// The folder of `project`'s audits: its name and a hash of its path, so two
/// projects of one name keep apart.
pub(super) fn folder(state_dir: &Path, project: &Path) -> PathBuf {
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
    match probes::file::read_regular_text(&path, MAX_REPORT_BYTES) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(probes::file::ReadError::Missing) => Ok(None),
        Err(e) => Err(format!("{}: it {e}", path.display())),
    }
}

/// Keeps this audit: written beside and renamed into place, so a crash
/// leaves the previous one whole.
pub(super) fn keep(folder: &Path, json: &serde_json::Value, markdown: &str) -> Result<(), String> {
    std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
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
