//! The session monitor's journal on disk: one [`SessionRecord`] per line,
//! appended as it happens, replayed at start, and compacted when it grows.
//!
//! Nothing here loses memory silently: a record that does not parse, a
//! compaction that fails, each is a [`JournalProblem`] for the caller to
//! say, and the monitor starts with whatever could be read. A journal that
//! is there but cannot be read (out of file descriptors, a FIFO, no
//! permission) is no journal opened at all: starting fresh over it would
//! spend the nudge budget again and re-send every alert.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::findings::{AppendError, FindingsLog};
use crate::session::{SessionMemory, SessionRecord, parse_records, record_line};

/// A journal larger than this is not ours (a few records a poll at most).
pub const MAX_BYTES: u64 = 256 << 20;

/// A journal longer than this is rewritten, at start, as the few records
/// that replay to the same memory, so replay stays bounded however long a
/// target is watched.
pub const COMPACT_AFTER_RECORDS: usize = 1000;

/// One target's journal.
#[derive(Debug, Clone)]
pub struct Journal {
    log: FindingsLog,
}

/// What opening a journal found.
#[derive(Debug)]
pub struct Opened {
    /// The journal, ready for the records of this run.
    pub journal: Journal,
    /// The memory its records replay to (empty for a new target).
    pub memory: SessionMemory,
    /// Everything that was skipped or could not be done, in order.
    pub problems: Vec<JournalProblem>,
}

/// Something about a journal the operator should hear of.
#[derive(Debug)]
#[non_exhaustive]
pub enum JournalProblem {
    /// The file is there (or may be) but could not be read: no memory is
    /// made up in its place ([`Journal::open`] gives none).
    Unreadable {
        /// The journal's file.
        path: PathBuf,
        /// What the read ran into.
        why: probes::fs::file::ReadError,
    },
    /// One line is not a record (a torn last write, a hand edit): skipped.
    BadRecord {
        /// The journal's file.
        path: PathBuf,
        /// Why the line is not a record.
        error: String,
    },
    /// The long journal could not be rewritten: it is replayed whole next time.
    NotCompacted {
        /// The journal's file.
        path: PathBuf,
        /// What the rewrite ran into.
        why: std::io::Error,
    },
}

impl fmt::Display for JournalProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalProblem::Unreadable { path, why } => write!(
                f,
                "cannot read saved state {}: it {why}; not watched until it can be read \
                 (starting without it would spend the nudges again and re-send the alerts)",
                path.display()
            ),
            JournalProblem::BadRecord { path, error } => {
                write!(f, "{}: {error}; that record is skipped", path.display())
            }
            JournalProblem::NotCompacted { path, why } => write!(
                f,
                "cannot compact {}: {why}; it is replayed whole",
                path.display()
            ),
        }
    }
}

impl Journal {
    /// Reads the journal at `path` (none yet is a fresh memory), replays it,
    /// and compacts it when it is longer than [`COMPACT_AFTER_RECORDS`].
    /// One that exists but cannot be read is [`JournalProblem::Unreadable`],
    /// never an empty memory.
    pub fn open(path: impl Into<PathBuf>) -> Result<Opened, JournalProblem> {
        let path = path.into();
        let mut problems = Vec::new();
        let memory = match probes::fs::file::read_regular_text(&path, MAX_BYTES) {
            Ok(text) => {
                let (records, errors) = parse_records(&text);
                problems.extend(errors.into_iter().map(|error| JournalProblem::BadRecord {
                    path: path.clone(),
                    error,
                }));
                let memory = SessionMemory::replay(&records);
                if records.len() > COMPACT_AFTER_RECORDS
                    && let Err(why) = compact(&path, &memory)
                {
                    problems.push(JournalProblem::NotCompacted {
                        path: path.clone(),
                        why,
                    });
                }
                memory
            }
            Err(probes::fs::file::ReadError::Missing) => SessionMemory::default(),
            Err(why) => return Err(JournalProblem::Unreadable { path, why }),
        };
        Ok(Opened {
            journal: Journal {
                log: FindingsLog::new(path),
            },
            memory,
            problems,
        })
    }

    /// Appends one record as one line, in one write.
    pub fn append(&self, record: &SessionRecord) -> Result<(), AppendError> {
        self.log.append(&record_line(record))
    }

    /// The journal's file, for messages.
    pub fn path(&self) -> &Path {
        self.log.path()
    }
}

