//! Reading a file that someone else controls: a session file, a journal, a
//! pid file, an inbox message, a profile. Opened so that a FIFO or a device
//! cannot block the read (`O_NONBLOCK`, then refused unless it is a regular
//! file), and capped in size, so a 2 GB file costs the cap and an error,
//! never the memory. What is wrong is named, never read as a value.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::OFlags;

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// There is nothing at the path (often "not yet").
    Missing,
    /// Something that is not a regular file: a FIFO, a device, a directory, a socket.
    NotAFile(&'static str),
    /// Larger than the cap: not what this file should hold.
    TooLarge {
        /// The cap it passed, in bytes.
        cap: u64,
    },
    /// Any other I/O error (permissions, …), kept as the
    /// [`source`](std::error::Error::source).
    Io(IoCause),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing => f.write_str("does not exist"),
            ReadError::NotAFile(kind) => write!(f, "is a {kind}, not a regular file"),
            ReadError::TooLarge { cap } => write!(f, "is larger than {cap} bytes"),
            ReadError::Io(error) => write!(f, "cannot be read ({error})"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(error) => Some(error.io()),
            ReadError::Missing | ReadError::NotAFile(_) | ReadError::TooLarge { .. } => None,
        }
    }
}

/// The OS's error behind a failed read, shared so the errors that hold it
/// stay `Clone` and comparable: two are equal when they are of the same
/// kind and say the same thing.
#[derive(Debug, Clone)]
pub struct IoCause(Arc<std::io::Error>);

impl IoCause {
    /// The OS's error itself (its kind, its errno).
    pub fn io(&self) -> &std::io::Error {
        &self.0
    }
}

impl From<std::io::Error> for IoCause {
    fn from(error: std::io::Error) -> IoCause {
        IoCause(Arc::new(error))
    }
}

impl PartialEq for IoCause {
    fn eq(&self, other: &IoCause) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for IoCause {}

impl fmt::Display for IoCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The regular file at `path`, opened for reading without blocking on a FIFO
/// or a device (which are refused).
pub(crate) fn open_regular(path: &Path) -> Result<File, ReadError> {
    let file = OpenOptions::new()
        .read(true)
        // A FIFO with no writer would block open(2) itself; a terminal must
        // not become our controlling one.
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|error| match error.kind() {
            ErrorKind::NotFound => ReadError::Missing,
            _ => ReadError::Io(error.into()),
        })?;
    check_regular(&file)?;
    Ok(file)
}

/// The bytes of the regular file at `path`, at most `cap` of them; a larger
/// file, a FIFO, a device or a directory is an error.
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    // One byte past the cap tells a file that grew since fstat.
    (&file)
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| ReadError::Io(error.into()))?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { cap });
    }
    Ok(bytes)
}

/// As [`read_regular`], decoded as UTF-8 with invalid bytes replaced.
pub fn read_regular_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    read_regular(path, cap).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

fn check_regular(file: &File) -> Result<(), ReadError> {
    use std::os::unix::fs::FileTypeExt;
    let meta = file
        .metadata()
        .map_err(|error| ReadError::Io(error.into()))?;
    let kind = meta.file_type();
    let odd = if kind.is_file() {
        None
    } else if kind.is_fifo() {
        Some("FIFO")
    } else if kind.is_dir() {
        Some("directory")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("device")
    } else if kind.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    };
    if let Some(kind) = odd {
        return Err(ReadError::NotAFile(kind));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error reads after "it" ("…: it cannot be read (…)"), as the
    /// callers put it.
    #[test]
    fn an_io_error_reads_as_a_sentence_naming_the_os_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        std::fs::write(&file, "1\n").unwrap();
        let error = read_regular_text(&file.join("under-a-file"), 64).unwrap_err();
        assert!(matches!(error, ReadError::Io(_)), "{error:?}");
        let os = std::error::Error::source(&error)
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .expect("the OS's error is the source");
        assert_eq!(os.kind(), ErrorKind::NotADirectory, "{os}");
        let shown = format!("it {error}");
        assert!(
            shown.starts_with("it cannot be read (") && shown.contains("Not a directory"),
            "{shown}"
        );
    }

    #[test]
    fn a_regular_file_is_read_whole_up_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pid");
        std::fs::write(&path, "4242\n").unwrap();
        assert_eq!(read_regular_text(&path, 64).unwrap(), "4242\n");
        assert_eq!(read_regular(&path, 5).unwrap().len(), 5);
        assert_eq!(read_regular(&path, 4), Err(ReadError::TooLarge { cap: 4 }));
        assert_eq!(
            read_regular(&dir.path().join("none"), 9),
            Err(ReadError::Missing)
        );
    }

    #[test]
    fn a_fifo_a_device_and_a_directory_are_named_and_never_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("session.json");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        // No writer: a plain open(2) would block here for ever.
        assert_eq!(read_regular(&fifo, 64), Err(ReadError::NotAFile("FIFO")));
        assert_eq!(
            read_regular(Path::new("/dev/zero"), 64),
            Err(ReadError::NotAFile("device"))
        );
        assert_eq!(
            read_regular(dir.path(), 64),
            Err(ReadError::NotAFile("directory"))
        );
        let message = ReadError::NotAFile("FIFO").to_string();
        assert_eq!(message, "is a FIFO, not a regular file");
    }

    #[test]
    fn a_sparse_file_of_two_gigabytes_costs_the_cap_not_the_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.pid");
        let file = File::create(&path).unwrap();
        file.set_len(2 << 30).unwrap();
        assert_eq!(
            read_regular(&path, 64),
            Err(ReadError::TooLarge { cap: 64 })
        );
    }
}
