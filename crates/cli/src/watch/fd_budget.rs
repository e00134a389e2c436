//! The open-file budget: the descriptors a monitor of so many targets
//! needs, the soft limit raised to the hard one, and a fleet the limit
//! cannot hold refused up front.

use watchdog::session::target::Target;

use super::serve;
use crate::output::say;

/// Descriptors a monitor needs beside one per target (its lock file): the
/// standard streams, the listener and its connections, a capture's pipes
/// on each host thread, the ssh masters' sockets, and room to spare.
const FD_RESERVE: u64 = 64 + serve::CONNECTIONS as u64;

/// Descriptors `targets` targets need ([`FD_RESERVE`] plus one lock per
/// target, a second for each of the `local` ones, locked under their tmux
/// socket's inode too, and three per remote host: its session's request,
/// answer and error pipes, as counted on a running monitor).
pub(super) fn fd_need(targets: usize, local: usize, hosts: usize) -> u64 {
    FD_RESERVE + targets as u64 + local as u64 + 3 * hosts as u64
}

/// The soft open-file limit raised to the hard one, once at the start: at
/// the usual soft limit of 1,024 a fleet of a thousand targets ran out and
/// every capture failed. The usage error when even the hard limit is too
/// few for `targets`.
pub(super) fn raise_fd_limit<'t>(targets: impl Iterator<Item = &'t Target>) -> Option<String> {
    if let Err(err) = probes::os::own::raise_fd_limit() {
        say(format_args!(
            "bmb-monitor: watch: cannot raise the open-file limit to its hard limit: {err}"
        ));
    }
    fd_shortage(targets)
}

/// Why the open-file limit cannot hold `targets` (one lock file each, and
/// [`FD_RESERVE`]), if it cannot: running short would fail captures, probes
/// and locks at random, target by target, so it is refused up front.
pub(super) fn fd_shortage<'t>(targets: impl Iterator<Item = &'t Target>) -> Option<String> {
    let (mut count, mut local) = (0, 0);
    let mut hosts = std::collections::BTreeSet::new();
    for target in targets {
        count += 1;
        local += usize::from(target.host.is_none());
        hosts.extend(target.host.as_deref());
    }
    let need = fd_need(count, local, hosts.len());
    let limit = probes::os::own::usage().and_then(|u| u.max_fds)?;
    (limit < need).then(|| {
        format!(
            "{count} targets need about {need} open files, but the limit is {limit} even raised to its hard limit \
             (LimitNOFILE= in the unit, `ulimit -Hn`)"
        )
    })
}
