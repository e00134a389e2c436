//! The agent's pid, remembered once seen alive.

use super::PidReading;

/// Once a pid has been seen alive it is remembered: a wrapper that removes
/// the pid file after its agent exits must not leave the monitor waiting
/// for ever in "not recorded", and `gone` must still be published.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RememberedPid {
    known: Option<u32>,
}

impl RememberedPid {
    /// Nothing remembered yet.
    pub fn new() -> RememberedPid {
        RememberedPid::default()
    }

    /// What the pid file says (`file`), with the remembered pid standing in
    /// when the file no longer names one; `is_alive` is asked only then.
    pub fn read(&mut self, file: PidReading, is_alive: impl FnOnce(u32) -> bool) -> PidReading {
        match file {
            PidReading::Alive(pid) => {
                self.known = Some(pid);
                PidReading::Alive(pid)
            }
            PidReading::Dead(pid) => PidReading::Dead(pid),
            PidReading::NotRecorded { reason } => match self.known {
                Some(pid) if is_alive(pid) => PidReading::Alive(pid),
                Some(pid) => PidReading::Dead(pid),
                None => PidReading::NotRecorded { reason },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_recorded() -> PidReading {
        PidReading::NotRecorded {
            reason: "the pid file does not exist yet".to_string(),
        }
    }

    /// Feeds `readings` (the file's answer, and whether the remembered pid
    /// lives) in order and checks each answer.
    fn check(readings: &[(PidReading, bool, PidReading)]) {
        let mut remembered = RememberedPid::new();
        for (step, (file, alive, expected)) in readings.iter().enumerate() {
            let got = remembered.read(file.clone(), |_| *alive);
            assert_eq!(&got, expected, "step {step}");
        }
    }

    #[test]
    fn a_pid_seen_alive_outlives_its_pid_file() {
        check(&[
            (not_recorded(), true, not_recorded()),
            (PidReading::Alive(42), true, PidReading::Alive(42)),
            (not_recorded(), true, PidReading::Alive(42)),
            (not_recorded(), false, PidReading::Dead(42)),
        ]);
    }

    #[test]
    fn a_pid_never_seen_alive_is_not_remembered() {
        check(&[
            (PidReading::Dead(7), true, PidReading::Dead(7)),
            (not_recorded(), true, not_recorded()),
        ]);
    }

    #[test]
    fn the_newest_live_pid_is_the_one_remembered() {
        check(&[
            (PidReading::Alive(1), true, PidReading::Alive(1)),
            (PidReading::Alive(2), true, PidReading::Alive(2)),
            (not_recorded(), false, PidReading::Dead(2)),
        ]);
    }
}
