//! The audit's news through the user's alert command.

use std::time::Duration;

use crate::alert::{AlertFormat, run_alert_cmd};
use crate::output::say;

/// The audit's news through the alert command, bounded, never fatal.
pub(super) fn send_alert(command: &str, format: AlertFormat, project: &str, news: &str) {
    let env = [
        ("BMB_PROJECT", project.to_string()),
        ("BMB_REASON", "audit".to_string()),
    ];
    if let Err(how) = run_alert_cmd(command, &env, news, format, Duration::from_secs(60)) {
        say(format_args!(
            "bmb-monitor: audit: alert command {how}; the report is kept"
        ));
    }
}
