//! The session monitor's alert funnel: `--alert-cmd`, or stderr without one,
//! never fatal.

use std::time::Duration;

use watchdog::session::Alert;
use watchdog::target::Target;

use super::*;
use crate::alert::run_alert_cmd;
use crate::output::{say, say_checked};

/// The alert funnel: `sh -c CMD` with the message on stdin, bounded, never
/// fatal. Whether it was delivered (without `--alert-cmd`, stderr is the funnel).
pub(super) fn send_alert(args: &Args, target: &Target, alert: &Alert) -> bool {
    let Some(command) = &args.alert_cmd else {
        // stderr is the funnel: an alert it could not take (a full disk, a
        // closed pipe) was not delivered, and is sent again next poll.
        return say_checked(format_args!(
            "bmb-monitor: alert ({}): {}",
            alert.reason,
            sanitize_text(&alert.message).replace('\n', "\n    ")
        ))
        .is_ok();
    };
    let env = [
        ("BMB_TARGET", target.to_string()),
        ("BMB_STATE", alert.state.as_str().to_string()),
        ("BMB_REASON", alert.reason.to_string()),
        // Two servers' sessions of one name are two targets to a funnel too.
        ("BMB_SERVER", args.server.identity()),
    ];
    let sent = run_alert_cmd(
        command,
        &env,
        &alert.message,
        args.alert_format,
        Duration::from_secs(args.probe_timeout),
    );
    if let Err(how) = &sent {
        say(format_args!(
            "bmb-monitor: watch: {target}: alert command {how}; it will be sent again next poll"
        ));
    }
    sent.is_ok()
}
