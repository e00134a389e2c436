//! A host's outage said once on stderr: when every pane of a host with more
//! than one target fails alike and the host answered none (its sshd or its
//! tmux server is down), one line says so, and its targets' own error lines are left out while it
//! lasts (twenty stopped panes were twenty lines); one more line says when
//! it answers again. The alert side is `watchdog::session::alerts::HostBook`.

use std::collections::BTreeSet;

use crate::output::say;

#[derive(Debug, Default)]
pub(super) struct Outages {
    /// The hosts down at the last cycle (`None`: this machine).
    down: BTreeSet<Option<String>>,
}

impl Outages {
    /// One host's targets as they were just polled, per target `(host
    /// answered, capture error)`: whether the host is down (so its
    /// targets' own error lines are not said). A host going down or
    /// answering again is said here. Each host is judged on its own, when
    /// its answer comes (or its deadline passes).
    pub(super) fn host(&mut self, host: Option<&str>, polls: &[(bool, Option<&str>)]) -> bool {
        // One target's own line says as much as a host's would.
        let failure = watchdog::session::board::shared_failure(polls.iter().copied())
            .filter(|_| polls.len() > 1);
        let key = host.map(str::to_string);
        let was_down = self.down.contains(&key);
        let name = host.map_or("this machine's tmux server".to_string(), |h| {
            format!("host {h}")
        });
        match failure {
            Some(error) => {
                if !was_down {
                    let n = polls.len();
                    say(format_args!(
                        "bmb-monitor: watch: {name} unreachable: {error} ({n} target{}; their own errors are not said while it lasts)",
                        if n == 1 { "" } else { "s" }
                    ));
                }
                self.down.insert(key);
                true
            }
            None => {
                if was_down {
                    say(format_args!("bmb-monitor: watch: {name} answers again"));
                    self.down.remove(&key);
                }
                false
            }
        }
    }

    /// Forgets the hosts no longer watched (a reload, an ended pattern's last session).
    pub(super) fn keep_hosts<'h>(&mut self, hosts: impl Iterator<Item = Option<&'h str>>) {
        let hosts: BTreeSet<Option<String>> = hosts.map(|h| h.map(str::to_string)).collect();
        self.down.retain(|host| hosts.contains(host));
    }
}