/// Replaces the journal with `memory`'s compacted records: written beside it
/// and renamed over it, so a crash leaves one or the other, whole.
fn compact(path: &Path, memory: &SessionMemory) -> std::io::Result<()> {
    let mut text = String::new();
    for record in memory.compacted() {
        text.push_str(&record_line(&record));
        text.push('\n');
    }
    let fresh = path.with_extension("jsonl.compact");
    let written = std::fs::File::create(&fresh)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            // On disk before it replaces the journal, or a power cut could
            // leave an empty one.
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&fresh, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&fresh);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::EscalationKind;

    fn lines(path: &Path) -> usize {
        std::fs::read_to_string(path).unwrap().lines().count()
    }

    #[test]
    fn a_new_target_starts_fresh_and_its_records_replay_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let opened = Journal::open(&path).unwrap();
        assert!(opened.problems.is_empty(), "{:?}", opened.problems);
        assert_eq!(opened.memory, SessionMemory::default());
        opened
            .journal
            .append(&SessionRecord::Nudged { used: 2 })
            .unwrap();
        assert_eq!(Journal::open(&path).unwrap().memory.nudges_used, 2);
    }

    #[test]
    fn a_bad_line_is_skipped_and_named_and_the_rest_still_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let good = record_line(&SessionRecord::Nudged { used: 3 });
        std::fs::write(&path, format!("{{\"record\":\"nudged\"\n{good}\n")).unwrap();
        let opened = Journal::open(&path).unwrap();
        assert_eq!(opened.memory.nudges_used, 3);
        assert_eq!(opened.problems.len(), 1);
        let said = opened.problems[0].to_string();
        assert!(
            said.contains("line 1") && said.ends_with("that record is skipped"),
            "{said}"
        );
    }

    #[test]
    fn a_fifo_at_the_journal_is_named_and_no_fresh_memory_is_made_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let made = probes::run::run(
            &probes::run::Invocation::new("mkfifo").arg(&path),
            &probes::run::Limits::with_timeout(std::time::Duration::from_secs(10)),
        );
        assert!(
            made.success_stdout().is_some(),
            "mkfifo {}",
            made.describe()
        );
        let problem = Journal::open(&path).expect_err("a FIFO is no journal");
        assert!(
            matches!(problem, JournalProblem::Unreadable { .. }),
            "{problem:?}"
        );
        let said = problem.to_string();
        assert!(
            said.contains(&path.display().to_string()) && said.contains("not watched until"),
            "{said}"
        );
    }

    #[test]
    fn a_journal_unreadable_for_lack_of_descriptors_is_an_error_not_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        Journal::open(&path)
            .unwrap()
            .journal
            .append(&SessionRecord::Nudged { used: 4 })
            .unwrap();
        // A child under a low open-file limit, which it spends before it
        // opens the journal: its open(2) fails with EMFILE.
        let ran = probes::run::run(
            &probes::run::Invocation::new("prlimit")
                .arg("--nofile=64:64")
                .arg(std::env::current_exe().unwrap())
                .arg("--exact")
                .arg("journal::tests::open_in_child")
                .arg("--nocapture")
                .env("BMB_JOURNAL_CHILD", path.to_str().unwrap()),
            &probes::run::Limits::with_timeout(std::time::Duration::from_secs(60)),
        );
        let said = ran
            .success_stdout()
            .map(|o| o.text())
            .unwrap_or_else(|| panic!("{}", ran.describe()));
        assert!(
            said.contains("CHILD: cannot read saved state") && said.contains("open files"),
            "{said}"
        );
        assert_eq!(Journal::open(&path).unwrap().memory.nudges_used, 4);
    }

    /// Run by the test above, in a child under a spent open-file limit.
    #[test]
    fn open_in_child() {
        if let Some(path) = std::env::var_os("BMB_JOURNAL_CHILD") {
            let mut spent = Vec::new();
            while let Ok(file) = std::fs::File::open("/dev/null") {
                spent.push(file);
                assert!(spent.len() < 100, "the open-file limit was not applied");
            }
            match Journal::open(PathBuf::from(path)) {
                Ok(opened) => println!("CHILD: opened, {} nudges", opened.memory.nudges_used),
                Err(problem) => println!("CHILD: {problem}"),
            }
        }
    }

    #[test]
    fn a_long_journal_is_compacted_to_the_records_that_replay_to_the_same_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let journal = Journal::open(&path).unwrap().journal;
        for used in 0..=COMPACT_AFTER_RECORDS as u32 {
            journal.append(&SessionRecord::Nudged { used }).unwrap();
        }
        journal
            .append(&SessionRecord::Escalated {
                kind: EscalationKind::Blocked,
                key: "k".to_string(),
            })
            .unwrap();
        let before = Journal::open(&path).unwrap();
        assert!(before.problems.is_empty(), "{:?}", before.problems);
        assert_eq!(lines(&path), 2, "compacted to one Nudged and one Escalated");
        let after = Journal::open(&path).unwrap();
        assert_eq!(after.memory, before.memory);
        assert_eq!(after.memory.nudges_used, COMPACT_AFTER_RECORDS as u32);
    }

    #[test]
    fn a_journal_that_cannot_be_rewritten_is_kept_whole_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let journal = Journal::open(&path).unwrap().journal;
        for used in 0..=COMPACT_AFTER_RECORDS as u32 {
            journal.append(&SessionRecord::Nudged { used }).unwrap();
        }
        // The compaction's temporary file cannot be created: a folder is in its way.
        std::fs::create_dir(path.with_extension("jsonl.compact")).unwrap();
        let opened = Journal::open(&path).unwrap();
        assert!(matches!(
            opened.problems.as_slice(),
            [JournalProblem::NotCompacted { .. }]
        ));
        assert_eq!(lines(&path), COMPACT_AFTER_RECORDS + 1, "nothing lost");
    }
}
