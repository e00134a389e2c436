//! A folder of control messages: `*.json` files, each consumed once, in name
//! order.
//!
//! A file is CLAIMED by renaming it into `.claimed/` before it is read: a
//! rename is atomic, so a second monitor (or a second look) cannot read it
//! again, and a writer that renames its file into place is never read half
//! written. A claimed file is deleted once read; one left over by a monitor
//! that died mid-way is handed out first at the next start, so nothing is
//! lost. A file that cannot be read (a FIFO, a folder, one too large) is
//! moved aside to `.rejected/` once, never retried and never lost.

use std::collections::VecDeque;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use crate::fs::file::{ReadError, read_regular_text};

/// The largest message read (a watch item is a few hundred bytes).
pub const MAX_BYTES: u64 = 1 << 20;

/// How many files of one name `.rejected/` keeps before it removes more.
const REJECTED_PER_NAME: usize = 100;

/// The inbox folder.
#[derive(Debug)]
pub struct Inbox {
    dir: PathBuf,
    claimed: PathBuf,
}

/// One message, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The file's name in the inbox.
    pub name: String,
    /// The message as written, parsed by the caller.
    pub text: String,
}

/// Something that went wrong with the inbox; the monitor says it and goes on.
#[derive(Debug)]
#[non_exhaustive]
pub enum InboxProblem {
    /// `.claimed/` cannot be created: claiming will fail too.
    Create {
        /// The `.claimed/` folder.
        dir: PathBuf,
        /// Why it could not be made.
        error: std::io::Error,
    },
    /// The folder cannot be listed (gone, not a folder, no permission).
    List {
        /// The inbox folder.
        dir: PathBuf,
        /// Why it could not be listed.
        error: std::io::Error,
    },
    /// A file could not be renamed into `.claimed/`.
    Claim {
        /// The file's name in the inbox.
        name: String,
        /// Why the rename failed.
        error: std::io::Error,
    },
    /// A claimed file could not be read; `aside` says where it went.
    Rejected {
        /// The file's name in the inbox.
        name: String,
        /// Why it could not be read.
        why: ReadError,
        /// Where the unread file was moved, for a person to look at.
        aside: String,
    },
}

impl InboxProblem {
    /// What this problem is about, for saying it once while it lasts; `None`
    /// for a problem that is news every time (a rejected file is said once
    /// because it is moved aside).
    pub fn key(&self) -> Option<String> {
        match self {
            InboxProblem::Create { .. } => Some("inbox create".to_string()),
            InboxProblem::List { .. } => Some("inbox".to_string()),
            InboxProblem::Claim { name, .. } => Some(format!("inbox {name}")),
            InboxProblem::Rejected { .. } => None,
        }
    }
}

impl fmt::Display for InboxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InboxProblem::Create { dir, error } | InboxProblem::List { dir, error } => {
                write!(f, "inbox {}: {error}", dir.display())
            }
            InboxProblem::Claim { name, error } => {
                write!(f, "inbox file {name}: cannot claim: {error}")
            }
            InboxProblem::Rejected { name, why, aside } => {
                write!(f, "inbox file {name}: it {why}; {aside}")
            }
        }
    }
}

impl Inbox {
    /// The inbox at `dir`, with its `.claimed/` folder made (or why not).
    pub fn new(dir: PathBuf) -> (Inbox, Option<InboxProblem>) {
        let claimed = dir.join(".claimed");
        let problem = fs::create_dir_all(&claimed)
            .err()
            .map(|error| InboxProblem::Create {
                dir: claimed.clone(),
                error,
            });
        (Inbox { dir, claimed }, problem)
    }

    /// One look at the inbox: the leftovers of a monitor that died mid-way
    /// first, then every waiting file, each claimed only when it is reached.
    /// Dropping the pass leaves the files not reached for a later one.
    pub fn pass(&mut self) -> Pass<'_> {
        let mut leftovers = json_files(&self.claimed).unwrap_or_default();
        leftovers.sort();
        Pass {
            inbox: self,
            leftovers: leftovers.into(),
            waiting: None,
            listed: false,
        }
    }

    /// Reads a claimed file and removes it, or moves it aside.
    fn read_claimed(&self, name: String) -> Result<Message, InboxProblem> {
        let path = self.claimed.join(&name);
        // A FIFO named `*.json` hung the monitor for good when it was opened plainly.
        match read_regular_text(&path, MAX_BYTES) {
            Ok(text) => {
                let _ = fs::remove_file(&path);
                Ok(Message { name, text })
            }
            Err(why) => {
                let aside = self.move_aside(&name);
                Err(InboxProblem::Rejected { name, why, aside })
            }
        }
    }

    /// Moves a claimed entry that cannot be read to `.rejected/` (a free
    /// name there), and says where it went.
    fn move_aside(&self, name: &str) -> String {
        let rejected = self.dir.join(".rejected");
        let _ = fs::create_dir_all(&rejected);
        let free = (0..REJECTED_PER_NAME)
            .map(|n| match n {
                0 => rejected.join(name),
                n => rejected.join(format!("{name}.{n}")),
            })
            .find(|path| fs::symlink_metadata(path).is_err());
        let from = self.claimed.join(name);
        match free.map(|to| fs::rename(&from, &to).map(|()| to)) {
            Some(Ok(to)) => format!("moved aside to {}", to.display()),
            Some(Err(e)) => {
                let _ = remove_entry(&from);
                format!("cannot move it aside ({e}); removed")
            }
            None => {
                let _ = remove_entry(&from);
                format!("removed ({REJECTED_PER_NAME} of its name are already aside)")
            }
        }
    }
}

fn remove_entry(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        _ => fs::remove_file(path),
    }
}

