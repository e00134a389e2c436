//! Agent profiles: each CLI's markers as data, never as code paths.
//!
//! A profile is a small text file of `key = value` lines (see
//! `profiles/claude.profile`). Text keys (`name`, `agent`, `versions`) take
//! their value as is; every other key is a regular expression matched against
//! one normalised line, and may repeat: repeated values are alternatives.
//! The rules engine reads regions of the pane and asks the profile which
//! lines are which, so a new CLI is a new file, not a new branch.
//!
//! One key pairs a regex with a text: `stop_note = REGEX => TEXT` (the first
//! ` => ` separates them; the key may repeat, and the first pair whose regex
//! matches wins). It never changes a state: when the verdict is a stop and a
//! line of the live chrome (the rows just above the input box and the status
//! bar under it, or the bottom lines of a pane without a box) matches REGEX,
//! the verdict's `note` is TEXT, for the nudge to add (Codex: a background
//! terminal left running after the turn ended).
//!
//! Write word boundaries as `(?-u:\b)`: a Unicode `\b` makes the regex
//! engine leave its DFA on every non-ASCII line (and panes are full of `─`
//! and `❯`), which measured 15x slower on real captures.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

/// The built-in profiles' sources, in auto-detection preference order.
const BUILTIN_SOURCES: &[(&str, &str)] = &[
    (
        "profiles/claude.profile",
        include_str!("../profiles/claude.profile"),
    ),
    (
        "profiles/opencode.profile",
        include_str!("../profiles/opencode.profile"),
    ),
    (
        "profiles/aider.profile",
        include_str!("../profiles/aider.profile"),
    ),
    (
        "profiles/codex.profile",
        include_str!("../profiles/codex.profile"),
    ),
    (
        "profiles/gemini.profile",
        include_str!("../profiles/gemini.profile"),
    ),
];

/// One agent CLI's markers.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The name a caller chooses it by (`--profile claude`) and a verdict reports.
    pub name: String,
    /// The agent CLI it reads, as people call it (`Claude Code`).
    pub agent: String,
    /// The CLI releases its markers were captured from (the profile's `versions` key).
    pub versions: String,
    /// Added by the user ([`Profiles::with`]): where its detection markers
    /// hit at all, `auto` prefers it to a built-in, so a user's profile for a
    /// new CLI is not outvoted by a built-in's generic markers (a `─` rule).
    pub(crate) user: bool,
    /// Lines near the bottom that identify this CLI (`auto`).
    pub(crate) detect: Option<Regex>,
    /// The input box's top and bottom borders and its first line.
    pub(crate) box_top: Option<Regex>,
    pub(crate) box_bottom: Option<Regex>,
    pub(crate) prompt: Option<Regex>,
    /// The live activity row just above the input box.
    pub(crate) spinner: Option<Regex>,
    /// A footer marker that a turn is rendering.
    pub(crate) busy: Option<Regex>,
    /// Background work still running: not a stop.
    pub(crate) background: Option<Regex>,
    /// The selection hint of a question (both markers on one line).
    pub(crate) question_hint: Option<Regex>,
    pub(crate) dialog_question: Option<Regex>,
    pub(crate) dialog_option: Option<Regex>,
    pub(crate) dialog_cursor: Option<Regex>,
    /// A dialog's first line, when the CLI draws it apart from its options
    /// (Codex: `Would you like to run the following command?` over blank
    /// rows, the command and then the options). Looked for up from the
    /// options past blank and indented lines only, so a transcript line
    /// (column zero) ends the search.
    pub(crate) dialog_start: Option<Regex>,
    /// A line of a dialog drawn as one block (OpenCode's `┃` bar): the dialog
    /// is the run of such lines up from the bottom, and nothing above it.
    pub(crate) dialog_line: Option<Regex>,
    /// A CLI with no input box (Aider): its input line, printed as the last
    /// line whenever it waits for input. When set, the last line decides: this
    /// line is a stop, `inline_question` is a question, anything else is output
    /// of a turn still printing.
    pub(crate) input_line: Option<Regex>,
    /// A CLI whose input box has no rule above it (OpenCode): a line that
    /// only the live box draws (its bottom edge), near the bottom. It does
    /// not decide a state; it tells that a stop's input box is live, so a
    /// nudge has somewhere to go.
    pub(crate) input_edge: Option<Regex>,
    /// A yes/no question asked inline on the last line, where `input_line` would be.
    pub(crate) inline_question: Option<Regex>,
    /// Chrome between the live row and the input box, skipped like blank lines
    /// (Gemini CLI: a `────` rule and the approval-mode line).
    pub(crate) live_skip: Option<Regex>,
    /// A line the CLI leaves under every finished turn (Codex: `Worked for
    /// 3s`). When set, a transcript ending in a reply without one is streaming.
    pub(crate) turn_end: Option<Regex>,
    /// The first line of an agent's reply in the transcript, and the lines
    /// inside one that are tool output or status rather than reply text.
    pub(crate) reply: Option<Regex>,
    /// A column-zero line the CLI itself prints into the transcript that
    /// looks like a reply but is not one (Claude Code 2.1.332's `● Auto mode
    /// lets Claude handle permission prompts …`): passed over when reading
    /// whether the transcript ends in a reply.
    pub(crate) notice: Option<Regex>,
    pub(crate) detail: Option<Regex>,
    pub(crate) task_done: Option<Regex>,
    pub(crate) task_active: Option<Regex>,
    pub(crate) task_open: Option<Regex>,
    /// `stop_note = REGEX => TEXT` pairs, in file order (see the module docs).
    pub(crate) stop_note: Vec<(Regex, String)>,
    /// What the CLI itself shows in an empty input box (Claude Code's
    /// `Resend your message to try again`), matched against the box's text
    /// after the prompt marker: not a draft. Where the capture carries its
    /// ink, faint text is a placeholder whatever it says.
    pub(crate) placeholder: Option<Regex>,
    /// `faint`: the CLI draws its placeholders in faint ink, so where the
    /// capture carries ink, text in ordinary ink is typed even when it reads
    /// as a placeholder. Anything else (or nothing): the text decides.
    pub(crate) placeholder_ink: Option<String>,
    /// A box with no top rule (`input_edge`): a line inside it, the text
    /// after the match typed (OpenCode's `┃` bar).
    pub(crate) box_line: Option<Regex>,
    /// A line of the CLI's own footer that stands at column zero under the
    /// box: not something else drawn over the agent's last frame.
    pub(crate) footer: Option<Regex>,
    /// The CLI's usage-limit lines, each with a `reset` group for when the
    /// limit resets (`1am (Asia/Tbilisi)`, `at 2:51 PM`, `in 2 days 3 hours`).
    /// Kept apart, not joined, since each names its group `reset`.
    pub(crate) usage_limit: Vec<Regex>,
    /// The same patterns as one set: a line none of them matches is no
    /// limit line, tested once (most lines above a box are none).
    pub(crate) usage_limit_any: Option<regex::RegexSet>,
}

