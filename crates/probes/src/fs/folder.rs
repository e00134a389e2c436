//! Folders only this user can enter: what the monitors keep under the
//! runtime and state folders (journals, locks, boards, audit reports, ssh
//! control sockets). One that is missing is made with mode 0700; one that
//! exists must be a folder (not a symlink) of this user's that nobody else
//! can write to, else it is refused, never tightened: something may already
//! have been put there. One of ours that others could only read or enter
//! (0755, what an earlier version made) is closed to them (0700): nothing
//! can have been planted in it.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::fs::file::IoCause;

/// Why a folder will not do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FolderError {
    /// It exists and is not private: another user's, a symlink, not a
    /// folder, or open to others. The message names it and the fix.
    Refused(String),
    /// It could not be made or read (a read-only disk, no permission).
    Failed(FolderFailure),
}

impl std::fmt::Display for FolderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FolderError::Refused(why) => f.write_str(why),
            FolderError::Failed(why) => why.fmt(f),
        }
    }
}

impl std::error::Error for FolderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FolderError::Refused(_) => None,
            FolderError::Failed(why) => std::error::Error::source(why),
        }
    }
}

/// Which step on a folder the OS refused, the folder it was, and the OS's
/// error, kept as the [`source`](std::error::Error::source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderFailure {
    /// The folder.
    pub path: PathBuf,
    /// What was being done to it.
    pub step: FolderStep,
    /// Why the OS refused.
    pub error: IoCause,
}

/// The steps [`ensure_private`] takes on a folder that can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FolderStep {
    /// Making it (and its missing parents).
    Create,
    /// Reading what it is (`lstat`).
    Read,
    /// Taking away the others' read and enter rights (`chmod`).
    Close,
}

/// The [`FolderError::Failed`] of `step` on `path`.
fn failed(path: &Path, step: FolderStep, error: std::io::Error) -> FolderError {
    FolderError::Failed(FolderFailure {
        path: path.to_path_buf(),
        step,
        error: error.into(),
    })
}

impl std::fmt::Display for FolderFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, error) = (self.path.display(), &self.error);
        match self.step {
            FolderStep::Create => write!(f, "cannot create {path}: {error}"),
            FolderStep::Read => write!(f, "cannot read {path}: {error}"),
            FolderStep::Close => write!(f, "cannot close {path} to other users: {error}"),
        }
    }
}

impl std::error::Error for FolderFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.error.io())
    }
}

/// Makes `dir` a private folder if it is missing (it and each missing
/// parent with mode 0700); refuses one that exists and is not private.
pub fn ensure_private(dir: &Path) -> Result<(), FolderError> {
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    match made {
        // Something is there that is not a folder: said as what it is.
        Err(_) if std::fs::symlink_metadata(dir).is_ok() => check_private(dir),
        Err(e) => Err(failed(dir, FolderStep::Create, e)),
        Ok(()) => check_private(dir),
    }
}

/// [`ensure_private`] for `root` and every folder from it down to `dir`
/// (which is under `root`): `<state>/session/<server>` is private only if
/// `<state>` and `<state>/session` are.
pub fn ensure_private_under(root: &Path, dir: &Path) -> Result<(), FolderError> {
    ensure_private(root)?;
    let Ok(below) = dir.strip_prefix(root) else {
        return ensure_private(dir);
    };
    let mut at = root.to_path_buf();
    for part in below.components() {
        at.push(part);
        ensure_private(&at)?;
    }
    Ok(())
}

/// `lstat(dir)`: a folder, not a symlink, owned by this user, closed to
/// group and others.
pub(crate) fn check_private(dir: &Path) -> Result<(), FolderError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| failed(dir, FolderStep::Read, e))?;
    let shown = dir.display();
    if meta.file_type().is_symlink() {
        return Err(FolderError::Refused(format!(
            "{shown} is a symlink, not a folder of its own; remove it and bmb-monitor makes a private one"
        )));
    }
    if !meta.is_dir() {
        return Err(FolderError::Refused(format!("{shown} is not a folder")));
    }
    let me = rustix::process::getuid().as_raw();
    if meta.uid() != me {
        return Err(FolderError::Refused(format!(
            "{shown} belongs to uid {}, not to this user (uid {me}); remove it or choose another folder",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(FolderError::Refused(format!(
            "{shown} has mode {mode:04o}, open to other users; `chmod -R go= {shown}` once you trust what is in it"
        )));
    }
    if mode & 0o077 != 0 {
        // Others could read it, never write to it: ours, untouched by them.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o7700))
            .map_err(|e| failed(dir, FolderStep::Close, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_missing_folder_is_made_private_and_an_open_or_linked_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("state/bmb-monitor");
        ensure_private(&made).unwrap();
        let mode = std::fs::metadata(&made).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        // Readable by others (an earlier version's 0755): closed to them.
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private(&made).unwrap();
        let mode = std::fs::metadata(&made).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "closed to others");

        // Writable by others: refused, never tightened.
        for open in [0o775, 0o757, 0o777] {
            std::fs::set_permissions(&made, std::fs::Permissions::from_mode(open)).unwrap();
            let refused = ensure_private(&made).unwrap_err();
            assert!(matches!(refused, FolderError::Refused(_)), "{refused:?}");
            assert!(
                refused.to_string().contains(&format!("mode {open:04o}")),
                "{refused}"
            );
            let mode = std::fs::metadata(&made).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, open, "refused, not tightened");
        }

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        let refused = ensure_private(&link).unwrap_err();
        assert!(refused.to_string().contains("symlink"), "{refused}");

        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            ensure_private(&file),
            Err(FolderError::Refused(_))
        ));

        // Another user's folder (only root can make one here).
        let theirs = dir.path().join("theirs");
        ensure_private(&theirs).unwrap();
        if std::os::unix::fs::chown(&theirs, Some(65534), None).is_ok() {
            let refused = ensure_private(&theirs).unwrap_err();
            assert!(
                refused.to_string().contains("belongs to uid 65534"),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_folder_that_cannot_be_made_keeps_the_os_error_as_its_source() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        // A file where a parent folder should be: mkdir(2) says ENOTDIR.
        let below = file.join("below");
        let failed = ensure_private(&below).unwrap_err();
        assert!(matches!(failed, FolderError::Failed(_)), "{failed:?}");
        assert_eq!(
            failed.to_string(),
            format!(
                "cannot create {}: Not a directory (os error 20)",
                below.display()
            )
        );
        let source = std::error::Error::source(&failed).expect("the io error is kept");
        let io = source.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotADirectory);
    }

    #[test]
    fn every_folder_from_the_root_down_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("bmb-monitor");
        let deep = root.join("session/S-1");
        ensure_private_under(&root, &deep).unwrap();
        for at in [&root, &root.join("session"), &deep] {
            let mode = std::fs::metadata(at).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", at.display());
        }
        std::fs::set_permissions(root.join("session"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        let refused = ensure_private_under(&root, &deep).unwrap_err();
        assert!(
            refused.to_string().contains("session has mode 0777"),
            "{refused}"
        );
    }
}
