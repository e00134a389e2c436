//! When an agent CLI's usage limit resets, read from the words it prints.
//!
//! Claude Code says `resets 4:20pm (Asia/Tbilisi)` or `resets Jul 18 at 4am`;
//! Codex CLI says `try again at 2:51 PM`, `try again at Dec 29th, 2025 10:15 PM`
//! or `try again in 2 days 17 hours 14 minutes`. [`reset_at`] turns the words
//! after `resets` / `try again` into the instant the limit resets, and
//! [`hhmm`] renders that instant for "held until HH:MM (usage limit)".
//!
//! **Architecture Invariant:** nothing here calls the OS. "Now" is an
//! argument, and a zone the CLI names is looked up through a closure the
//! caller passes, so the time zone database is the caller's.

use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

/// How long ago a printed clock time may have passed and still be the reset
/// it names, passed, rather than tomorrow's. A CLI prints a clock time only
/// for a reset within a day, and its screen stays as drawn after the reset
/// (Claude Code's own continue may not fire, or was cancelled): `resets 9pm`
/// read at 21:06 has reset, it does not mean tomorrow. Half a day splits the
/// two readings: `resets 1am` read at 23:00 is tomorrow's.
pub const JUST_PASSED: SignedDuration = SignedDuration::from_hours(12);

/// The same for a printed date (`Dec 5, 12:42am`): a CLI prints one for a
/// reset a day to a week ahead, so one in the last half year has passed
/// rather than lying a year ahead.
pub const DATE_PASSED: SignedDuration = SignedDuration::from_hours(183 * 24);

/// The longest wait a printed duration (`in 2 days 17 hours`) or date
/// (`Dec 4, 3:03am`) may give. The CLIs' limits reset within a week or a
/// month; anything further is a misread (or a year's roll-over no one meant),
/// and a monitor must not hold a stop that long on it.
pub const LONGEST_WAIT: SignedDuration = SignedDuration::from_hours(31 * 24);

/// When a usage limit resets, read from the phrase the CLI printed after `resets` / `try again`.
///
/// `now` is the local time in the machine's zone, which is the zone a CLI
/// prints in when it names none; `zone` looks up a zone the phrase names
/// (the binary passes `|name| jiff::tz::db().get(name).ok()`).
///
/// - A clock time (`4:20pm (Asia/Tbilisi)`, `at 2:51 PM`, `16:20`) is its next
///   occurrence in that zone, counting one less than [`JUST_PASSED`] ago as
///   the reset passed (the screen outlived it).
/// - A date without a year (`Jul 18 at 4am`, `Dec 4, 3:03am`) is its next
///   occurrence, with the same grace; a date with a year is taken as printed,
///   if it is neither past nor more than a year ahead.
/// - A wait (`in 2 days 17 hours 14 minutes`) is exact: a day is 24 hours,
///   since the CLI computed it from seconds. At most [`LONGEST_WAIT`].
/// - A wall-clock time that a DST change skips or repeats takes the zone's
///   compatible reading (the later side of a gap, the earlier of a fold).
///
/// The phrase must be only the time: surrounding whitespace and a trailing
/// `.` or `,` are allowed, any other word is not. Anything it cannot read with
/// confidence is `None`: an unknown zone, `13am`, a bare `4`, a date without
/// a time, an absurd wait, an empty phrase.
pub fn reset_at(
    phrase: &str,
    now: &ZonedDateTime,
    zone: &dyn Fn(&str) -> Option<TimeZone>,
) -> Option<Timestamp> {
    match read_phrase(phrase)? {
        Reading::Wait(wait) => now.timestamp().checked_add(wait).ok(),
        Reading::WallClock {
            date,
            time,
            zone: name,
        } => {
            let time_zone = match name {
                Some(name) => zone(name)?,
                None => now.time_zone().clone(),
            };
            next_occurrence(date, time, &now.with_time_zone(time_zone))
        }
    }
}

/// `HH:MM` of `at` in `now`'s zone, for "held until HH:MM (usage limit)";
/// `Dec 3 04:00` when it is not today there.
pub fn hhmm(at: Timestamp, now: &ZonedDateTime) -> String {
    let local = at.to_zoned_datetime(now.time_zone().clone());
    let time = format!("{:02}:{:02}", local.hour(), local.minute());
    match local.date() == now.date() {
        true => time,
        false => format!("{} {time}", local.strftime("%b %-d")),
    }
}

