//! Session-monitor coordinates: `session` or `host:session`, validated up
//! front, and the name of the detached monitor session that watches one.
//!
//! A multiplexer silently REWRITES some names (`:` and `.` become `_`), and a
//! shell interprets others, so such a name is refused with its reason instead
//! of watching something else (seed, "Coordinates and substrate").

use std::fmt;

/// A watched session: on this machine, or on an ssh alias.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    /// The ssh alias; `None`: this machine's tmux.
    pub host: Option<String>,
    /// The tmux session name.
    pub session: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host}:{}", self.session),
            None => f.write_str(&self.session),
        }
    }
}

/// Why a target was refused: which part, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetError {
    /// The ssh alias before `:`.
    Host {
        /// The target as given, control characters shown as `?`.
        target: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
    /// The session name.
    Session {
        /// The target as given, control characters shown as `?`.
        target: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
}

/// What is wrong with a host alias or a session name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameProblem {
    /// Nothing was given.
    Empty,
    /// A leading `-` would be read as an option or a flag.
    LeadingDash,
    /// A character a multiplexer would rewrite or a shell would interpret
    /// (a session), or that no ssh alias holds (a host).
    Holds(char),
    /// Longer than [`NAME_MAX_BYTES`]: a capture names its session twice in
    /// one tmux command, which tmux caps at 16 KiB.
    TooLong(usize),
}

/// The longest session name or host alias taken, in bytes (tmux itself
/// takes session names of any length, but not a command holding one of
/// 8,000 bytes twice).
pub const NAME_MAX_BYTES: usize = 1024;

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Host { target, problem } => {
                write!(f, "target `{}`: host alias ", shown(target))?;
                match problem {
                    NameProblem::Empty => f.write_str("is empty"),
                    NameProblem::LeadingDash => {
                        f.write_str("starts with `-`, which ssh would read as an option")
                    }
                    NameProblem::Holds(c) => write!(
                        f,
                        "holds {}, which is not an ssh alias (allowed: letters, digits, _ - .)",
                        describe(*c)
                    ),
                    NameProblem::TooLong(bytes) => too_long(f, *bytes),
                }
            }
            TargetError::Session { target, problem } => {
                write!(f, "target `{}`: session name ", shown(target))?;
                match problem {
                    NameProblem::Empty => f.write_str("is empty"),
                    NameProblem::LeadingDash => {
                        f.write_str("starts with `-`, which a command would read as a flag")
                    }
                    NameProblem::Holds(c) => write!(
                        f,
                        "holds {}, which tmux would rewrite or a shell would interpret (allowed: letters, digits, _ - + @ % ,)",
                        describe(*c)
                    ),
                    NameProblem::TooLong(bytes) => too_long(f, *bytes),
                }
            }
        }
    }
}

/// A target as an error shows it: its first 60 characters and `…` when longer.
fn shown(target: &str) -> std::borrow::Cow<'_, str> {
    match target.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &target[..at]).into(),
        None => target.into(),
    }
}

fn too_long(f: &mut fmt::Formatter<'_>, bytes: usize) -> fmt::Result {
    write!(
        f,
        "is {bytes} bytes long, more than the {NAME_MAX_BYTES} a capture's tmux command holds twice"
    )
}

impl std::error::Error for TargetError {}

/// A file key longer than this is cut and hashed (a file name holds 255 bytes).
const FILE_KEY_MAX_BYTES: usize = 200;
/// How much of a long target a cut file key keeps, for a reader of the folder.
const FILE_KEY_KEPT_BYTES: usize = 100;

impl Target {
    /// Parses `session` or `host:session`; the error says which part is wrong and why.
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        let (host, session) = match text.split_once(':') {
            Some((host, session)) => (Some(host), session),
            None => (None, text),
        };
        if let Some(host) = host {
            check_host(host).map_err(|problem| TargetError::Host {
                target: printable(text),
                problem,
            })?;
        }
        check_session(session).map_err(|problem| TargetError::Session {
            target: printable(text),
            problem,
        })?;
        Ok(Target {
            host: host.map(str::to_string),
            session: session.to_string(),
        })
    }

    /// The name of the target's journal and lock files: the target with `:`
    /// as `~`, or, for a name too long for a file name (255 bytes with the
    /// extension), its first 100 bytes and a hash of the whole, so every
    /// target tmux accepts gets files that can be created.
    pub fn file_key(&self) -> String {
        let key = self.to_string().replace(':', "~");
        if key.len() <= FILE_KEY_MAX_BYTES {
            return key;
        }
        let mut cut = FILE_KEY_KEPT_BYTES;
        while !key.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}-{}", &key[..cut], crate::session::fingerprint(&key))
    }

    /// The detached monitor's session name: `monitor-<session>` or
    /// `monitor-<host>-<session>` where that decodes unambiguously (no `-` in
    /// the parts), else the injective fallback `monitor_x<hex of the target>`.
    pub fn monitor_session(&self) -> String {
        let plain_ok = !self.session.contains('-')
            && self.host.as_deref().is_none_or(|h| !h.contains(['-', '.']));
        if plain_ok {
            match &self.host {
                Some(host) => format!("monitor-{host}-{}", self.session),
                None => format!("monitor-{}", self.session),
            }
        } else {
            let hex: String = self
                .to_string()
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("monitor_x{hex}")
        }
    }

    /// The target a monitor session name stands for, if it is one of ours.
    pub fn from_monitor_session(name: &str) -> Option<Target> {
        if let Some(hex) = name.strip_prefix("monitor_x") {
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                })
                .collect();
            return Target::parse(&String::from_utf8(bytes?).ok()?).ok();
        }
        let rest = name.strip_prefix("monitor-")?;
        match rest.split_once('-') {
            Some((host, session)) => Target::parse(&format!("{host}:{session}")).ok(),
            None => Target::parse(rest).ok(),
        }
    }
}