/// One look at the inbox, as an iterator of messages and problems.
pub struct Pass<'a> {
    inbox: &'a mut Inbox,
    leftovers: VecDeque<String>,
    /// The inbox's files, listed once the leftovers are done.
    waiting: Option<VecDeque<String>>,
    listed: bool,
}

impl Pass<'_> {
    /// Whether the inbox folder itself could be listed in this pass (its
    /// listing problem, if one was said, is over).
    pub fn listed(&self) -> bool {
        self.listed
    }
}

impl Iterator for Pass<'_> {
    type Item = Result<Message, InboxProblem>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(name) = self.leftovers.pop_front() {
            return Some(self.inbox.read_claimed(name));
        }
        if self.waiting.is_none() {
            match json_files(&self.inbox.dir) {
                Ok(mut names) => {
                    names.sort();
                    self.listed = true;
                    self.waiting = Some(names.into());
                }
                Err(error) => {
                    self.waiting = Some(VecDeque::new());
                    let dir = self.inbox.dir.clone();
                    return Some(Err(InboxProblem::List { dir, error }));
                }
            }
        }
        let waiting = self.waiting.as_mut()?;
        while let Some(name) = waiting.pop_front() {
            let _ = fs::create_dir_all(&self.inbox.claimed);
            match fs::rename(self.inbox.dir.join(&name), self.inbox.claimed.join(&name)) {
                Ok(()) => return Some(self.inbox.read_claimed(name)),
                // Someone else claimed it first: theirs to apply.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Some(Err(InboxProblem::Claim { name, error })),
            }
        }
        None
    }
}

/// The names of the `*.json` entries directly in `dir` (not hidden, not in progress).
fn json_files(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.ends_with(".json") && !name.starts_with('.') {
            names.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inbox() -> (tempfile::TempDir, Inbox) {
        let dir = tempfile::tempdir().unwrap();
        let (inbox, problem) = Inbox::new(dir.path().join("inbox"));
        assert!(problem.is_none(), "{problem:?}");
        (dir, inbox)
    }

    fn names(pass: Pass<'_>) -> Vec<String> {
        pass.map(|item| match item {
            Ok(message) => format!("{}={}", message.name, message.text),
            Err(problem) => format!("!{problem}"),
        })
        .collect()
    }

    #[test]
    fn messages_come_in_name_order_once_and_other_names_are_left_alone() {
        let (_dir, mut inbox) = inbox();
        for (name, text) in [
            ("b.json", "2"),
            ("a.json", "1"),
            ("c.json.tmp", "x"),
            (".d.json", "x"),
        ] {
            fs::write(inbox.dir.join(name), text).unwrap();
        }
        assert_eq!(names(inbox.pass()), ["a.json=1", "b.json=2"]);
        assert_eq!(names(inbox.pass()), Vec::<String>::new(), "each once");
        assert!(inbox.dir.join("c.json.tmp").exists() && inbox.dir.join(".d.json").exists());
        assert!(
            json_files(&inbox.claimed).unwrap().is_empty(),
            "read files are removed"
        );
    }

    #[test]
    fn a_leftover_claim_comes_first_and_files_not_reached_stay_for_later() {
        let (_dir, mut inbox) = inbox();
        fs::write(inbox.claimed.join("z.json"), "left over").unwrap();
        fs::write(inbox.dir.join("a.json"), "1").unwrap();
        fs::write(inbox.dir.join("b.json"), "2").unwrap();
        let mut pass = inbox.pass();
        assert_eq!(pass.next().unwrap().unwrap().name, "z.json");
        assert_eq!(pass.next().unwrap().unwrap().name, "a.json");
        assert!(pass.listed());
        drop(pass);
        assert!(
            inbox.dir.join("b.json").exists(),
            "not reached: not claimed"
        );
        assert_eq!(names(inbox.pass()), ["b.json=2"]);
    }

    #[test]
    fn a_file_claimed_by_someone_else_first_is_skipped() {
        let (_dir, mut inbox) = inbox();
        fs::write(inbox.dir.join("a.json"), "1").unwrap();
        fs::write(inbox.dir.join("b.json"), "2").unwrap();
        let mut pass = inbox.pass();
        assert_eq!(pass.next().unwrap().unwrap().name, "a.json");
        // Another monitor renames b.json away between our listing and our claim.
        fs::remove_file(pass.inbox.dir.join("b.json")).unwrap();
        assert!(pass.next().is_none());
    }

    #[test]
    fn what_cannot_be_read_is_moved_aside_once_and_the_rest_still_come() {
        let (_dir, mut inbox) = inbox();
        fs::create_dir(inbox.dir.join("a.json")).unwrap();
        fs::write(inbox.dir.join("b.json"), "2").unwrap();
        let got = names(inbox.pass());
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].starts_with("!inbox file a.json: it ") && got[0].contains("moved aside to "),
            "{got:?}"
        );
        assert_eq!(got[1], "b.json=2");
        assert!(inbox.dir.join(".rejected/a.json").is_dir());
        assert_eq!(names(inbox.pass()), Vec::<String>::new(), "never retried");
    }

    #[test]
    fn an_inbox_that_cannot_be_listed_is_one_problem_said_once_per_change() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-folder");
        fs::write(&file, "").unwrap();
        let (mut inbox, problem) = Inbox::new(file);
        assert!(matches!(problem, Some(InboxProblem::Create { .. })));
        let mut pass = inbox.pass();
        let problem = pass.next().unwrap().unwrap_err();
        assert_eq!(problem.key().as_deref(), Some("inbox"));
        assert!(pass.next().is_none());
        assert!(!pass.listed());
    }
}