/// What a phrase says, before it is placed on the calendar.
enum Reading<'a> {
    /// `in 5 hours`: a wait from now.
    Wait(SignedDuration),
    /// `Jul 18 at 4am (Europe/London)`: a wall clock reading, in the zone it
    /// names or else the machine's.
    WallClock {
        date: Option<PrintedDate>,
        time: Time,
        zone: Option<&'a str>,
    },
}

/// A date as printed: `Jul 18`, or `Dec 29th, 2025` with its year.
struct PrintedDate {
    month: i8,
    day: i8,
    year: Option<i16>,
}

/// Places a wall clock reading on the calendar of `here` (now, in the
/// reading's zone): the earliest occurrence no longer ago than
/// [`JUST_PASSED`] (a clock time) or [`DATE_PASSED`] (a date), so a reset
/// the screen still shows after it happened reads as passed.
fn next_occurrence(
    date: Option<PrintedDate>,
    time: Time,
    here: &ZonedDateTime,
) -> Option<Timestamp> {
    let now = here.timestamp();
    let within = |passed: SignedDuration| now.checked_sub(passed).ok();
    let on = |date: Date, too_old: Timestamp| {
        let zoned = here
            .time_zone()
            .to_zoned_datetime(date.to_datetime(time))
            .ok()?;
        Some(zoned.timestamp()).filter(|at| *at > too_old)
    };
    let today = here.date();
    match date {
        None => {
            let too_old = within(JUST_PASSED)?;
            [today.yesterday().ok(), Some(today), today.tomorrow().ok()]
                .into_iter()
                .flatten()
                .find_map(|day| on(day, too_old))
        }
        Some(PrintedDate {
            month,
            day,
            year: None,
        }) => {
            let too_old = within(DATE_PASSED)?;
            let this_year = today.year();
            let in_year = |year: i16| on(Date::new(year, month, day).ok()?, too_old);
            [
                this_year.checked_sub(1),
                Some(this_year),
                this_year.checked_add(1),
            ]
            .into_iter()
            .flatten()
            .find_map(in_year)
            .filter(|at| {
                now.checked_add(LONGEST_WAIT)
                    .is_ok_and(|latest| *at <= latest)
            })
        }
        Some(PrintedDate {
            month,
            day,
            year: Some(year),
        }) => {
            let latest = now.checked_add(LONGEST_WAIT).ok()?;
            on(Date::new(year, month, day).ok()?, within(DATE_PASSED)?).filter(|at| *at <= latest)
        }
    }
}

/// Reads a whole phrase, or nothing.
fn read_phrase(phrase: &str) -> Option<Reading<'_>> {
    let phrase = phrase.trim().trim_end_matches(['.', ',']).trim_end();
    let (phrase, zone) = split_zone(phrase)?;
    let lower = phrase.to_ascii_lowercase();
    // Commas only separate (`Dec 4, 3:03am`, `2 days, 17 hours`): they carry no meaning.
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| !word.is_empty())
        .collect();
    match words.as_slice() {
        ["in", wait @ ..] if zone.is_none() => read_wait(wait).map(Reading::Wait),
        ["at", words @ ..] | words => {
            let (date, time) = read_wall_clock(words)?;
            Some(Reading::WallClock { date, time, zone })
        }
    }
}

/// Splits a trailing `(Area/City)` off the phrase. A phrase with no zone is
/// `(phrase, None)`; a bracket that holds no plausible zone name is `None`.
fn split_zone(phrase: &str) -> Option<(&str, Option<&str>)> {
    let Some(inside) = phrase.strip_suffix(')') else {
        return Some((phrase, None));
    };
    let (before, name) = inside.rsplit_once('(')?;
    let name = name.trim();
    let plausible = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_-+".contains(c));
    plausible.then_some((before, Some(name)))
}

