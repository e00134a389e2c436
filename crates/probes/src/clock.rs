//! Wall-clock time as the seeds print it: epoch seconds, and local `HH:MM`.
//!
//! Local time comes from libc's `localtime_r`, which honours `TZ` and
//! `/etc/localtime` exactly as `date +%H:%M` does, without a time-zone crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch; a clock set before 1970 reads as 0.
pub fn now_epoch() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// `epoch` rendered as local `HH:MM`, or `??:??` if the C library cannot convert it.
pub fn local_hhmm(epoch: i64) -> String {
    match local_tm(epoch) {
        Some(tm) => format!("{:02}:{:02}", tm.tm_hour, tm.tm_min),
        None => "??:??".to_owned(),
    }
}

/// `epoch` rendered as local `HH:MM:SS` (the session monitor's poll line), or `??:??:??`.
pub fn local_hhmmss(epoch: i64) -> String {
    match local_tm(epoch) {
        Some(tm) => format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec),
        None => "??:??:??".to_owned(),
    }
}

fn local_tm(epoch: i64) -> Option<libc::tm> {
    let t: libc::time_t = epoch as libc::time_t;
    // SAFETY: `tm` is a plain C struct for which all-zero bytes is a valid value,
    // and localtime_r only writes into the struct we pass it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call.
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    ok.then_some(tm)
}

/// Clock ticks per second, the unit of the CPU times in `/proc/<pid>/stat`.
pub fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as u64 } else { 100 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_per_second_is_the_kernels_user_hz() {
        // USER_HZ is 100 on every Linux ABI bmb-monitor builds for.
        assert_eq!(ticks_per_second(), 100);
    }

    #[test]
    fn hhmm_has_the_seed_shape() {
        let s = local_hhmm(now_epoch());
        let b = s.as_bytes();
        assert_eq!(b.len(), 5, "{s}");
        assert!(b[0].is_ascii_digit() && b[1].is_ascii_digit() && b[2] == b':');
        assert!(b[3].is_ascii_digit() && b[4].is_ascii_digit());
        let hours: u32 = s[..2].parse().unwrap();
        let minutes: u32 = s[3..].parse().unwrap();
        assert!(hours < 24 && minutes < 60, "{s}");
    }

    #[test]
    fn minutes_advance_with_the_epoch() {
        // 120 s later is exactly two minutes later in any zone without a DST jump there.
        let base = 1_700_000_000 - (1_700_000_000 % 3600); // on an hour boundary UTC
        let a = local_hhmm(base);
        let b = local_hhmm(base + 120);
        assert_eq!(&a[..3], &b[..3], "{a} {b}");
        let am: u32 = a[3..].parse().unwrap();
        let bm: u32 = b[3..].parse().unwrap();
        assert_eq!(bm, am + 2, "{a} {b}");
    }
}
