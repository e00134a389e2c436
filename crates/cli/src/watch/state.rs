//! Where a target's memory lives: the state folder and the file names in it.

use super::*;

/// `$XDG_STATE_HOME/bmb-monitor`, else `~/.local/state/bmb-monitor`.
pub(super) fn state_dir() -> PathBuf {
    match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("bmb-monitor"),
        None => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
            PathBuf::from(home).join(".local/state/bmb-monitor")
        }
    }
}
