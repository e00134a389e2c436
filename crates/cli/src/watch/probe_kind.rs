//! The two probes a target may have (work and progress): what the probes'
//! plan (`probe.rs`) runs and the metrics (`metrics.rs`) count, by kind.

use super::target_settings::TargetSettings;

/// The two probes a target may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Work,
    Progress,
}

impl Kind {
    /// Both kinds, work first: the order of a target's two probe slots.
    pub(super) const BOTH: [Kind; 2] = [Kind::Work, Kind::Progress];

    /// The kind's name, as messages and metric labels spell it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Work => "work",
            Kind::Progress => "progress",
        }
    }

    /// The target's command for this kind of probe, if it has one.
    pub(super) fn command(self, settings: &TargetSettings) -> Option<&str> {
        match self {
            Kind::Work => settings.work_probe.as_deref(),
            Kind::Progress => settings.progress_probe.as_deref(),
        }
    }
}
