//! systemd's notify protocol for the long-running monitors (`Type=notify`,
//! `WatchdogSec=`): `READY=1` once the first cycle completed, `WATCHDOG=1`
//! after every completed cycle, so a loop frozen past the watchdog (a hung
//! capture beyond every timeout) is killed and restarted, and `STOPPING=1` on
//! the way out. Without `NOTIFY_SOCKET` every call does nothing.

use std::time::Duration;

use sd_notify::NotifyState;

use crate::output::SaidOnce;

/// The monitor's side of the protocol; `STOPPING=1` when it is dropped.
#[derive(Default)]
pub(crate) struct Notifier {
    ready: bool,
    said: SaidOnce<()>,
}

impl Notifier {
    /// A cycle (a poll over every target, a lead or worker pass) completed.
    pub(crate) fn cycle_done(&mut self) {
        let states: &[NotifyState] = if self.ready {
            &[NotifyState::Watchdog]
        } else {
            &[NotifyState::Ready, NotifyState::Watchdog]
        };
        if self.send(states) {
            self.ready = true;
        }
    }

    fn send(&mut self, states: &[NotifyState]) -> bool {
        // The variable stays set: unsetting it is not sound while threads
        // run, and a child's message is ignored under NotifyAccess=main.
        match notify(states) {
            Ok(()) => {
                self.said.clear(&());
                true
            }
            Err(err) => {
                self.said.say(
                    (),
                    &format!("bmb-monitor: cannot notify systemd (NOTIFY_SOCKET): {err}"),
                );
                false
            }
        }
    }
}

impl Drop for Notifier {
    /// The loop is over, by whichever way it ended (a signal, `--once`, the
    /// agent or the Lead gone): `STOPPING=1`.
    fn drop(&mut self) {
        self.send(&[NotifyState::Stopping]);
    }
}

/// `states` to `$NOTIFY_SOCKET` (a path, or an abstract socket `@name`,
/// which sd_notify(3) allows), sent without waiting: a receiver whose queue
/// is full (it stopped reading) costs this ping, never the loop, which a
/// blocking `sendto` would hold for good, SIGTERM included.
fn notify(states: &[NotifyState]) -> std::io::Result<()> {
    let Some(value) = std::env::var_os("NOTIFY_SOCKET").filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    let message: String = states.iter().map(|state| format!("{state}\n")).collect();
    let socket = std::os::unix::net::UnixDatagram::unbound()?;
    socket.set_nonblocking(true)?;
    use std::os::unix::ffi::OsStrExt;
    let sent = match value.as_bytes().strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            socket.send_to_addr(message.as_bytes(), &address)
        }
        None => socket.send_to(message.as_bytes(), std::path::Path::new(&value)),
    };
    let sent = sent.map_err(|err| {
        if err.kind() == std::io::ErrorKind::WouldBlock {
            std::io::Error::new(
                err.kind(),
                "its queue is full (nothing reads it): the message is dropped, not waited for",
            )
        } else {
            err
        }
    })?;
    if sent == message.len() {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            "incomplete write",
        ))
    }
}

/// The watchdog's period when systemd set one for this process (`WatchdogSec=`).
fn watchdog_period() -> Option<Duration> {
    let mut usec = 0;
    // WATCHDOG_USEC=0 is systemd's "no watchdog".
    sd_notify::watchdog_enabled(false, &mut usec)
        .then(|| Duration::from_micros(usec))
        .filter(|period| !period.is_zero())
}

/// The usage error of a watchdog systemd set too short for a loop that
/// sleeps `interval` between cycles that may each take up to `cycle`
/// (`parts` says what that is made of, empty for a loop that waits on
/// nothing), if it did.
pub(crate) fn check_watchdog(interval: Duration, cycle: Duration, parts: &str) -> Option<String> {
    watchdog_period().and_then(|period| watchdog_too_short(period, interval, cycle, parts))
}

/// Why a watchdog period cannot work: a ping comes at the end of each cycle,
/// so two pings may be the interval plus a whole cycle apart (every timeout
/// it can wait through in a row), and a period no longer than that kills a
/// healthy monitor.
fn watchdog_too_short(
    period: Duration,
    interval: Duration,
    cycle: Duration,
    parts: &str,
) -> Option<String> {
    (period <= interval + cycle).then(|| {
        let made_of = if parts.is_empty() {
            String::new()
        } else {
            format!(": {parts}")
        };
        format!(
            "systemd's WatchdogSec ({}s) must be longer than the interval ({}s) plus the longest cycle \
             ({}s{made_of}): the monitor pings once per cycle",
            period.as_secs_f64(),
            interval.as_secs(),
            cycle.as_secs_f64()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watchdog_no_longer_than_the_interval_and_a_cycle_is_refused() {
        let secs = Duration::from_secs;
        assert!(watchdog_too_short(secs(120), secs(30), secs(20), "").is_none());
        let why = watchdog_too_short(secs(30), secs(30), secs(0), "").unwrap();
        assert!(
            why.contains("WatchdogSec (30s)") && why.contains("interval (30s)"),
            "{why}"
        );
        // Found by a review: pings 5.5 s apart (a 4 s interval, a 1.5 s probe)
        // under a 5 s watchdog passed the check.
        let why = watchdog_too_short(secs(5), secs(4), secs(2), "2 probe run(s) x 1s").unwrap();
        assert!(
            why.contains("longest cycle (2s: 2 probe run(s) x 1s)"),
            "{why}"
        );
        assert!(watchdog_too_short(Duration::from_millis(500), secs(1), secs(0), "").is_some());
    }
}
