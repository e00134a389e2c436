//! This process's run: its pid and start time, so a later process that
//! reuses the pid is another run. Locks name the run that took them, and the
//! commands a run starts carry it in their tag, so a restarted monitor finds
//! what an ended run left.

use crate::os::procfs::Stat;

/// This process's run: `<pid>-<start time in clock ticks since boot>`, so
/// a later process that reuses the pid is another run. Every tag this
/// process sets begins with it and a `.`.
pub(crate) fn this_run() -> &'static str {
    static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let pid = std::process::id();
        let start = Stat::of(pid)
            .and_then(|stat| stat.start_ticks())
            .unwrap_or(0);
        format!("{pid}-{start}")
    })
}

/// Whether the process of `run` (as [`this_run`] names it) still runs.
pub(crate) fn run_is_alive(run: &str) -> bool {
    let Some((pid, start)) = run.split_once('-') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    Stat::of(pid).is_some_and(|stat| !stat.has_exited() && stat.start_ticks() == Some(start))
}
