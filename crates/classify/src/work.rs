//! The work probe's answer.

/// How much work the watched build has left, from a work probe's raw output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Work {
    /// `n > 0` items of work, in any form, including work awaiting a sign-off (seed defect 7).
    Available(u64),
    /// The probe printed `0`: nothing left.
    None,
    /// No probe, or its output was not a non-negative integer.
    Unknown,
}

impl Work {
    /// Parses a probe's raw output: surrounding whitespace is ignored; a
    /// non-negative integer up to [`Work::MAX`] is an answer; anything else
    /// (empty, `seven`, `-1`, `+3`, a huge number, several numbers, binary) is
    /// `Unknown`, which the classifier reads as work (fail open).
    pub fn parse(raw: &str) -> Work {
        match parse_count(raw) {
            Some(0) => Work::None,
            Some(n) if n <= Work::MAX => Work::Available(n),
            _ => Work::Unknown,
        }
    }

    /// The count, `None` when unknown (for JSON reports).
    pub fn count(self) -> Option<u64> {
        match self {
            Work::Available(n) => Some(n),
            Work::None => Some(0),
            Work::Unknown => None,
        }
    }

    /// The verdict of a stop, which the work probe decides: work left (or
    /// unknown: fail open) is STALLED, none is BLOCKED.
    pub fn stop(self) -> (crate::State, crate::Rule) {
        match self {
            Work::Available(_) => (crate::State::Stalled, crate::Rule::WorkAvailable),
            Work::None => (crate::State::Blocked, crate::Rule::NoWork),
            Work::Unknown => (crate::State::Stalled, crate::Rule::WorkUnknown),
        }
    }

    /// Past this a probe is not counting work items but printing something
    /// else (a timestamp, an id, a byte count): its answer is unknown.
    pub const MAX: u64 = u32::MAX as u64;

    /// The number for a report line, `?` when unknown.
    pub fn display(self) -> String {
        self.count()
            .map_or_else(|| "?".to_string(), |n| n.to_string())
    }
}

/// A probe's count: surrounding blanks, then digits only (no sign, no
/// fraction, no second number), fitting in a `u64`.
pub fn parse_count(raw: &str) -> Option<u64> {
    let text = raw.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::Work;

    fn check(raw: &str, expected: Work) {
        assert_eq!(Work::parse(raw), expected, "raw {raw:?}");
    }

    #[test]
    fn positive_integers_are_work_available() {
        check("7", Work::Available(7));
        check("  42\n", Work::Available(42));
        check("007", Work::Available(7));
        check("4294967295", Work::Available(4_294_967_295));
    }

    #[test]
    fn zero_is_no_work() {
        check("0", Work::None);
        check("0\n", Work::None);
        check("000", Work::None);
    }

    #[test]
    fn anything_else_is_unknown() {
        for raw in [
            "",
            "\n",
            "seven",
            "-1",
            "+3",
            "3.5",
            "1e3",
            "3 4",
            "4294967296",
            "1796000055126",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999999",
            "\u{0}\u{1}\u{fffd}",
            "٣",
        ] {
            check(raw, Work::Unknown);
        }
    }
}