/// Why a profile file was refused: the file, the line, the key, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError {
    /// The profile file (or the name it was given as) that holds the fault.
    pub source: String,
    /// The 1-based line of the fault in that file.
    pub line: usize,
    /// The key on that line (`spinner`, …), empty when the line has none.
    pub key: String,
    /// What is wrong with it, as a fragment that reads after the key.
    pub message: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}:{}: {}", self.source, self.line, self.message)
        } else {
            write!(
                f,
                "{}:{}: `{}`: {}",
                self.source, self.line, self.key, self.message
            )
        }
    }
}

impl std::error::Error for ProfileError {}

const TEXT_KEYS: &[&str] = &["name", "agent", "versions", "placeholder_ink"];
/// Keys whose value is `REGEX => TEXT`.
const NOTE_KEYS: &[&str] = &["stop_note"];
const REGEX_KEYS: &[&str] = &[
    "detect",
    "box_top",
    "box_bottom",
    "prompt",
    "spinner",
    "busy",
    "background",
    "question_hint",
    "dialog_question",
    "dialog_option",
    "dialog_cursor",
    "dialog_start",
    "dialog_line",
    "input_line",
    "input_edge",
    "inline_question",
    "live_skip",
    "turn_end",
    "reply",
    "notice",
    "detail",
    "task_done",
    "task_active",
    "task_open",
    "placeholder",
    "footer",
    "box_line",
];
/// Regex keys whose values stay apart (each may name the same group).
const LIST_KEYS: &[&str] = &["usage_limit"];

