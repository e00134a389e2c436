//! A host's outage said once on stderr: when every pane of a host with more
//! than one target fails alike and the host answered none (its sshd or its
//! tmux server is down), one line says so, and its targets' own error lines are left out while it
//! lasts (twenty stopped panes were twenty lines); one more line says when
//! it answers again. The alert side is `watchdog::session::alerts::HostBook`.

use std::collections::{BTreeMap, BTreeSet};

use crate::output::say;

#[derive(Debug, Default)]
pub(super) struct Outages {
    /// The hosts down at the last cycle (`None`: this machine).
    down: BTreeSet<Option<String>>,
}

impl Outages {
    /// This cycle's captures, per target `(host, host answered, capture
    /// error)`: per target, whether its host is down (so its own error line
    /// is not said). A host going down or answering again is said here.
    pub(super) fn cycle<'a>(
        &mut self,
        targets: &[(Option<&'a str>, bool, Option<&'a str>)],
    ) -> Vec<bool> {
        let mut hosts: BTreeMap<Option<&str>, Vec<(bool, Option<&str>)>> = BTreeMap::new();
        for (host, answered, error) in targets {
            hosts.entry(*host).or_default().push((*answered, *error));
        }
        let mut down_now = BTreeSet::new();
        for (host, polls) in &hosts {
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
                    down_now.insert(key);
                }
                None if was_down => say(format_args!("bmb-monitor: watch: {name} answers again")),
                None => {}
            }
        }
        let flags = targets
            .iter()
            .map(|(host, _, _)| down_now.contains(&host.map(str::to_string)))
            .collect();
        self.down = down_now;
        flags
    }
}
