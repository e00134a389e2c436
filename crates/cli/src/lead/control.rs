//! Control messages, from stdin and from the inbox folder, applied to the
//! monitor; a bad one is one error line naming where it came from.

use probes::fs::inbox::Inbox;
use watchdog::lead::{Applied, LeadMonitor, parse_control};

use super::sinks::Sinks;

/// Where a control message came from, for its error line.
pub(super) enum Source {
    Stdin(u64),
    Inbox(String),
}

/// Applies one message; a bad one is one error line naming the field. True on shutdown.
pub(super) fn apply(
    monitor: &mut LeadMonitor,
    text: &str,
    source: Source,
    sinks: &mut Sinks,
) -> bool {
    if text.trim().is_empty() {
        return false;
    }
    let result = match parse_control(text) {
        Ok(control) => monitor
            .apply(control, probes::os::clock::now_epoch())
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match result {
        Ok(Applied::Shutdown) => true,
        Ok(Applied::Continue) => false,
        Err(why) => {
            let from = match source {
                Source::Stdin(n) => format!("stdin line {n}"),
                Source::Inbox(name) => format!("inbox file {name}"),
            };
            sinks.error(&format!("lead: bad control message ({from}): {why}"));
            false
        }
    }
}

/// Applies every message waiting in the inbox (`probes::fs::inbox`); true on
/// shutdown (the files not reached stay for a later start).
pub(super) fn consume(inbox: &mut Inbox, monitor: &mut LeadMonitor, sinks: &mut Sinks) -> bool {
    let mut pass = inbox.pass();
    for item in pass.by_ref() {
        match item {
            Ok(message) => {
                let mut shutdown = false;
                for line in message.text.lines() {
                    let source = Source::Inbox(message.name.clone());
                    shutdown |= apply(monitor, line, source, sinks);
                }
                if shutdown {
                    return true;
                }
            }
            Err(problem) => sinks.inbox_problem(&problem),
        }
    }
    if pass.listed() {
        sinks.clear("inbox");
    }
    false
}