impl Profile {
    /// Parses a profile file. `source` names it in errors (a path, or `builtin:claude`).
    pub fn parse(source: &str, text: &str) -> Result<Profile, ProfileError> {
        let error = |line: usize, key: &str, message: String| ProfileError {
            source: source.to_string(),
            line,
            key: key.to_string(),
            message,
        };
        let mut texts: Vec<(&str, String)> = Vec::new();
        let mut patterns: Vec<(&'static str, Vec<String>)> =
            REGEX_KEYS.iter().map(|&key| (key, Vec::new())).collect();
        let mut stop_note = Vec::new();
        let mut usage_limit = Vec::new();
        let invalid = |err: regex::Error| {
            let first = err
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .to_string();
            format!("not a valid regex: {first}")
        };
        for (index, raw) in text.lines().enumerate() {
            let number = index + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(error(number, "", "expected `key = value`".to_string()));
            };
            let (key, value) = (key.trim(), value.trim());
            if value.is_empty() {
                return Err(error(number, key, "the value is empty".to_string()));
            }
            if let Some(&text_key) = TEXT_KEYS.iter().find(|&&k| k == key) {
                if texts.iter().any(|(k, _)| *k == text_key) {
                    return Err(error(number, key, "given twice".to_string()));
                }
                texts.push((text_key, value.to_string()));
            } else if NOTE_KEYS.contains(&key) {
                let Some((pattern, note)) = value
                    .split_once(" => ")
                    .map(|(p, n)| (p.trim(), n.trim()))
                    .filter(|(p, n)| !p.is_empty() && !n.is_empty())
                else {
                    return Err(error(number, key, "expected `REGEX => TEXT`".to_string()));
                };
                let regex = Regex::new(pattern).map_err(|err| error(number, key, invalid(err)))?;
                stop_note.push((regex, note.to_string()));
            } else if LIST_KEYS.contains(&key) {
                let regex = Regex::new(value).map_err(|err| error(number, key, invalid(err)))?;
                usage_limit.push(regex);
            } else if let Some((_, values)) = patterns.iter_mut().find(|(k, _)| *k == key) {
                if let Err(err) = Regex::new(value) {
                    return Err(error(number, key, invalid(err)));
                }
                values.push(value.to_string());
            } else {
                let known = [TEXT_KEYS, REGEX_KEYS, NOTE_KEYS, LIST_KEYS]
                    .concat()
                    .join(", ");
                return Err(error(
                    number,
                    key,
                    format!("unknown key (known keys: {known})"),
                ));
            }
        }
        let text_value = |key: &str| {
            texts
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        };
        let Some(name) = text_value("name") else {
            return Err(error(
                0,
                "name",
                "missing: every profile needs a name".to_string(),
            ));
        };
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(error(
                0,
                "name",
                format!("`{name}` is not a plain word ([A-Za-z0-9_-])"),
            ));
        }
        if let Some(ink) = text_value("placeholder_ink").filter(|ink| ink != "faint") {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with("placeholder_ink"))
                .map_or(0, |i| i + 1);
            return Err(error(
                line,
                "placeholder_ink",
                format!(
                    "`{ink}` is not an ink this key knows: give `faint` (the CLI's placeholders are faint), or leave the key out"
                ),
            ));
        }
        let regex = |key: &str| -> Result<Option<Regex>, ProfileError> {
            let values = patterns
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.as_slice());
            let Some(values) = values.filter(|v| !v.is_empty()) else {
                return Ok(None);
            };
            // Each value compiled alone above; their alternation can only fail on size.
            let joined = values
                .iter()
                .map(|v| format!("(?:{v})"))
                .collect::<Vec<_>>()
                .join("|");
            Regex::new(&joined).map(Some).map_err(|err| {
                error(
                    0,
                    key,
                    format!("the alternatives together are too large: {err}"),
                )
            })
        };
        Ok(Profile {
            agent: text_value("agent").unwrap_or_else(|| name.clone()),
            versions: text_value("versions").unwrap_or_else(|| "any".to_string()),
            detect: regex("detect")?,
            box_top: regex("box_top")?,
            box_bottom: regex("box_bottom")?,
            prompt: regex("prompt")?,
            spinner: regex("spinner")?,
            busy: regex("busy")?,
            background: regex("background")?,
            question_hint: regex("question_hint")?,
            dialog_question: regex("dialog_question")?,
            dialog_option: regex("dialog_option")?,
            dialog_cursor: regex("dialog_cursor")?,
            dialog_start: regex("dialog_start")?,
            dialog_line: regex("dialog_line")?,
            input_line: regex("input_line")?,
            input_edge: regex("input_edge")?,
            inline_question: regex("inline_question")?,
            live_skip: regex("live_skip")?,
            turn_end: regex("turn_end")?,
            reply: regex("reply")?,
            notice: regex("notice")?,
            detail: regex("detail")?,
            task_done: regex("task_done")?,
            task_active: regex("task_active")?,
            task_open: regex("task_open")?,
            placeholder: regex("placeholder")?,
            placeholder_ink: text_value("placeholder_ink"),
            box_line: regex("box_line")?,
            footer: regex("footer")?,
            stop_note,
            usage_limit_any: match usage_limit.is_empty() {
                true => None,
                false => regex::RegexSet::new(usage_limit.iter().map(Regex::as_str)).ok(),
            },
            usage_limit,
            name,
            user: false,
        })
    }
}

