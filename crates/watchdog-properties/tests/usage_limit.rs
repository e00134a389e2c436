//! The usage-limit reader's properties: any phrase, and near misses of its grammar, read at any
//! time in a few real zones, never panic, and whatever they read lies between half a year ago and a
//! month ahead. Moved from bmb-watchdog's `session/usage_limit.rs` so that bmb-watchdog needs no
//! proptest; they call its public `reset_at` with the bounds it publishes.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use proptest::prelude::*;
use watchdog::session::usage_limit::{DATE_PASSED, LONGEST_WAIT, reset_at};

/// What the binary passes: the zone database, here the system's.
fn zone(name: &str) -> Option<TimeZone> {
    jiff::tz::db().get(name).ok()
}

/// A phrase never panics, and whatever it reads lies between half a year ago and a month ahead.
fn read_within_bounds(phrase: &str, seconds: i64, zone_name: &str) -> Result<(), TestCaseError> {
    let now = Timestamp::from_second(seconds)
        .unwrap()
        .to_zoned_datetime(zone(zone_name).unwrap());
    if let Some(at) = reset_at(phrase, &now, &zone) {
        let earliest = now.timestamp().checked_sub(DATE_PASSED).unwrap();
        let latest = now.timestamp().checked_add(LONGEST_WAIT).unwrap();
        prop_assert!(
            earliest < at && at <= latest,
            "{:?} read at {} gave {}",
            phrase,
            now,
            at
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_strings_never_panic(
        phrase in any::<String>(),
        seconds in 0i64..4_000_000_000,
        zone_name in prop::sample::select(vec!["UTC", "Europe/London", "Asia/Tbilisi"]),
    ) {
        read_within_bounds(&phrase, seconds, zone_name)?;
    }

    #[test]
    fn near_misses_of_the_grammar_never_panic(
        phrase in "(at |in |AT )?((jan|Dec|feb|FEBRUARY) [0-9]{1,3}(st|th)?,? ([0-9]{4} )?(at )?)?\
                   [0-9]{1,2}(:[0-9]{1,3})? ?(am|PM|days?|hours?|m|s)?\
                   ( (and )?[0-9]{1,3} (minutes|seconds))?\
                   ( \\(( ?Asia/Tbilisi|Europe/London|Nowhere/Land|)\\))?[.,]?",
        seconds in 0i64..4_000_000_000,
        zone_name in prop::sample::select(vec!["UTC", "Europe/London", "America/New_York"]),
    ) {
        read_within_bounds(&phrase, seconds, zone_name)?;
    }
}
