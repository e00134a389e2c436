//! Where profiles come from: the built-ins, the user's profile folder
//! (`$XDG_CONFIG_HOME/bmb-monitor/profiles/*.profile`, else
//! `~/.config/bmb-monitor/profiles/`), and files named on the command line.

use camino::{Utf8Path, Utf8PathBuf};
use classify::{Profile, Profiles};

/// Loads every profile. A malformed file in the user's folder is reported on
/// stderr and skipped, so the built-ins stay in force; a malformed file named
/// on the command line is an error the caller turns into exit 2.
pub fn load(explicit: &[Utf8PathBuf]) -> Result<Profiles, String> {
    let mut extra = Vec::new();
    if let Some(dir) = user_profile_dir() {
        for path in profile_files(&dir) {
            match read(&path) {
                Ok(profile) => extra.push(profile),
                Err(message) => eprintln!("bmb-monitor: ignoring profile: {message}"),
            }
        }
    }
    for path in explicit {
        extra.push(read(path)?);
    }
    Ok(Profiles::with(extra))
}

fn read(path: &Utf8Path) -> Result<Profile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read profile file {path}: {err}"))?;
    Profile::parse(path.as_str(), &text).map_err(|err| err.to_string())
}

fn user_profile_dir() -> Option<Utf8PathBuf> {
    let base = match std::env::var("XDG_CONFIG_HOME") {
        Ok(dir) if !dir.is_empty() => Utf8PathBuf::from(dir),
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
