//! The alert funnel: `--alert-cmd`, or stderr without one, never fatal.

use std::time::Duration;

use probes::run::{self, Invocation, Limits, Outcome};
use watchdog::session::Alert;
use watchdog::target::Target;

use super::*;
use crate::output::{say, say_checked};

/// The alert funnel: `sh -c CMD` with the message on stdin, bounded, never
/// fatal. Whether it was delivered (without `--alert-cmd`, stderr is the funnel).
/// `own`: the target's own tmux server, when its `[[targets]]` table names one.
pub(super) fn send_alert(
    args: &Args,
    target: &Target,
    own: Option<&probes::tmux::Server>,
    alert: &Alert,
) -> bool {
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
        (
            "BMB_SERVER",
            own.map_or_else(|| args.server.identity(), crate::server_args::identity_of),
        ),
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

/// `sh -c COMMAND` with `message` on stdin (sanitised, and HTML-escaped for
/// `html`) and `env` set, bounded by `timeout`: delivered when it exits 0,
/// else how it ended. Every command's alert funnel.
pub(crate) fn run_alert_cmd(
    command: &str,
    env: &[(&str, String)],
    message: &str,
    format: AlertFormat,
    timeout: Duration,
) -> Result<(), String> {
    let message = match format {
        AlertFormat::Text => sanitize_text(message),
        AlertFormat::Html => escape_html(&sanitize_text(message)),
    };
    let mut invocation = Invocation::shell(command).stdin(message.into_bytes());
    for (key, value) in env {
        invocation = invocation.env(key, value);
    }
    let outcome = run::run(&invocation, &Limits::with_timeout(timeout));
    match outcome {
        Outcome::Exited { code: Some(0), .. } => Ok(()),
        _ => Err(outcome.describe()),
    }
}

/// No control character or escape sequence reaches a terminal or a chat:
/// every line as the classifier reads it (escapes and controls removed).
pub fn sanitize_text(text: &str) -> String {
    classify::plain_text(text)
}

pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_text_loses_escapes_and_controls_and_html_is_escaped() {
        assert_eq!(
            sanitize_text("a\u{1b}[31mred\u{1b}[0m\u{7}\nb\tc\r"),
            "ared\nb c"
        );
        assert_eq!(
            sanitize_text("\u{1b}]0;pwned\u{7}title\u{1b}]8;;x\u{1b}\\link\nok"),
            "titlelink\nok"
        );
        // A right-to-left override would make `No` read as `oN`-spoofed text in a chat.
        assert_eq!(
            sanitize_text("Allow \u{202e}?seY\u{202c} \u{2066}x\u{2069}"),
            "Allow ?seY x"
        );
        assert_eq!(
            escape_html("<b>\"x\" & 'y'</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }
}
