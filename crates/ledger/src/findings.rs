//! A findings log: one JSON line per finding, appended, never rewritten.
//!
//! Crash-safe by construction: the file is opened with `O_APPEND` and each
//! line goes out in ONE `write`, so a monitor killed mid-publish leaves
//! either the whole line or none of it, and two writers never interleave
//! inside a line. The file is reopened for every line: findings are rare,
//! and a log that was moved or deleted is recreated rather than written into
//! the void.
//!
//! A log that cannot be written is reported to the caller, which says so and
//! carries on: an unwritable file must never stop the monitor (the stdout
//! copy of the finding still goes out).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a finding was not appended. Each names the file; the OS's error is
/// kept as the [`source`](std::error::Error::source).
#[derive(Debug)]
#[non_exhaustive]
pub enum AppendError {
    /// The line holds a newline, which would split it into two records.
    NewlineInside {
        /// The log it was meant for.
        path: PathBuf,
    },
    /// The file cannot be opened (or created) for appending.
    Open {
        /// The log that would not open.
        path: PathBuf,
        /// The OS's reason.
        error: std::io::Error,
    },
    /// The write failed (a full disk, an I/O error).
    Write {
        /// The log the write was for.
        path: PathBuf,
        /// The OS's reason.
        error: std::io::Error,
    },
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppendError::NewlineInside { path } => write!(
                f,
                "refusing to append a line with a newline inside it to {}",
                path.display()
            ),
            AppendError::Open { path, error } => {
                write!(f, "cannot open {} for appending: {error}", path.display())
            }
            AppendError::Write { path, error } => {
                write!(f, "cannot append to {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for AppendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AppendError::Open { error, .. } | AppendError::Write { error, .. } => Some(error),
            AppendError::NewlineInside { .. } => None,
        }
    }
}

/// An append-only file of one-line findings (the worker's `gone`/`idle`/`clear`, a journal's
/// records): each line goes out in one write, so readers never see half of one.
#[derive(Debug, Clone)]
pub struct FindingsLog {
    path: PathBuf,
}

impl FindingsLog {
    /// The log at `path`; nothing is opened until the first append.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FindingsLog { path: path.into() }
    }

    /// The file it appends to, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append `line` and a newline. `Err` names the file.
    pub fn append(&self, line: &str) -> Result<(), AppendError> {
        if line.contains('\n') {
            return Err(AppendError::NewlineInside {
                path: self.path.clone(),
            });
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|error| AppendError::Open {
                path: self.path.clone(),
                error,
            })?;
        let mut record = Vec::with_capacity(line.len() + 2);
        // A line torn by a crash must not swallow the next record: start on a
        // line of our own.
        if ends_torn(&file) {
            record.push(b'\n');
        }
        record.extend_from_slice(line.as_bytes());
        record.push(b'\n');
        // One buffer, one write(2): O_APPEND makes it land whole at the end.
        file.write_all(&record).map_err(|error| AppendError::Write {
            path: self.path.clone(),
            error,
        })
    }
}

/// Whether a non-empty file's last byte is not a newline.
fn ends_torn(file: &std::fs::File) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return false;
    };
    let mut last = [0u8];
    len > 0 && file.read_at(&mut last, len - 1).is_ok() && last[0] != b'\n'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_torn_by_a_crash_does_not_swallow_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let log = FindingsLog::new(dir.path().join("log.jsonl"));
        log.append(r#"{"a":1}"#).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .unwrap()
            .write_all(br#"{"rec"#)
            .unwrap();
        log.append(r#"{"b":2}"#).unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"rec\n{\"b\":2}\n");
    }

    #[test]
    fn appends_lines_in_order_and_keeps_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".plot-worker.monitor.worker.jsonl");
        std::fs::write(&path, "{\"old\":1}\n").unwrap();
        let log = FindingsLog::new(&path);
        log.append("{\"a\":1}").unwrap();
        log.append("{\"b\":2}").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"old\":1}\n{\"a\":1}\n{\"b\":2}\n"
        );
    }

    #[test]
    fn a_deleted_log_is_recreated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let log = FindingsLog::new(&path);
        log.append("1").unwrap();
        std::fs::remove_file(&path).unwrap();
        log.append("2").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "2\n");
    }

    #[test]
    fn an_unwritable_log_is_an_error_naming_the_file_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be cannot be opened for append,
        // even by root.
        let path = dir.path().join("is-a-dir");
        std::fs::create_dir(&path).unwrap();
        let err = FindingsLog::new(&path).append("{}").unwrap_err();
        assert!(matches!(err, AppendError::Open { .. }), "{err:?}");
        let os = std::error::Error::source(&err)
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .expect("the OS's error is the source");
        assert_eq!(os.kind(), std::io::ErrorKind::IsADirectory, "{os}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("cannot open {} for appending: ", path.display())),
            "{shown}"
        );
        let missing_parent = dir.path().join("no/such/dir/f.jsonl");
        assert!(FindingsLog::new(missing_parent).append("{}").is_err());
    }

    #[test]
    fn a_line_with_a_newline_is_refused_rather_than_splitting_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let err = FindingsLog::new(&path).append("a\nb").unwrap_err();
        assert!(
            matches!(&err, AppendError::NewlineInside { path: p } if *p == path),
            "{err:?}"
        );
        assert!(!path.exists());
    }
}