/// The profiles `auto` chooses among: the built-ins, then any the user added.
#[derive(Debug, Clone)]
pub struct Profiles {
    profiles: Vec<Profile>,
}

impl Profiles {
    /// The profiles compiled into the binary.
    pub fn builtin() -> &'static Profiles {
        static BUILTIN: OnceLock<Profiles> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            let profiles = BUILTIN_SOURCES
                .iter()
                .map(|(source, text)| {
                    Profile::parse(source, text).unwrap_or_else(|err| {
                        // A test parses every built-in, so this cannot ship.
                        panic!("built-in profile is invalid: {err}")
                    })
                })
                .collect();
            Profiles { profiles }
        })
    }

    /// The built-ins plus `extra`; an extra profile with a built-in's name replaces it.
    pub fn with(extra: Vec<Profile>) -> Profiles {
        let mut profiles = Profiles::builtin().profiles.clone();
        for mut profile in extra {
            profile.user = true;
            match profiles.iter_mut().find(|p| p.name == profile.name) {
                Some(existing) => *existing = profile,
                None => profiles.push(profile),
            }
        }
        Profiles { profiles }
    }

    /// The profile a caller named (`--profile NAME`), if one is called that.
    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// Every profile's name, in the order `auto` ranks ties: for messages that list the choices.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|p| p.name.as_str())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.iter()
    }

    pub(crate) fn first(&self) -> &Profile {
        // `builtin()` always holds at least the Claude Code profile, and `with` only adds.
        &self.profiles[0]
    }
}

#[cfg(test)]
mod tests {
    use super::{Profile, Profiles};

    #[test]
    fn every_builtin_profile_parses() {
        let names: Vec<&str> = Profiles::builtin().names().collect();
        assert_eq!(names, ["claude", "opencode", "aider", "codex", "gemini"]);
    }

    #[test]
    fn builtin_profiles_use_ascii_word_boundaries_only() {
        for (source, text) in super::BUILTIN_SOURCES {
            let unicode_boundary = text.replace("(?-u:\\b)", "").contains("\\b");
            assert!(
                !unicode_boundary,
                "{source}: write `(?-u:\\b)` (see the module docs)"
            );
        }
    }

    #[test]
    fn a_malformed_profile_is_refused_with_its_line_and_key() {
        let err = Profile::parse("mine.profile", "name = mine\nspinner = (unclosed\n").unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (2, "spinner"));
        assert!(
            err.to_string()
                .starts_with("mine.profile:2: `spinner`: not a valid regex"),
            "{err}"
        );

        let err = Profile::parse("mine.profile", "name = mine\nspiner = x\n").unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (2, "spiner"));
        assert!(err.message.starts_with("unknown key"));

        let err = Profile::parse("mine.profile", "busy = x\n").unwrap_err();
        assert_eq!(err.key, "name");

        let err = Profile::parse("mine.profile", "name = mine\njust words\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn placeholder_ink_knows_one_ink() {
        let base = "name = x\n";
        assert!(Profile::parse("t", &format!("{base}placeholder_ink = faint\n")).is_ok());
        for ink in ["something", "none", "FAINT"] {
            let err = Profile::parse("t", &format!("{base}placeholder_ink = {ink}\n")).unwrap_err();
            assert_eq!(
                (err.line, err.key.as_str()),
                (2, "placeholder_ink"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_stop_note_is_a_regex_and_a_text() {
        let p = Profile::parse("mine", "name = mine\nstop_note = ^a=b$ => look at a\n").unwrap();
        assert_eq!(p.stop_note.len(), 1);
        assert!(p.stop_note[0].0.is_match("a=b"));
        assert_eq!(p.stop_note[0].1, "look at a");

        for bad in [
            "stop_note = no arrow",
            "stop_note = x =>",
            "stop_note = (x => t",
        ] {
            let err = Profile::parse("mine", &format!("name = mine\n{bad}\n")).unwrap_err();
            assert_eq!(
                (err.line, err.key.as_str()),
                (2, "stop_note"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_user_profile_with_a_builtin_name_replaces_it() {
        let mine = Profile::parse("mine", "name = claude\nbusy = working hard\n").unwrap();
        let profiles = Profiles::with(vec![mine]);
        let claude = profiles.get("claude").unwrap();
        assert!(claude.busy.as_ref().unwrap().is_match("working hard"));
        assert!(claude.spinner.is_none());
    }
}
