//! The process id every process question takes: one that names exactly one
//! process, so that no call can address a group or every process by mistake.

/// A process id that names exactly one process (> 0). `kill(0, …)` and
/// `kill(-1, …)` address groups and every process, so they never get here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pid(u32);

impl Pid {
    /// `None` for 0 and anything above `i32::MAX` (not a pid on any kernel).
    pub fn new(raw: u32) -> Option<Pid> {
        (raw > 0 && raw <= i32::MAX as u32).then_some(Pid(raw))
    }

    /// The number, for a syscall or a message.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for Pid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
