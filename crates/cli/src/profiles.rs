//! Where profiles come from: the built-ins, the user's profile folder
//! (`$XDG_CONFIG_HOME/bmb-monitor/profiles/*.profile`, else
//! `~/.config/bmb-monitor/profiles/`), and files named on the command line.

use crate::output::say;
use camino::{Utf8Path, Utf8PathBuf};
use classify::{Profile, Profiles};

/// Loads every profile. A malformed file in the user's folder is reported on
/// stderr and skipped, so the built-ins stay in force; a malformed file named
/// on the command line is an error the caller turns into exit 2.
pub(crate) fn load(explicit: &[Utf8PathBuf]) -> Result<Profiles, String> {
    let (mut extra, errors) = user_dir_profiles(user_profile_dir().as_deref());
    for message in errors {
        say(format_args!("bmb-monitor: ignoring profile: {message}"));
    }
    for path in explicit {
        extra.push(read(path)?);
    }
    Ok(Profiles::with(extra))
}

/// The profiles in force now (the built-ins and the user's folder), the
/// user's malformed ones left out without a word: the monitor that reads the
/// folder next says them, once.
pub(crate) fn in_force_quietly() -> Profiles {
    let (extra, _) = user_dir_profiles(user_profile_dir().as_deref());
    Profiles::with(extra)
}

/// The user's profile folder as a long-running monitor sees it: read at
/// start and again whenever a file in it is added, removed or changed, so a
/// fixed profile takes effect without a restart. A malformed file is
/// reported once per change, with its line and key, and the rest stay in force.
#[derive(Debug, Default)]
pub(crate) struct UserProfiles {
    /// What the folder looked like when last read: each file's name, size
    /// and modification time.
    seen: Option<Vec<(Utf8PathBuf, u64, Option<std::time::SystemTime>)>>,
    /// The malformed-profile messages said and still true, so each is said once.
    said: std::collections::BTreeSet<String>,
}

impl UserProfiles {
    /// The profiles, when the folder changed since the last call (the first
    /// call always reads it); `None` when nothing changed.
    pub(crate) fn reload_if_changed(&mut self) -> Option<std::sync::Arc<Profiles>> {
        let dir = user_profile_dir();
        let files = dir.as_deref().map(profile_files).unwrap_or_default();
        let now: Vec<_> = files
            .iter()
            .map(|path| {
                let meta = std::fs::metadata(path).ok();
                let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
                let modified = meta.and_then(|m| m.modified().ok());
                (path.clone(), size, modified)
            })
            .collect();
        if self.seen.as_ref() == Some(&now) {
            return None;
        }
        let first = self.seen.is_none();
        self.seen = Some(now);
        let (extra, errors) = read_all(&files);
        // A mistake is said once while it lasts; fixed and made again, it is said again.
        self.said.retain(|message| errors.contains(message));
        for message in errors {
            if self.said.insert(message.clone()) {
                say(format_args!("bmb-monitor: ignoring profile: {message}"));
            }
        }
        if let Some(dir) = &dir
            && !first
        {
            let names: Vec<&str> = extra.iter().map(|p| p.name.as_str()).collect();
            let with = if names.is_empty() {
                "the built-ins only".to_string()
            } else {
                format!("{} and the built-ins", names.join(", "))
            };
            say(format_args!(
                "bmb-monitor: profiles in {dir} changed; reading panes with {with}"
            ));
        }
        Some(std::sync::Arc::new(Profiles::with(extra)))
    }
}

/// The profiles of the user's folder, and why each malformed one was skipped.
fn user_dir_profiles(dir: Option<&Utf8Path>) -> (Vec<Profile>, Vec<String>) {
    read_all(&dir.map(profile_files).unwrap_or_default())
}

/// These profile files read, and why each malformed one was skipped.
fn read_all(files: &[Utf8PathBuf]) -> (Vec<Profile>, Vec<String>) {
    let (mut profiles, mut errors) = (Vec::new(), Vec::new());
    for path in files {
        match read(path) {
            Ok(profile) => profiles.push(profile),
            Err(message) => errors.push(message),
        }
    }
    (profiles, errors)
}

/// A profile is a page of regexes; a larger file, a FIFO or a device is not one.
const PROFILE_MAX_BYTES: u64 = 1 << 20;

fn read(path: &Utf8Path) -> Result<Profile, String> {
    let text = probes::fs::file::read_regular_text(path.as_std_path(), PROFILE_MAX_BYTES)
        .map_err(|err| format!("cannot read profile file {path}: it {err}"))?;
    Profile::parse(path.as_str(), &text).map_err(|err| err.to_string())
}

fn user_profile_dir() -> Option<Utf8PathBuf> {
    let base = match std::env::var("XDG_CONFIG_HOME") {
        // A relative one is invalid (the XDG base directory spec): ignored.
        Ok(dir) if Utf8PathBuf::from(&dir).is_absolute() => Utf8PathBuf::from(dir),
        _ => Utf8PathBuf::from(std::env::var("HOME").ok()?).join(".config"),
    };
    Some(base.join("bmb-monitor").join("profiles"))
}

/// The `*.profile` files of a folder, in name order; none if it does not exist.
fn profile_files(dir: &Utf8Path) -> Vec<Utf8PathBuf> {
    let Ok(entries) = dir.read_dir_utf8() else {
        return Vec::new();
    };
    let mut files: Vec<Utf8PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.into_path())
        .filter(|path| path.extension() == Some("profile"))
        .collect();
    files.sort();
    files
}
