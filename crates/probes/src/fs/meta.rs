//! File metadata and the bounded head reader: what the lead monitor may
//! learn about a file without reading its content.
//!
//! The seed allows `test -f`, `stat`, `wc -c`, `ls -l` and a read of the
//! first 5 lines of a handoff file. These are the same questions asked with
//! syscalls instead of forks.

use std::fmt;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::fs::file::{IoCause, ReadError};

/// Why a path's metadata or head could not be read. Absence is no error
/// for [`stat`] ([`FileMeta::Missing`]); for [`read_head`] it is `Open`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetaError {
    /// `stat` failed for a reason other than absence (permission, I/O).
    Stat {
        /// The path asked about.
        path: PathBuf,
        /// What `stat` said.
        error: IoCause,
    },
    /// The file is missing, not a regular file, or cannot be opened.
    Open {
        /// The path asked about.
        path: PathBuf,
        /// Why it could not be opened.
        error: ReadError,
    },
    /// Opened, then reading it failed.
    Read {
        /// The path asked about.
        path: PathBuf,
        /// What the read said.
        error: IoCause,
    },
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::Stat { path, error } => write!(f, "cannot stat {}: {error}", path.display()),
            MetaError::Open { path, error } => {
                write!(f, "cannot open {}: it {error}", path.display())
            }
            MetaError::Read { path, error } => write!(f, "cannot read {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for MetaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MetaError::Open { error, .. } => Some(error),
            MetaError::Stat { error, .. } | MetaError::Read { error, .. } => Some(error.io()),
        }
    }
}

/// What `stat` says about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMeta {
    /// Nothing is there (ENOENT or a missing parent directory).
    Missing,
    /// Something is there, with its size in bytes and mtime in nanoseconds
    /// since the epoch. `regular` is what `test -f` asks: a regular file (a
    /// symlink to one counts, since `stat` follows it); a directory is not.
    Present {
        /// Its size in bytes (`wc -c`).
        size: u64,
        /// Its mtime in nanoseconds since the epoch, so a rewrite is seen.
        mtime_ns: i128,
        /// A regular file (or a symlink to one), what `test -f` asks.
        regular: bool,
    },
}

/// Stats `path` (following symlinks). A missing file or parent is `Missing`;
/// any other failure (permission, I/O) is an error, which is not the same as absence.
pub fn stat(path: &Path) -> Result<FileMeta, MetaError> {
    match std::fs::metadata(path) {
        Ok(md) => Ok(FileMeta::Present {
            size: md.len(),
            mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
            regular: md.is_file(),
        }),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(FileMeta::Missing)
        }
        Err(e) => Err(MetaError::Stat {
            path: path.to_owned(),
            error: e.into(),
        }),
    }
}

/// The most lines [`read_head`] ever returns: the seed's "FIRST 5 lines".
const HEAD_MAX_LINES: usize = 5;

/// Reads at most the first 5 (`HEAD_MAX_LINES`) lines of `path`, and at most
/// `max_bytes` bytes of it, whichever ends first. Never reads past either
/// bound: it reads exactly `max_bytes` at most from the file descriptor.
/// A line cut by the byte bound is returned as far as it was read; invalid
/// UTF-8 is replaced.
pub fn read_head(path: &Path, max_bytes: usize) -> Result<Vec<String>, MetaError> {
    let file = crate::fs::file::open_regular(path).map_err(|error| MetaError::Open {
        path: path.to_owned(),
        error,
    })?;
    let mut buf = Vec::with_capacity(max_bytes.min(4096));
    file.take(max_bytes as u64)
        .read_to_end(&mut buf)
        .map_err(|e| MetaError::Read {
            path: path.to_owned(),
            error: e.into(),
        })?;
    Ok(head_lines(&buf))
}

/// Splits `bytes` into at most [`HEAD_MAX_LINES`] lines without their line endings.
fn head_lines(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == b'\n')
        .take(line_count(bytes))
        .map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            String::from_utf8_lossy(line).into_owned()
        })
        .collect()
}

