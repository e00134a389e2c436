//! The audit's own schedule beside the poll loop (seed: "Two layers, two
//! cadences"): when a project's next audit is due, and what happens to a
//! slot that comes while the last audit still runs. Times are the caller's
//! clock's seconds since the epoch; the caller keeps the last start across
//! restarts, so a restarted watcher does not audit at once.

use std::fmt;
use std::time::Duration;

/// The shortest period `--audit-every` takes: an audit runs an agent per
/// dimension, and a period under a second is a typo.
pub const MIN_EVERY_SECS: u64 = 1;

/// The longest period `--audit-every` takes, in seconds (a year): a longer
/// one is a mistake, and anything up to it adds to a clock without
/// overflowing. The same year as every other duration flag of the binary
/// (`bmb-watchdog`'s `MAX_DURATION_SECS`), which the binary checks at
/// compile time; kept here so this crate depends on no monitor.
pub const MAX_EVERY_SECS: u64 = 365 * 24 * 3600;

/// One project's audit schedule.
#[derive(Debug, Clone)]
pub struct Cadence {
    every: i64,
    next_due: i64,
    running_since: Option<i64>,
}

/// What to do with a project's audit at this moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Turn {
    /// Not yet due, or already under way and not late.
    Wait,
    /// Due and nothing runs: start it now (and keep `now` as its start).
    Start,
    /// Due, but the audit started at `running_since` still runs: this slot
    /// is skipped (never a second audit of one project at once).
    Skip {
        /// When the audit that still runs started, in the clock's seconds.
        running_since: i64,
    },
}

impl Cadence {
    /// A schedule of one audit per `every`. `last_started` is the start of
    /// the last audit this project had (from any earlier run of the
    /// watcher): the next is due one period after it, and at once when there
    /// was none. A start in the future (the clock went back) counts as now.
    pub fn new(every: Duration, last_started: Option<i64>, now: i64) -> Cadence {
        let every = i64::try_from(every.as_secs())
            .unwrap_or(i64::MAX)
            .max(MIN_EVERY_SECS as i64);
        let next_due = match last_started {
            Some(started) => started.min(now).saturating_add(every),
            None => now,
        };
        Cadence {
            every,
            next_due,
            running_since: None,
        }
    }

    /// The turn at `now`. A start or a skip moves the next slot one period
    /// on from `now`: a late slot is skipped once, not once per poll.
    pub fn turn(&mut self, now: i64) -> Turn {
        if now < self.next_due {
            return Turn::Wait;
        }
        self.next_due = now.saturating_add(self.every);
        match self.running_since {
            Some(running_since) => Turn::Skip { running_since },
            None => {
                self.running_since = Some(now);
                Turn::Start
            }
        }
    }

    /// The audit that started last has ended (whatever its outcome).
    pub fn finished(&mut self) {
        self.running_since = None;
    }

    /// When the next audit is due.
    pub fn next_due(&self) -> i64 {
        self.next_due
    }
}

/// Why a period such as `6h` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EveryError {
    /// Not a duration at all.
    Unreadable,
    /// A number without a unit: seconds, minutes and hours all look alike.
    NoUnit,
    /// Under [`MIN_EVERY_SECS`] or over [`MAX_EVERY_SECS`].
    OutOfRange,
}

impl fmt::Display for EveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EveryError::Unreadable => {
                f.write_str("not a duration: write it with a unit, as 45s, 90m, 6h, 1h30m or 1d")
            }
            EveryError::NoUnit => f.write_str("a number needs a unit: 6h, 90m or 45s"),
            EveryError::OutOfRange => write!(
                f,
                "must be from {MIN_EVERY_SECS}s to {} days",
                MAX_EVERY_SECS / 86_400
            ),
        }
    }
}

impl std::error::Error for EveryError {}

