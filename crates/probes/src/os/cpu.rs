//! CPU percentage of a process tree between two samples: auxiliary evidence
//! that a silent agent is still computing.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::os::pid::Pid;
use crate::os::procfs::ProcessTable;

/// Samples closer together than this measure noise, not work.
const MIN_WINDOW: Duration = Duration::from_millis(500);

/// The last sample per pid: when, and the tree's CPU ticks then.
#[derive(Debug, Default)]
pub struct CpuSampler {
    samples: HashMap<u32, (Instant, u64)>,
}

impl CpuSampler {
    /// An empty sampler: every process's first sample gives no figure.
    pub fn new() -> CpuSampler {
        CpuSampler::default()
    }

    /// The tree's CPU (the process's own ticks, its reaped children's, and
    /// every descendant's) since the previous call for this pid, in percent
    /// of one core; `None` on the first call, for a pid that is gone, or
    /// when it cannot be measured.
    pub fn sample(&mut self, pid: u32) -> Option<u32> {
        let ticks = Pid::new(pid).and_then(|p| {
            let table = ProcessTable::scan().ok()?;
            let own = table.get(pid)?.own_ticks;
            Some(own + table.descendants_cpu(p).values().sum::<u64>())
        });
        self.record(
            pid,
            Instant::now(),
            ticks,
            crate::os::clock::ticks_per_second(),
        )
    }

    /// [`Self::sample`] with the reading given: `ticks` is the tree's total
    /// at `now`, `None` when the pid is gone.
    pub fn record(
        &mut self,
        pid: u32,
        now: Instant,
        ticks: Option<u64>,
        ticks_per_second: u64,
    ) -> Option<u32> {
        let Some(ticks) = ticks else {
            self.samples.remove(&pid);
            return None;
        };
        let (then, before) = self.samples.insert(pid, (now, ticks))?;
        percent(before, ticks, now.duration_since(then), ticks_per_second)
    }
}

/// `ticks_after - ticks_before` over `elapsed`, in percent of one core.
/// `None` for a window under `MIN_WINDOW` (500 ms) or ticks that went backwards
/// (the pid was reused by a younger tree).
pub fn percent(
    ticks_before: u64,
    ticks_after: u64,
    elapsed: Duration,
    ticks_per_second: u64,
) -> Option<u32> {
    if elapsed < MIN_WINDOW || ticks_after < ticks_before || ticks_per_second == 0 {
        return None;
    }
    let cpu_secs = (ticks_after - ticks_before) as f64 / ticks_per_second as f64;
    Some((cpu_secs / elapsed.as_secs_f64() * 100.0).round() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(before: u64, after: u64, millis: u64, expected: Option<u32>) {
        assert_eq!(
            percent(before, after, Duration::from_millis(millis), 100),
            expected,
            "{before} -> {after} ticks in {millis} ms"
        );
    }

    #[test]
    fn percent_of_one_core_between_two_samples() {
        check(0, 0, 1000, Some(0));
        check(0, 50, 1000, Some(50));
        check(100, 300, 2000, Some(100));
        check(0, 400, 2000, Some(200));
        check(0, 1, 3000, Some(0));
        check(0, 50, 499, None);
        check(0, 50, 500, Some(100));
        check(300, 100, 1000, None);
    }

    #[test]
    fn the_first_sample_says_nothing_and_a_gone_pid_starts_over() {
        let mut sampler = CpuSampler::new();
        let t0 = Instant::now();
        assert_eq!(sampler.record(7, t0, Some(1000), 100), None);
        assert_eq!(
            sampler.record(7, t0 + Duration::from_secs(2), Some(1100), 100),
            Some(50)
        );
        assert_eq!(
            sampler.record(7, t0 + Duration::from_secs(3), None, 100),
            None
        );
        assert_eq!(
            sampler.record(7, t0 + Duration::from_secs(4), Some(5000), 100),
            None,
            "after the pid was gone, the next sample is a first one"
        );
        assert_eq!(
            sampler.record(8, t0 + Duration::from_secs(4), Some(0), 100),
            None,
            "pids are separate"
        );
    }
}