/// `[Month Day[, Year] [at]] Time`, the words of a wall clock reading.
fn read_wall_clock(words: &[&str]) -> Option<(Option<PrintedDate>, Time)> {
    let Some(month) = words.first().and_then(|word| month_number(word)) else {
        return Some((None, read_time(words)?));
    };
    let [day, words @ ..] = &words[1..] else {
        return None;
    };
    // `18th` is `18`: the ordinal suffix says nothing more.
    let day = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| day.strip_suffix(suffix))
        .unwrap_or(day);
    let day = i8::try_from(number(day, 2)?).ok()?;
    let (year, words) = match words {
        [year, words @ ..] if year.len() == 4 => {
            (Some(i16::try_from(number(year, 4)?).ok()?), words)
        }
        _ => (None, words),
    };
    let words = words.strip_prefix(&["at"][..]).unwrap_or(words);
    Some((Some(PrintedDate { month, day, year }), read_time(words)?))
}

/// `4:20pm`, `4:20 PM`, `4pm`, or a 24-hour `16:20` (the colon is what tells
/// a 24-hour time from a bare number).
fn read_time(words: &[&str]) -> Option<Time> {
    let (clock, half) = match words {
        [clock, half] => (*clock, Some(half_of_day(half)?)),
        [word] => match (word.strip_suffix("am"), word.strip_suffix("pm")) {
            (Some(clock), _) => (clock, Some(HalfOfDay::Am)),
            (_, Some(clock)) => (clock, Some(HalfOfDay::Pm)),
            (None, None) => (*word, None),
        },
        _ => return None,
    };
    let (hour, minute) = match clock.split_once(':') {
        Some((hour, minute)) if minute.len() == 2 => (number(hour, 2)?, number(minute, 2)?),
        Some(_) => return None,
        None if half.is_some() => (number(clock, 2)?, 0),
        None => return None,
    };
    let hour = match half {
        None => hour,
        Some(_) if !(1..=12).contains(&hour) => return None,
        Some(HalfOfDay::Am) => hour % 12,
        Some(HalfOfDay::Pm) => hour % 12 + 12,
    };
    Time::new(i8::try_from(hour).ok()?, i8::try_from(minute).ok()?, 0, 0).ok()
}

/// Which half of a 12-hour clock.
enum HalfOfDay {
    Am,
    Pm,
}

fn half_of_day(word: &str) -> Option<HalfOfDay> {
    match word {
        "am" => Some(HalfOfDay::Am),
        "pm" => Some(HalfOfDay::Pm),
        _ => None,
    }
}

/// `2 days 17 hours 14 minutes`, `1 hour and 3 minutes`, `5h 3m`: each unit
/// at most once and largest first, as a CLI prints them, or nothing.
fn read_wait(words: &[&str]) -> Option<SignedDuration> {
    let mut words = words.iter().copied().filter(|word| *word != "and");
    let mut seconds: i64 = 0;
    let mut previous_unit: Option<i64> = None;
    while let Some(word) = words.next() {
        let (count, unit) = word.split_at(
            word.find(|c: char| !c.is_ascii_digit())
                .unwrap_or(word.len()),
        );
        let unit = if unit.is_empty() { words.next()? } else { unit };
        let unit = unit_seconds(unit)
            .filter(|unit| previous_unit.is_none_or(|previous| *unit < previous))?;
        seconds = seconds.checked_add(i64::from(number(count, 9)?).checked_mul(unit)?)?;
        previous_unit = Some(unit);
    }
    let wait = SignedDuration::from_secs(seconds);
    (previous_unit.is_some() && wait <= LONGEST_WAIT).then_some(wait)
}

fn unit_seconds(unit: &str) -> Option<i64> {
    match unit {
        "d" | "day" | "days" => Some(24 * 3600),
        "h" | "hr" | "hrs" | "hour" | "hours" => Some(3600),
        "m" | "min" | "mins" | "minute" | "minutes" => Some(60),
        "s" | "sec" | "secs" | "second" | "seconds" => Some(1),
        _ => None,
    }
}

fn month_number(word: &str) -> Option<i8> {
    let month = match word {
        "jan" | "january" => 1,
        "feb" | "february" => 2,
        "mar" | "march" => 3,
        "apr" | "april" => 4,
        "may" => 5,
        "jun" | "june" => 6,
        "jul" | "july" => 7,
        "aug" | "august" => 8,
        "sep" | "sept" | "september" => 9,
        "oct" | "october" => 10,
        "nov" | "november" => 11,
        "dec" | "december" => 12,
        _ => return None,
    };
    Some(month)
}

