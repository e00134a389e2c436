//! The session monitor's settings and the seed's defaults: what a config
//! file or the command line sets, and the constants the monitor is tuned by.

use jiff::SignedDuration;

use classify::Profiles;

/// The seed's defaults.
pub const DEFAULT_BUDGET: u32 = 5;
/// The seed's nudge: what is typed into a stalled pane.
pub const DEFAULT_NUDGE_TEXT: &str = "Please continue with the next step of your plan.";
/// An unchanged pane is re-decided at least this often, because the work
/// probe can change without the pane changing.
pub const RECLASSIFY_EVERY: u32 = 5;
/// Polls of an unchanged pane after which nothing inferred is believed: not
/// activity read from the transcript's shape, not the session file
/// overruling a stop (a turn that runs changes the screen).
pub const STILL_PANE_PATIENCE: u32 = 3;
/// After a usage limit's reset, how long before its one nudge: the CLI's
/// clock and this machine's may differ by seconds, and the CLI may continue
/// by itself (Claude Code 2.1.332 re-sent its turn 50 to 90 s after the
/// reset, checking every 30 s): then the pane is WORKING and nothing is done.
pub const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(55);
/// Polls in a row whose capture failed after which the operator is told
/// (a server restarting, a host rebooting are a poll or two).
pub const CAPTURE_FAILURE_PATIENCE: u32 = 3;

#[derive(Debug, Clone)]
/// How one target's monitor runs (a config file or the command line sets it).
pub struct SessionConfig {
    /// Nudges per stall before it is escalated ([`DEFAULT_BUDGET`]).
    pub budget: u32,
    /// The text typed into a stalled pane ([`DEFAULT_NUDGE_TEXT`]).
    pub nudge_text: String,
    /// An unchanged pane is classified afresh at least every this many polls ([`RECLASSIFY_EVERY`]).
    pub reclassify_every: u32,
    /// The profile this pane is always read with (a config file's `profile`
    /// for a CLI whose screen the markers cannot tell apart); `None`: the
    /// one whose markers the pane shows, as `auto` picks it. A name no
    /// profile in force has (a user's profile removed since) reads as `None`.
    pub profile: Option<String>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            budget: DEFAULT_BUDGET,
            nudge_text: DEFAULT_NUDGE_TEXT.to_string(),
            reclassify_every: RECLASSIFY_EVERY,
            profile: None,
        }
    }
}

/// The built-in profiles, shared by every monitor that has no others.
pub fn builtin_profiles() -> std::sync::Arc<Profiles> {
    static BUILTIN: std::sync::OnceLock<std::sync::Arc<Profiles>> = std::sync::OnceLock::new();
    BUILTIN
        .get_or_init(|| std::sync::Arc::new(Profiles::builtin().clone()))
        .clone()
}

/// Whether a probe command must run once per target: only one that reads
/// `BMB_TARGET` can answer differently for each; any other runs once a cycle.
pub fn probe_runs_per_target(command: &str) -> bool {
    command.contains("BMB_TARGET")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_probe_that_reads_its_target_runs_per_target() {
        assert!(probe_runs_per_target("grep -c . \"todo-$BMB_TARGET\""));
        assert!(probe_runs_per_target("count ${BMB_TARGET}"));
        assert!(!probe_runs_per_target("echo 3"));
    }
}
