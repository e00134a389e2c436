//! The one way every command prints. A line that cannot be written (a closed
//! pipe, a full disk, a terminal gone) is dropped, never a panic: `eprintln!`
//! and `println!` panic on a write error, and the long-running monitors must
//! never exit on one, least of all in `watch`, whose stderr is the alert
//! channel when no `--alert-cmd` is given.

use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::io::Write;

/// One line on stderr.
pub(crate) fn say(line: impl Display) {
    let _ = say_checked(line);
}

/// [`say`], for a caller whose line is a delivery (the alert funnel).
pub(crate) fn say_checked(line: impl Display) -> std::io::Result<()> {
    let mut err = std::io::stderr().lock();
    writeln!(err, "{line}").and_then(|()| err.flush())
}

/// One line on stdout, flushed, so a reader at the other end of a pipe sees
/// it at once.
pub(crate) fn print(line: impl Display) {
    let _ = print_checked(line);
}

/// [`print`], for a caller that reports a stdout that stopped working.
pub(crate) fn print_checked(line: impl Display) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush())
}

/// Text as it is, on stdout (a verdict with its own line ends).
pub(crate) fn print_raw(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// A usage error: `bmb-monitor: COMMAND: MESSAGE` on stderr, exit 2.
pub(crate) fn usage_error(command: &str, message: impl Display) -> std::process::ExitCode {
    say(format_args!("bmb-monitor: {command}: {message}"));
    crate::exit::code(crate::exit::USAGE)
}

/// Says a problem once while it stays the same: a failing sink or probe is
/// one line when it starts failing and one when its failure changes, not one
/// per pass. [`SaidOnce::clear`] re-arms it once the problem is over.
#[derive(Debug)]
pub(crate) struct SaidOnce<K> {
    said: HashMap<K, String>,
}

impl<K> Default for SaidOnce<K> {
    fn default() -> Self {
        SaidOnce {
            said: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq> SaidOnce<K> {
    /// True when `message` is news for `key`: not the last thing said about it.
    /// The caller says it; remembering and saying are one call in [`Self::say`].
    pub(crate) fn is_news(&mut self, key: K, message: &str) -> bool {
        if self.said.get(&key).map(String::as_str) == Some(message) {
            return false;
        }
        self.said.insert(key, message.to_owned());
        true
    }

    /// Says `message` on stderr unless it was the last thing said for `key`.
    pub(crate) fn say(&mut self, key: K, message: &str) {
        if self.is_news(key, message) {
            say(message);
        }
    }

    /// The problem behind `key` is over: its next failure is news again.
    pub(crate) fn clear(&mut self, key: &K) {
        self.said.remove(key);
    }

    /// Whether anything is remembered for `key`.
    pub(crate) fn is_failing(&self, key: &K) -> bool {
        self.said.contains_key(key)
    }
}

/// Ends what the last holder of `lock` left running when it was killed
/// (`kill -9`): the processes its runs tagged (never one it did not tag,
/// never a tmux server or what runs in one), and says how many.
pub(crate) fn end_orphans(lock: &probes::fs::lock::Lock, command: &str) {
    let Some(run) = lock.previous_run() else {
        return;
    };
    let ended = probes::run::end_orphans_of(run);
    if !ended.is_empty() {
        let pid = run.split('-').next().unwrap_or(run);
        let pids: Vec<String> = ended.iter().map(u32::to_string).collect();
        say(format_args!(
            "bmb-monitor: {command}: ended {} process(es) its previous run (pid {pid}) left running: {}",
            ended.len(),
            pids.join(" ")
        ));
    }
}

/// JSON with DEL and the C1 controls (U+007F to U+009F) escaped as `\uXXXX`
/// too, and every character [`hides_or_reorders`] names: serde_json escapes
/// only the C0 ones, and a hostile endpoint's board could put U+009B (a
/// one-character CSI) or a right-to-left override in front of a terminal that
/// reads `status --json` or `audit --json`. They stand only inside strings, so the JSON means the same.
pub(crate) fn escape_c1(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) || hides_or_reorders(c) {
            for unit in c.encode_utf16(&mut [0u16; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Bidi embeddings, overrides, isolates and marks (a right-to-left override
/// makes `evil` read backwards), zero-width and invisible format characters,
/// the line and paragraph separators, and the tag characters.
pub(crate) fn hides_or_reorders(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

#[cfg(test)]
mod tests {
    use super::SaidOnce;

    #[test]
    fn a_problem_is_news_once_per_change_and_again_after_it_clears() {
        let mut said = SaidOnce::default();
        assert!(said.is_news("stdout", "broken pipe"));
        assert!(!said.is_news("stdout", "broken pipe"));
        assert!(
            said.is_news("stdout", "disk full"),
            "a changed failure is news"
        );
        assert!(said.is_news("inbox", "disk full"), "keys are separate");
        said.clear(&"stdout");
        assert!(!said.is_failing(&"stdout"));
        assert!(
            said.is_news("stdout", "disk full"),
            "news again after it cleared"
        );
    }

    /// Found by a review (issue 19): C1 controls and DEL from a hostile
    /// endpoint reached `status --json` verbatim.
    #[test]
    fn json_escapes_del_and_the_c1_controls_and_means_the_same() {
        let text = "a\u{9b}31mb\u{85}c\u{7f}d é";
        let json = super::escape_c1(&serde_json::json!({ "s": text }).to_string());
        assert!(
            !json.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)),
            "{json}"
        );
        assert!(
            json.contains("\\u009b") && json.contains("\\u0085") && json.contains("\\u007f"),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["s"], text);
    }
}
