//! The alert command every command shares (`watch`, `audit`): `sh -c CMD`
//! with the message on stdin, sanitised for a terminal or escaped for an
//! HTML funnel, bounded, never fatal. Its own module, so that `watch` and
//! `audit` both use it and neither uses the other for it.

use std::time::Duration;

use probes::run::{self, Invocation, Limits, Outcome};

/// How an alert command receives its message (`--alert-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AlertFormat {
    /// Plain text, control characters removed.
    Text,
    /// HTML-escaped, for HTML funnels such as a chat bot.
    Html,
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
pub(crate) fn sanitize_text(text: &str) -> String {
    classify::plain_text(text)
}

/// `text` safe inside HTML: the five characters that could open markup or
/// end an attribute, as entities.
pub(crate) fn escape_html(text: &str) -> String {
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