/// tmux rewrites `:` and `.`; a shell reads spaces, quotes, `$`, `;` and friends.
fn check_session(session: &str) -> Result<(), NameProblem> {
    check_name(session, |c| {
        c.is_ascii_alphanumeric() || "_-+@%,".contains(c)
    })
}

/// An ssh alias: what `Host` lines hold, never an option or a shell word.
fn check_host(host: &str) -> Result<(), NameProblem> {
    check_name(host, |c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

fn check_name(name: &str, allowed: impl Fn(char) -> bool) -> Result<(), NameProblem> {
    if name.is_empty() {
        return Err(NameProblem::Empty);
    }
    if name.starts_with('-') {
        return Err(NameProblem::LeadingDash);
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(NameProblem::TooLong(name.len()));
    }
    match name.chars().find(|&c| !allowed(c)) {
        Some(bad) => Err(NameProblem::Holds(bad)),
        None => Ok(()),
    }
}

fn describe(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("{:?}", c)
    } else {
        format!("`{c}`")
    }
}

fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{NAME_MAX_BYTES, NameProblem, Target, TargetError};

    #[test]
    fn file_keys_are_the_target_or_a_cut_hashed_form_that_fits_a_file_name() {
        let key = |text: &str| Target::parse(text).unwrap().file_key();
        assert_eq!(key("build"), "build");
        assert_eq!(key("box-1.lan:build_2"), "box-1.lan~build_2");
        let long = "s".repeat(300);
        let cut = key(&long);
        assert!(cut.len() + ".jsonl.compact".len() <= 255, "{}", cut.len());
        assert!(cut.starts_with(&"s".repeat(100)) && !cut.starts_with(&"s".repeat(101)));
        assert_ne!(cut, key(&format!("{long}x")), "two long targets, two keys");
        assert_eq!(cut, key(&long), "stable");
    }

    #[test]
    fn local_and_remote_targets_parse() {
        assert_eq!(
            Target::parse("build").unwrap(),
            Target {
                host: None,
                session: "build".into()
            }
        );
        assert_eq!(
            Target::parse("box-1.lan:build_2").unwrap(),
            Target {
                host: Some("box-1.lan".into()),
                session: "build_2".into()
            }
        );
    }

    #[test]
    fn names_a_multiplexer_would_rewrite_or_a_shell_would_read_are_refused() {
        for (bad, why) in [
            ("", "session name is empty"),
            ("a.b", "`.`"),
            ("h:a:b", "`:`"),
            ("a b", "' '"),
            ("$HOME", "`$`"),
            ("a;rm", "`;`"),
            ("-t", "starts with `-`"),
            ("-oProxyCommand=x:s", "host alias starts with `-`"),
            ("h$x:s", "host alias holds `$`"),
            ("\u{1b}[31m", "'\\u{1b}'"),
            (":s", "host alias is empty"),
        ] {
            let err = Target::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(!err.contains('\u{1b}'), "the error is printable: {err:?}");
        }
        assert_eq!(
            Target::parse("a.b"),
            Err(TargetError::Session {
                target: "a.b".into(),
                problem: NameProblem::Holds('.')
            })
        );
        assert_eq!(
            Target::parse("h$x:s").unwrap_err().to_string(),
            "target `h$x:s`: host alias holds `$`, which is not an ssh alias (allowed: letters, digits, _ - .)"
        );
        // A name tmux takes but a capture's command cannot hold twice
        // (found by review: 8,200 bytes failed every poll with "command
        // too long"), said in one short line.
        let long = "y".repeat(8200);
        assert_eq!(
            Target::parse(&long).unwrap_err().to_string(),
            format!(
                "target `{}…`: session name is 8200 bytes long, more than the 1024 a capture's tmux command holds twice",
                "y".repeat(60)
            )
        );
        assert!(Target::parse(&"y".repeat(NAME_MAX_BYTES)).is_ok());
        assert!(Target::parse(&format!("{}:s", "h".repeat(NAME_MAX_BYTES + 1))).is_err());
    }

    #[test]
    fn monitor_session_names_are_injective() {
        let targets = [
            "a", "a-b", "x:a", "x:a-b", "x-y:a", "x.y:a", "a-b-c", "monitor", "b",
        ];
        let names: Vec<String> = targets
            .iter()
            .map(|t| Target::parse(t).unwrap().monitor_session())
            .collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(names[0], "monitor-a");
        assert_eq!(names[2], "monitor-x-a");
        for (target, name) in targets.iter().zip(&names) {
            assert_eq!(
                Target::from_monitor_session(name).unwrap().to_string(),
                *target,
                "{name}"
            );
        }
        assert_eq!(Target::from_monitor_session("work"), None);
    }
}