/// Reads an audit period: `6h`, `90m`, `1h30m`, `45s`, `2 hours`, `1d` or
/// ISO 8601 (`PT6H`); from [`MIN_EVERY_SECS`] to [`MAX_EVERY_SECS`].
pub fn parse_every(text: &str) -> Result<Duration, EveryError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(EveryError::NoUnit);
    }
    // Days are 24 hours here: a period, not a calendar date.
    let (text, days) = match text.strip_suffix('d') {
        Some(number) if number.bytes().all(|b| b.is_ascii_digit()) && !number.is_empty() => {
            (None, number.parse::<u64>().ok())
        }
        _ => (Some(text), None),
    };
    let secs = match (text, days) {
        (None, Some(days)) => days.checked_mul(86_400).ok_or(EveryError::OutOfRange)?,
        (None, None) => return Err(EveryError::OutOfRange),
        (Some(text), _) => {
            let duration: jiff::SignedDuration = text
                .parse()
                .map_err(|_: jiff::Error| EveryError::Unreadable)?;
            if duration.subsec_nanos() != 0 {
                // A fraction of a second is no period.
                return Err(EveryError::Unreadable);
            }
            u64::try_from(duration.as_secs()).map_err(|_| EveryError::OutOfRange)?
        }
    };
    if !(MIN_EVERY_SECS..=MAX_EVERY_SECS).contains(&secs) {
        return Err(EveryError::OutOfRange);
    }
    Ok(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    /// Each row: the clock at each step, the event at it, the turn expected.
    #[derive(Clone, Copy)]
    enum Step {
        At(i64, Turn),
        Finished,
    }

    fn run(mut cadence: Cadence, steps: &[Step]) {
        for (index, step) in steps.iter().enumerate() {
            match *step {
                Step::At(now, want) => {
                    assert_eq!(cadence.turn(now), want, "step {index} at {now}");
                }
                Step::Finished => cadence.finished(),
            }
        }
    }

    #[test]
    fn a_project_never_audited_is_audited_at_once_then_once_per_period() {
        use Step::*;
        run(
            Cadence::new(HOUR, None, 1000),
            &[
                At(1000, Turn::Start),
                At(1060, Turn::Wait),
                Finished,
                At(4599, Turn::Wait),
                At(4600, Turn::Start),
            ],
        );
    }

    #[test]
    fn a_restarted_watcher_waits_a_period_from_the_last_start() {
        use Step::*;
        // Audited at 1000, restarted at 2000: not at once, at 4600.
        run(
            Cadence::new(HOUR, Some(1000), 2000),
            &[
                At(2000, Turn::Wait),
                At(4599, Turn::Wait),
                At(4600, Turn::Start),
            ],
        );
        // Restarted long after: due at once.
        run(
            Cadence::new(HOUR, Some(1000), 90_000),
            &[At(90_000, Turn::Start)],
        );
        // A start stamped in the future (the clock went back) counts as now.
        run(
            Cadence::new(HOUR, Some(50_000), 2000),
            &[At(2000, Turn::Wait), At(5600, Turn::Start)],
        );
    }

    #[test]
    fn a_late_slot_is_skipped_once_and_the_next_one_starts() {
        use Step::*;
        run(
            Cadence::new(HOUR, None, 0),
            &[
                At(0, Turn::Start),
                // The audit runs past its period: the slot is skipped, once.
                At(3600, Turn::Skip { running_since: 0 }),
                At(3660, Turn::Wait),
                At(7199, Turn::Wait),
                Finished,
                At(7200, Turn::Start),
            ],
        );
    }

    #[test]
    fn periods_are_read_with_a_unit_and_within_bounds() {
        let ok = [
            ("6h", 6 * 3600),
            ("90m", 5400),
            ("1h30m", 5400),
            ("45s", 45),
            ("2 hours", 7200),
            ("1d", 86_400),
            ("PT6H", 6 * 3600),
        ];
        for (text, secs) in ok {
            assert_eq!(parse_every(text), Ok(Duration::from_secs(secs)), "{text}");
        }
        assert_eq!(parse_every("6"), Err(EveryError::NoUnit));
        assert_eq!(parse_every("0s"), Err(EveryError::OutOfRange));
        assert_eq!(parse_every("-1h"), Err(EveryError::OutOfRange));
        assert_eq!(parse_every("99999d"), Err(EveryError::OutOfRange));
        assert_eq!(
            parse_every("99999999999999999999d"),
            Err(EveryError::OutOfRange)
        );
        for bad in ["", "seven", "6x", "1.5s", "h", "1y"] {
            assert_eq!(parse_every(bad), Err(EveryError::Unreadable), "{bad}");
        }
    }
}
