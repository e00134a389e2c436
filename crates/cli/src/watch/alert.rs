//! The session monitor's alert funnel: `--alert-cmd`, or stderr without one,
//! never fatal.

use std::time::Duration;

use watchdog::session::Alert;
use watchdog::session::target::Target;

use super::Args;
use crate::alert::{run_alert_cmd, sanitize_text};
use crate::output::{say, say_checked};

/// One cycle's time for its alert commands, all of them together: one
/// `probe_timeout` from the first one's start. Each runs bounded by what is
/// left of it, and once it is used up the cycle's other alerts wait for the
/// next poll, so a cycle waits through one alert command's timeout at most
/// however many targets alert (what systemd's watchdog check counts).
pub(super) struct AlertBudget {
    total: Duration,
    until: Option<std::time::Instant>,
    said: bool,
}

impl AlertBudget {
    pub(super) fn new(total: Duration) -> AlertBudget {
        AlertBudget {
            total,
            until: None,
            said: false,
        }
    }

    /// What is left for the next alert command (the first one starts the
    /// clock); `None` when it is used up, said once per cycle.
    fn take(&mut self) -> Option<Duration> {
        let until = *self
            .until
            .get_or_insert_with(|| std::time::Instant::now() + self.total);
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            if !std::mem::replace(&mut self.said, true) {
                say(format_args!(
                    "bmb-monitor: watch: this cycle's alert commands used their {} s; the alerts left wait for the next poll",
                    self.total.as_secs()
                ));
            }
            return None;
        }
        Some(left)
    }
}

/// How an alert went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sent {
    Delivered,
    /// Its command (or stderr) did not take it.
    Failed,
    /// Not tried: this cycle's [`AlertBudget`] was used up.
    Deferred,
}

/// The alert funnel: `sh -c CMD` with the message on stdin, bounded (by
/// `budget`), never fatal. Whether it was delivered (without `--alert-cmd`,
/// stderr is the funnel). `own`: the target's own tmux server, when its
/// `[[targets]]` table names one.
pub(super) fn send_alert(
    args: &Args,
    target: &Target,
    own: Option<&probes::tmux::Server>,
    alert: &Alert,
    budget: &mut AlertBudget,
) -> Sent {
    let Some(command) = &args.alert_cmd else {
        // stderr is the funnel: an alert it could not take (a full disk, a
        // closed pipe) was not delivered, and is sent again next poll.
        let said = say_checked(format_args!(
            "bmb-monitor: alert ({}): {}",
            alert.reason,
            sanitize_text(&alert.message).replace('\n', "\n    ")
        ));
        return if said.is_ok() {
            Sent::Delivered
        } else {
            Sent::Failed
        };
    };
    let Some(timeout) = budget.take() else {
        return Sent::Deferred;
    };
    let env = [
        ("BMB_TARGET", target.to_string()),
        ("BMB_STATE", alert.state.as_str().to_string()),
        ("BMB_REASON", alert.reason.to_string()),
        // Two servers' sessions of one name are two targets to a funnel too.
        (
            "BMB_SERVER",
            own.map_or_else(|| args.server.identity(), crate::server_args::identity_of),
        ),
    ];
    let sent = run_alert_cmd(command, &env, &alert.message, args.alert_format, timeout);
    match &sent {
        Ok(()) => Sent::Delivered,
        Err(how) => {
            say(format_args!(
                "bmb-monitor: watch: {target}: alert command {how}; it will be sent again next poll"
            ));
            Sent::Failed
        }
    }
}
