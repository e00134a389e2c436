//! Where a target's memory lives: the state folder and the file names in it.

use watchdog::target::Target;

use super::*;

/// The name of a target's journal and lock files: the target with `:` as
/// `~`, or, for a name too long for a file name (255 bytes with the
/// extension), its first 100 bytes and a hash of the whole, so every target
/// tmux accepts gets files that can be created.
pub(super) fn state_file_key(target: &Target) -> String {
    let key = target.to_string().replace(':', "~");
    if key.len() <= 200 {
        return key;
    }
    let mut cut = 100;
    while !key.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{}", &key[..cut], watchdog::session::fingerprint(&key))
}

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