/// How many lines `bytes` holds, capped at [`HEAD_MAX_LINES`]: a trailing
/// newline ends the last line rather than starting an empty one.
fn line_count(bytes: &[u8]) -> usize {
    if bytes.is_empty() {
        return 0;
    }
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    let count = if bytes.ends_with(b"\n") {
        newlines
    } else {
        newlines + 1
    };
    count.min(HEAD_MAX_LINES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn stat_reports_missing_present_and_missing_parent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.md");
        assert_eq!(stat(&path), Ok(FileMeta::Missing));
        assert_eq!(
            stat(&dir.path().join("no/such/dir/x")),
            Ok(FileMeta::Missing)
        );
        std::fs::write(&path, b"hello").unwrap();
        match stat(&path).unwrap() {
            FileMeta::Present {
                size,
                mtime_ns,
                regular,
            } => {
                assert_eq!(size, 5);
                assert!(mtime_ns > 0);
                assert!(regular);
            }
            FileMeta::Missing => panic!("file written but reported missing"),
        }
        // A regular file used as a directory is ENOTDIR: absent, not an error.
        assert_eq!(stat(&path.join("child")), Ok(FileMeta::Missing));
    }

    #[test]
    fn regular_is_test_f_a_file_or_a_symlink_to_one_never_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let regular = |p: &Path| match stat(p).unwrap() {
            FileMeta::Present { regular, .. } => regular,
            FileMeta::Missing => panic!("{} reported missing", p.display()),
        };
        let sub = dir.path().join("result.md");
        std::fs::create_dir(&sub).unwrap();
        assert!(!regular(&sub), "a directory is not `test -f`");
        let file = dir.path().join("real.md");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(regular(&file));
        assert!(regular(&link), "a symlink to a file is `test -f`");
        let dir_link = dir.path().join("dir-link");
        std::os::unix::fs::symlink(&sub, &dir_link).unwrap();
        assert!(!regular(&dir_link));
    }

    #[test]
    fn head_returns_at_most_five_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("handoff.md");
        let mut f = std::fs::File::create(&path).unwrap();
        for i in 1..=9 {
            writeln!(f, "line {i}").unwrap();
        }
        drop(f);
        let head = read_head(&path, 4096).unwrap();
        assert_eq!(head, ["line 1", "line 2", "line 3", "line 4", "line 5"]);
    }

    #[test]
    fn head_stops_at_the_byte_bound_even_inside_the_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one-long-line");
        std::fs::write(&path, "Type: x".repeat(1000)).unwrap();
        let head = read_head(&path, 10).unwrap();
        assert_eq!(head, ["Type: xTyp"]);
    }

    #[test]
    fn head_of_short_and_empty_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        std::fs::write(&path, "Type: handoff\r\nStatus: done").unwrap();
        assert_eq!(
            read_head(&path, 4096).unwrap(),
            ["Type: handoff", "Status: done"]
        );
        std::fs::write(&path, "").unwrap();
        assert!(read_head(&path, 4096).unwrap().is_empty());
        std::fs::write(&path, "a\n\nb\n").unwrap();
        assert_eq!(read_head(&path, 4096).unwrap(), ["a", "", "b"]);
    }

    #[test]
    fn head_of_a_missing_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.md");
        let err = read_head(&path, 100).unwrap_err();
        assert_eq!(
            err,
            MetaError::Open {
                path: path.clone(),
                error: ReadError::Missing
            }
        );
        assert_eq!(
            err.to_string(),
            format!("cannot open {}: it does not exist", path.display())
        );
    }

    #[test]
    fn a_stat_that_fails_keeps_the_os_error_as_its_source() {
        let dir = tempfile::tempdir().unwrap();
        // A name longer than any file system takes: ENAMETOOLONG, not absence.
        let path = dir.path().join("n".repeat(300));
        let err = stat(&path).unwrap_err();
        let os = std::error::Error::source(&err)
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .expect("the OS's error is the source");
        assert_eq!(
            os.raw_os_error(),
            Some(rustix::io::Errno::NAMETOOLONG.raw_os_error())
        );
        assert_eq!(
            err.to_string(),
            format!("cannot stat {}: {os}", path.display())
        );
    }
}
