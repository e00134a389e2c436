//! Wall-clock time as the seeds print it: epoch seconds, and local `HH:MM`.
//!
//! Local time is the system time zone as jiff finds it: `TZ` (a zone name, a
//! TZif path or a POSIX rule) and otherwise `/etc/localtime`, which is where
//! `date +%H:%M` looks too; no zone found is UTC, as for the C library.

use std::time::{SystemTime, UNIX_EPOCH};

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// Seconds since the Unix epoch; a clock set before 1970 reads as 0.
pub fn now_epoch() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// Now, in the system time zone (what a CLI on this machine prints without a zone name).
pub fn local_now() -> jiff::ZonedDateTime {
    Timestamp::now().to_zoned_datetime(TimeZone::system())
}

/// A time zone by its tz database name (`Asia/Tbilisi`), from the system's
/// database; `None` for a name it does not have.
pub fn zone(name: &str) -> Option<TimeZone> {
    jiff::tz::db().get(name).ok()
}

/// `epoch` rendered as local `HH:MM`, or `??:??` past the years ±9999.
pub fn local_hhmm(epoch: i64) -> String {
    hhmm_in(epoch, &TimeZone::system())
}

/// `epoch` rendered as local `HH:MM:SS` (the session monitor's poll line), or `??:??:??`.
pub fn local_hhmmss(epoch: i64) -> String {
    hhmmss_in(epoch, &TimeZone::system())
}

fn hhmm_in(epoch: i64, zone: &TimeZone) -> String {
    match civil(epoch, zone) {
        Some(t) => format!("{:02}:{:02}", t.hour(), t.minute()),
        None => "??:??".to_owned(),
    }
}

fn hhmmss_in(epoch: i64, zone: &TimeZone) -> String {
    match civil(epoch, zone) {
        Some(t) => format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
        None => "??:??:??".to_owned(),
    }
}

fn civil(epoch: i64, zone: &TimeZone) -> Option<DateTime> {
    Timestamp::from_second(epoch)
        .ok()
        .map(|at| zone.to_datetime(at))
}

/// Clock ticks per second, the unit of the CPU times in `/proc/<pid>/stat`
/// (the kernel hands it to every process in its auxiliary vector).
pub fn ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Invocation, Limits, run};

    /// Central Europe, as a POSIX rule: no zone database needed.
    const BERLIN: &str = "CET-1CEST,M3.5.0,M10.5.0/3";

    #[test]
    fn ticks_per_second_is_the_kernels_user_hz() {
        // USER_HZ is 100 on every Linux ABI bmb-monitor builds for.
        assert_eq!(ticks_per_second(), 100);
    }

    #[test]
    fn local_time_follows_the_zones_offset_on_both_sides_of_a_dst_change() {
        let berlin = TimeZone::posix(BERLIN).unwrap();
        // 2026-03-29 00:59:59 UTC, one second before CET becomes CEST.
        let before = 1_774_745_999;
        assert_eq!(hhmmss_in(before, &berlin), "01:59:59");
        assert_eq!(hhmmss_in(before + 1, &berlin), "03:00:00");
        assert_eq!(hhmm_in(before + 1, &berlin), "03:00");
        // Leading zeros, and UTC itself.
        assert_eq!(hhmm_in(0, &berlin), "01:00");
        assert_eq!(hhmmss_in(3_723, &TimeZone::UTC), "01:02:03");
        assert_eq!(hhmmss_in(-1, &TimeZone::UTC), "23:59:59");
        let minus = TimeZone::fixed(jiff::tz::Offset::constant(-5));
        assert_eq!(hhmm_in(1_700_000_000, &minus), "17:13");
    }

    #[test]
    fn a_time_no_calendar_holds_is_question_marks_not_a_panic() {
        assert_eq!(hhmm_in(i64::MAX, &TimeZone::UTC), "??:??");
        assert_eq!(hhmmss_in(i64::MIN, &TimeZone::UTC), "??:??:??");
    }

    /// `date -d @EPOCH +FORMAT` with `TZ` set as given (or inherited).
    fn date(epoch: i64, format: &str, tz: Option<&str>) -> String {
        let mut invocation = Invocation::new("date")
            .arg("-d")
            .arg(format!("@{epoch}"))
            .arg(format);
        if let Some(tz) = tz {
            invocation = invocation.env("TZ", tz);
        }
        let outcome = run(&invocation, &Limits::default());
        let out = outcome.success_stdout().expect("date(1) answers");
        out.text().trim_end().to_owned()
    }

    #[test]
    fn the_rendering_is_date_s_for_a_rule_and_for_this_machines_zone() {
        let berlin = TimeZone::posix(BERLIN).unwrap();
        // Winter, summer, and the hour a DST change skips or repeats.
        for epoch in [
            1_767_225_600,
            1_782_864_000,
            1_774_746_000,
            1_792_888_200,
            1_792_890_000,
        ] {
            assert_eq!(
                hhmmss_in(epoch, &berlin),
                date(epoch, "+%H:%M:%S", Some(BERLIN)),
                "{epoch}"
            );
            assert_eq!(local_hhmm(epoch), date(epoch, "+%H:%M", None), "{epoch}");
            assert_eq!(
                local_hhmmss(epoch),
                date(epoch, "+%H:%M:%S", None),
                "{epoch}"
            );
        }
    }
}
