//! The user this process runs as, as the system knows them (not as the
//! environment says).

/// The user's home from their passwd entry: where their services keep their
/// state when no `XDG_STATE_HOME` is set, whatever `$HOME` this shell has.
pub fn passwd_home() -> Option<std::path::PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::current()).ok()??;
    Some(user.dir)
}
