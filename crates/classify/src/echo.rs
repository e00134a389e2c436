//! Echo exclusion (seed defect 1): text the monitor typed into a pane comes
//! back as pane text and must never be read as a signal.
//!
//! Matching is by content in short slices because the pane hard-wraps: a
//! nudge typed as one line can come back as three, and a whole-line match
//! silently fails. An empty pattern would match every line and blank the
//! whole pane, so empty and blank texts are never recorded (the seed's
//! sentinel line, done by construction).

/// Length, in characters, of the slices a sent text is cut into.
const SLICE_CHARS: usize = 12;
/// A wrapped fragment this short can be a coincidence; shorter lines only
/// match when the whole sent text is that short.
const MIN_FRAGMENT_CHARS: usize = 6;

/// The texts the monitor sent into one pane, cut into slices.
#[derive(Debug, Clone, Default)]
pub struct Echo {
    /// Each sent text with whitespace collapsed.
    texts: Vec<String>,
    /// Non-overlapping slices of every text, each `SLICE_CHARS` long.
    slices: Vec<String>,
}

/// Nothing typed: what a [`crate::Context`] excludes until it is given an echo.
pub(crate) static NO_ECHO: Echo = Echo {
    texts: Vec::new(),
    slices: Vec::new(),
};

impl Echo {
    /// The ledger of texts already sent into the pane, each recorded as by [`Echo::record`].
    pub fn new<I, S>(sent: I) -> Echo
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut echo = Echo::default();
        for text in sent {
            echo.record(text.as_ref());
        }
        echo
    }

    /// Records one sent text. Blank text is ignored: it would match everything.
    pub fn record(&mut self, text: &str) {
        let text = collapse_whitespace(text);
        if text.is_empty() {
            return;
        }
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(SLICE_CHARS) {
            if chunk.len() == SLICE_CHARS {
                self.slices.push(chunk.iter().collect());
            }
        }
        self.texts.push(text);
    }

    /// Nothing was recorded, so no pane text is excluded.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Whether `text` is all from one thing we sent (its words in order,
    /// nothing added): what a box holding only our own unsent text holds.
    /// Unlike [`Echo::matches`], a slice of ours among other words is not.
    pub fn is_all_ours(&self, text: &str) -> bool {
        let text = collapse_whitespace(text);
        !text.is_empty() && self.texts.iter().any(|sent| sent.contains(text.as_str()))
    }

    /// Whether a pane line is (part of) something we sent.
    pub fn matches(&self, line: &str) -> bool {
        if self.texts.is_empty() {
            return false;
        }
        let line = collapse_whitespace(strip_line_decoration(line));
        if line.is_empty() {
            return false;
        }
        let line_chars = line.chars().count();
        // A wrapped fragment of a sent text: the whole line occurs in it.
        let fragment = self.texts.iter().any(|text| {
            let short_text = text.chars().count() < MIN_FRAGMENT_CHARS;
            (line_chars >= MIN_FRAGMENT_CHARS || short_text) && text.contains(line.as_str())
        });
        // A line that carries a slice of a sent text among other text.
        fragment
            || self
                .slices
                .iter()
                .any(|slice| line.contains(slice.as_str()))
    }
}

/// Strips what the CLI draws around echoed input: the prompt glyph, a tree
/// branch, a box side.
fn strip_line_decoration(line: &str) -> &str {
    line.trim()
        .trim_start_matches(['❯', '>', '⎿', '│', '⏺'])
        .trim_end_matches('│')
        .trim()
}

fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Echo;

    #[test]
    fn a_whole_sent_line_is_echo() {
        let echo = Echo::new(["Please continue with the next step of the plan."]);
        assert!(echo.matches("❯ Please continue with the next step of the plan."));
    }

    #[test]
    fn hard_wrapped_fragments_of_a_sent_line_are_echo() {
        let sent = "q=$(grep -cE 'Enter to select.*to navigate' \"panes/$s.txt\")";
        let echo = Echo::new([sent]);
        // The pane wrapped it at 24 columns.
        assert!(echo.matches("q=$(grep -cE 'Enter to s"));
        assert!(echo.matches("elect.*to navigate' \"pan"));
        assert!(echo.matches("  es/$s.txt\")"));
    }

    #[test]
    fn a_line_quoting_a_slice_among_other_text_is_echo() {
        let echo = Echo::new(["keep going: run the next ready step"]);
        assert!(echo.matches("⏺ You said \"keep going: run the next ready step\" so I will."));
    }

    #[test]
    fn unrelated_lines_are_not_echo() {
        let echo = Echo::new(["keep going: run the next ready step"]);
        assert!(!echo.matches("Enter to select · ↑/↓ to navigate · Esc to cancel"));
        assert!(!echo.matches("go"));
        assert!(!echo.matches(""));
    }

    #[test]
    fn blank_sent_text_never_blanks_the_pane() {
        let echo = Echo::new(["", "   ", "\n"]);
        assert!(echo.is_empty());
        assert!(!echo.matches("Enter to select · ↑/↓ to navigate"));
        assert!(!echo.matches(" "));
    }
}
