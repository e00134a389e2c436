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
        let text = raw.trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Work::Unknown;
        }
        match text.parse::<u64>() {
            Ok(0) => Work::None,
            Ok(n) if n <= Work::MAX => Work::Available(n),
            _ => Work::Unknown,
        }
    }

    /// Past this a probe is not counting work items but printing something
    /// else (a timestamp, an id, a byte count): its answer is unknown.
    pub const MAX: u64 = u32::MAX as u64;

    /// The number for a report line, `?` when unknown.
    pub fn display(self) -> String {
        match self {
            Work::Available(n) => n.to_string(),
            Work::None => "0".to_string(),
            Work::Unknown => "?".to_string(),
        }
    }
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
