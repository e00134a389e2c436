//! The pane read from the bottom up, one normalised line at a time.
//!
//! Lines are split and normalised lazily, only as far up as a rule looks, so
//! the cost of a verdict is bounded by the tail's structure, not by the
//! scrollback above it.

use std::borrow::Cow;

/// A raw line longer than this is cut before it is read: no screen line is
/// this wide, and a single 50 MB line must not cost 50 MB per regex.
const MAX_RAW_LINE_BYTES: usize = 8 * 1024;

#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// Byte offset of the raw line's start in the pane.
    pub offset: usize,
    /// Escapes and control characters removed, trailing whitespace trimmed.
    pub text: Cow<'a, str>,
    /// The line as captured (cut at [`MAX_RAW_LINE_BYTES`]), escapes and all:
    /// where its ink is read (`crate::ink`).
    pub raw: &'a str,
}

impl Line<'_> {
    pub(crate) fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// Starts with whitespace: an indented continuation, not column-zero chrome.
    pub(crate) fn is_indented(&self) -> bool {
        self.text.starts_with(char::is_whitespace)
    }
}

/// The pane's lines in reverse: index 0 is the bottom-most non-blank line.
pub(crate) struct Tail<'a> {
    pane: &'a str,
    /// `pane[..end]` has not been split yet.
    end: usize,
    exhausted: bool,
    lines: Vec<Line<'a>>,
}

impl<'a> Tail<'a> {
    pub(crate) fn new(pane: &'a str) -> Tail<'a> {
        let mut tail = Tail {
            pane,
            end: pane.len(),
            exhausted: false,
            lines: Vec::new(),
        };
        // Trailing blank lines are not part of the screen's structure.
        while let Some(line) = tail.split_next() {
            if !line.is_blank() {
                tail.lines.push(line);
                break;
            }
        }
        tail
    }

    /// The `i`-th line from the bottom, or `None` above the top of the pane.
    pub(crate) fn get(&mut self, i: usize) -> Option<&Line<'a>> {
        while self.lines.len() <= i {
            let line = self.split_next()?;
            self.lines.push(line);
        }
        self.lines.get(i)
    }

    pub(crate) fn text(&mut self, i: usize) -> Option<&str> {
        self.get(i).map(|line| &*line.text)
    }

    fn split_next(&mut self) -> Option<Line<'a>> {
        if self.exhausted {
            return None;
        }
        let rest = &self.pane[..self.end];
        let (start, raw) = match rest.rfind('\n') {
            Some(newline) => {
                self.end = newline;
                (newline + 1, &rest[newline + 1..])
            }
            None => {
                self.exhausted = true;
                (0, rest)
            }
        };
        let raw = cut(raw);
        Some(Line {
            offset: start,
            text: normalize(raw),
            raw,
        })
    }
}

fn cut(raw: &str) -> &str {
    if raw.len() <= MAX_RAW_LINE_BYTES {
        return raw;
    }
    let mut end = MAX_RAW_LINE_BYTES;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    &raw[..end]
}

/// Removes what a terminal would not show as text: ANSI escape sequences
/// (CSI, OSC, DCS and two-byte escapes, as `capture-pane -e` emits),
/// carriage returns (the text after the last one wins, as on a terminal),
/// other C0 and C1 controls; tabs become spaces; trailing whitespace goes.
pub(crate) fn normalize(raw: &str) -> Cow<'_, str> {
    let clean = !raw.chars().any(|c| c.is_control());
    if clean {
        let trimmed = raw.trim_end();
        return Cow::Borrowed(trimmed);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\r' => {
                if chars.peek().is_some() {
                    out.clear();
                }
            }
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    let trimmed_len = out.trim_end().len();
    out.truncate(trimmed_len);
    Cow::Owned(out)
}

pub(crate) type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

pub(crate) fn skip_escape(chars: &mut Chars<'_>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \).
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || c == '\u{9c}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        // Intermediate bytes then one final byte (`ESC ( B`).
        Some(c) if (' '..='/').contains(&c) => {
            while let Some(&next) = chars.peek() {
                chars.next();
                if !(' '..='/').contains(&next) {
                    break;
                }
            }
        }
        _ => {}
    }
}

fn skip_csi(chars: &mut Chars<'_>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Tail, normalize};

    #[test]
    fn normalize_strips_escapes_and_controls() {
        let cases = [
            ("plain", "plain"),
            ("trailing   ", "trailing"),
            ("\u{1b}[1;32mgreen\u{1b}[0m text", "green text"),
            ("\u{1b}]0;title\u{7}after", "after"),
            ("\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
            ("\u{1b}(Bascii", "ascii"),
            ("crlf\r", "crlf"),
            ("10%\r20%\r30%", "30%"),
            ("a\tb", "a b"),
            ("bell\u{7}\u{0}", "bell"),
            ("❯\u{a0}", "❯"),
            ("\u{1b}[", ""),
            ("\u{1b}", ""),
        ];
        for (raw, expected) in cases {
            assert_eq!(normalize(raw), expected, "raw {raw:?}");
        }
    }

    #[test]
    fn tail_reads_bottom_up_and_skips_trailing_blanks() {
        let pane = "one\ntwo\n\nthree\n\n   \n";
        let mut tail = Tail::new(pane);
        assert_eq!(tail.text(0), Some("three"));
        assert_eq!(tail.text(1), Some(""));
        assert_eq!(tail.text(2), Some("two"));
        assert_eq!(tail.get(3).map(|l| l.offset), Some(0));
        assert_eq!(tail.text(4), None);
    }

    #[test]
    fn tail_of_an_empty_pane_is_empty() {
        assert_eq!(Tail::new("").text(0), None);
        assert_eq!(Tail::new("\n\n  \n").text(0), None);
    }
}