/// A number of at most `longest` ASCII digits (`str::parse` alone would also
/// take a sign).
fn number(text: &str, longest: usize) -> Option<u32> {
    let digits =
        !text.is_empty() && text.len() <= longest && text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use jiff::tz::TimeZone;
    use jiff::{Timestamp, ZonedDateTime};

    use super::{hhmm, reset_at};

    /// Claude Code's screens in these tests are read in Tbilisi (UTC+4, no DST).
    const TBILISI: &str = "2025-07-17T15:00:00+04:00[Asia/Tbilisi]";
    /// Codex CLI's in New York (UTC-4 in July).
    const NEW_YORK: &str = "2025-07-17T09:00:00-04:00[America/New_York]";

    /// What the binary passes: the zone database, here the system's.
    fn zone(name: &str) -> Option<TimeZone> {
        jiff::tz::db().get(name).ok()
    }

    fn check(phrase: &str, now: &str, expected: Option<&str>) {
        let now: ZonedDateTime = now.parse().unwrap();
        let expected: Option<Timestamp> = expected.map(|at| at.parse().unwrap());
        assert_eq!(
            reset_at(phrase, &now, &zone),
            expected,
            "{phrase:?} read at {now}"
        );
    }

    #[test]
    fn claude_code_phrases() {
        for (phrase, expected) in [
            ("4:20pm (Asia/Tbilisi)", "2025-07-17T16:20:00+04:00"),
            // 9 hours ago: the screen outlived a reset that has passed.
            ("3am (Europe/London)", "2025-07-17T03:00:00+01:00"),
            ("1am (Asia/Tbilisi)", "2025-07-18T01:00:00+04:00"),
            ("1am", "2025-07-18T01:00:00+04:00"),
            ("at 1am", "2025-07-18T01:00:00+04:00"),
            ("Jul 18 at 4am", "2025-07-18T04:00:00+04:00"),
            ("Jul 18 at 4am (Europe/London)", "2025-07-18T04:00:00+01:00"),
            ("Jul 20, 3:03am", "2025-07-20T03:03:00+04:00"),
        ] {
            check(phrase, TBILISI, Some(expected));
        }
        // The weekly dialog's date, read three days before.
        check(
            "Dec 4, 3:03am",
            "2025-12-01T12:00:00+04:00[Asia/Tbilisi]",
            Some("2025-12-04T03:03:00+04:00"),
        );
    }

    #[test]
    fn codex_cli_phrases() {
        for (phrase, expected) in [
            ("at 2:51 PM", "2025-07-17T14:51:00-04:00"),
            ("2:51 PM", "2025-07-17T14:51:00-04:00"),
            ("at 2:51 PM.", "2025-07-17T14:51:00-04:00"),
            // Codex names the date, with its year, once the reset is not today.
            ("at Jul 19th, 2025 10:15 PM.", "2025-07-19T22:15:00-04:00"),
            ("in 2 days 17 hours 14 minutes", "2025-07-20T02:14:00-04:00"),
            (
                "in 2 days, 17 hours and 14 minutes.",
                "2025-07-20T02:14:00-04:00",
            ),
            ("in 5 hours", "2025-07-17T14:00:00-04:00"),
            ("in 1 hour 3 minutes", "2025-07-17T10:03:00-04:00"),
            ("in 5h 3m", "2025-07-17T14:03:00-04:00"),
            ("in 45 minutes", "2025-07-17T09:45:00-04:00"),
            ("in 30 seconds", "2025-07-17T09:00:30-04:00"),
            ("in 1 day", "2025-07-18T09:00:00-04:00"),
            ("in 31 days", "2025-08-17T09:00:00-04:00"),
        ] {
            check(phrase, NEW_YORK, Some(expected));
        }
    }

    #[test]
    fn case_and_spacing_a_terminal_gives() {
        for (phrase, expected) in [
            ("4:20 PM", "2025-07-17T16:20:00+04:00"),
            ("4:20PM", "2025-07-17T16:20:00+04:00"),
            ("4:20pm.", "2025-07-17T16:20:00+04:00"),
            ("4:20pm,", "2025-07-17T16:20:00+04:00"),
            ("  4:20   pm  ", "2025-07-17T16:20:00+04:00"),
            ("4:20pm ( Asia/Tbilisi ).", "2025-07-17T16:20:00+04:00"),
            ("16:20", "2025-07-17T16:20:00+04:00"),
            ("4pm", "2025-07-17T16:00:00+04:00"),
            ("JUL 18 AT 4AM", "2025-07-18T04:00:00+04:00"),
            ("July 18th at 4am", "2025-07-18T04:00:00+04:00"),
            ("12am", "2025-07-18T00:00:00+04:00"),
            ("12:30 am", "2025-07-18T00:30:00+04:00"),
            ("0:30", "2025-07-18T00:30:00+04:00"),
            ("12pm", "2025-07-17T12:00:00+04:00"),
        ] {
            check(phrase, TBILISI, Some(expected));
        }
    }

    #[test]
    fn a_time_past_over_half_a_day_ago_is_tomorrow_and_a_date_half_a_year_ago_next_year() {
        for (phrase, now, expected) in [
            (
                "1am",
                "2025-07-17T23:00:00+01:00[Europe/London]",
                "2025-07-18T01:00:00+01:00",
            ),
            (
                "1am",
                "2025-12-31T23:00:00+00:00[Europe/London]",
                "2026-01-01T01:00:00+00:00",
            ),
            (
                "Jan 20, 3:03am",
                "2025-12-30T10:00:00+04:00[Asia/Tbilisi]",
                "2026-01-20T03:03:00+04:00",
            ),
            (
                "Jul 18 at 4am",
                "2026-07-01T05:00:00+04:00[Asia/Tbilisi]",
                "2026-07-18T04:00:00+04:00",
            ),
            (
                "Feb 29 at 4am",
                "2028-02-10T00:00:00+04:00[Asia/Tbilisi]",
                "2028-02-29T04:00:00+04:00",
            ),
        ] {
            check(phrase, now, Some(expected));
        }
    }

    #[test]
    fn a_reset_the_screen_outlived_is_the_one_that_passed() {
        for (phrase, now, expected) in [
            (
                "4:20pm",
                "2025-07-17T16:20:30+04:00[Asia/Tbilisi]",
                "2025-07-17T16:20:00+04:00",
            ),
            (
                "4:20pm",
                "2025-07-17T16:24:59+04:00[Asia/Tbilisi]",
                "2025-07-17T16:20:00+04:00",
            ),
            (
                "4:20pm",
                "2025-07-17T21:25:00+04:00[Asia/Tbilisi]",
                "2025-07-17T16:20:00+04:00",
            ),
            // Past midnight, a reset of the evening before.
            (
                "11:58pm",
                "2025-07-18T00:03:00+04:00[Asia/Tbilisi]",
                "2025-07-17T23:58:00+04:00",
            ),
            // Over half a day ago: tomorrow's.
            (
                "4:20pm",
                "2025-07-18T04:21:00+04:00[Asia/Tbilisi]",
                "2025-07-18T16:20:00+04:00",
            ),
            (
                "Dec 4, 3:03am",
                "2025-12-30T10:00:00+04:00[Asia/Tbilisi]",
                "2025-12-04T03:03:00+04:00",
            ),
            (
                "Jul 18 at 4am",
                "2025-07-18T04:04:59+04:00[Asia/Tbilisi]",
                "2025-07-18T04:00:00+04:00",
            ),
            (
                "Jul 18 at 4am",
                "2025-07-18T05:00:00+04:00[Asia/Tbilisi]",
                "2025-07-18T04:00:00+04:00",
            ),
        ] {
            check(phrase, now, Some(expected));
        }
    }

    #[test]
    fn a_named_zone_is_read_on_its_own_calendar() {
        for (phrase, now, expected) in [
            (
                "4:20pm (Asia/Tbilisi)",
                "2025-07-17T10:00:00+00:00[UTC]",
                "2025-07-17T12:20:00Z",
            ),
            (
                "3am (Europe/London)",
                "2025-07-17T20:00:00+00:00[UTC]",
                "2025-07-18T02:00:00Z",
            ),
            // 22:00 UTC is already 02:00 on Jul 18 in Tbilisi: its 1am passed an hour ago there.
            (
                "1am (Asia/Tbilisi)",
                "2025-07-17T22:00:00+00:00[UTC]",
                "2025-07-17T21:00:00Z",
            ),
            // At 10:00 UTC it is 14:00 there, thirteen hours after its 1am: the next is tomorrow's.
            (
                "1am (Asia/Tbilisi)",
                "2025-07-17T10:00:00+00:00[UTC]",
                "2025-07-17T21:00:00Z",
            ),
        ] {
            check(phrase, now, Some(expected));
        }
    }

    #[test]
    fn dst_days_in_london() {
        for (phrase, now, expected) in [
            // Clocks go from 01:00 GMT to 02:00 BST on 2025-03-30: 1:30am does not exist there,
            // and the compatible reading is the later side of the gap.
            (
                "1:30am",
                "2025-03-30T00:30:00+00:00[Europe/London]",
                "2025-03-30T02:30:00+01:00",
            ),
            (
                "3am (Europe/London)",
                "2025-03-29T22:00:00+00:00[UTC]",
                "2025-03-30T03:00:00+01:00",
            ),
            (
                "Mar 30 at 4am",
                "2025-03-29T12:00:00+00:00[Europe/London]",
                "2025-03-30T04:00:00+01:00",
            ),
            // A wait is exact: the day that loses an hour still lasts 24 hours.
            (
                "in 1 day",
                "2025-03-29T12:00:00+00:00[Europe/London]",
                "2025-03-30T13:00:00+01:00",
            ),
            // Clocks go back from 02:00 BST to 01:00 GMT on 2025-10-26: 1:30am comes twice,
            // and the compatible reading is the first.
            (
                "1:30am",
                "2025-10-26T00:00:00+01:00[Europe/London]",
                "2025-10-26T01:30:00+01:00",
            ),
        ] {
            check(phrase, now, Some(expected));
        }
    }

    #[test]
    fn what_it_cannot_read_with_confidence_is_none() {
        for phrase in [
            "",
            "   ",
            ".",
            "at",
            "garbage",
            "13am",
            "0am",
            "13:00pm",
            "24:00",
            "4:60pm",
            "4:2pm",
            "4",
            "+4pm",
            "4:20pm (Mars/Olympus)",
            "4:20pm ()",
            "4:20pm (",
            "4:20pm )",
            "4:20pm (Asia/Tbilisi",
            "4:20pm tomorrow",
            "resets 4:20pm",
            "at at 1am",
            "Jul 18",
            "Jul at 4am",
            "Jul 32 at 4am",
            "Feb 30 at 4am",
            "in",
            "in hours",
            "in 5",
            "in 32 days",
            "in 31 days 1 second",
            "in 5 fortnights",
            "in 5 minutes 2 hours",
            "in 2 hours 2 hours",
            "in 5 hours (Asia/Tbilisi)",
            "in 99999999999 seconds",
            "in -5 minutes",
            // A dated reset long past, or absurdly far ahead, is a stale or misread screen.
            "Dec 29th, 2023 10:15 PM",
            "Dec 29th, 2030 10:15 PM",
            // More than a month ahead: a misread, or a year's roll-over no one meant.
            "Dec 4, 3:03am",
            "Aug 30 at 4am",
        ] {
            check(phrase, TBILISI, None);
        }
        // No Feb 29 this year nor next.
        check(
            "Feb 29 at 4am",
            "2025-03-01T00:00:00+04:00[Asia/Tbilisi]",
            None,
        );
    }

    #[test]
    fn hhmm_is_the_reset_on_the_machines_clock() {
        let now: ZonedDateTime = TBILISI.parse().unwrap();
        assert_eq!(hhmm("2025-07-17T12:20:00Z".parse().unwrap(), &now), "16:20");
        // Not today there: the date says so.
        assert_eq!(
            hhmm("2025-07-17T21:05:00Z".parse().unwrap(), &now),
            "Jul 18 01:05"
        );
    }
}
