//! This process's own resources, as the Prometheus process collector reports
//! them (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_open_fds`, `process_max_fds`, `process_start_time_seconds`), and
//! its open-file limit: raised from the soft to the hard limit at start, so
//! a monitor of a thousand targets (one lock file each) is not cut off at
//! the usual soft limit of 1,024.

use std::io;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use crate::os::procfs::Stat;

/// One reading of this process, from `/proc/self` and `getrlimit(2)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// User and system CPU, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory in bytes (`process_resident_memory_bytes`).
    pub resident_bytes: u64,
    /// Virtual memory in bytes (`process_virtual_memory_bytes`).
    pub virtual_bytes: u64,
    /// File descriptors open now (`process_open_fds`).
    pub open_fds: u64,
    /// The soft open-file limit; `None` when unlimited.
    pub max_fds: Option<u64>,
    /// When the process started, in seconds since the epoch.
    pub start_time_seconds: f64,
}

/// This process now; `None` when `/proc` cannot be read.
pub fn usage() -> Option<Usage> {
    let stat = Stat::of(std::process::id())?;
    let number = |n: usize| stat.field(n)?.parse::<u64>().ok();
    let ticks = crate::os::clock::ticks_per_second().max(1) as f64;
    let page = rustix::param::page_size() as u64;
    let boot = boot_time()?;
    Some(Usage {
        cpu_seconds: stat.own_ticks()? as f64 / ticks,
        virtual_bytes: number(23)?,
        resident_bytes: number(24)?.saturating_mul(page),
        open_fds: open_fds()?,
        max_fds: getrlimit(Resource::Nofile).current,
        start_time_seconds: boot as f64 + stat.start_ticks()? as f64 / ticks,
    })
}

/// The descriptors this process holds now (the one reading `/proc/self/fd`
/// left out).
pub fn open_fds() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some((entries.count() as u64).saturating_sub(1))
}

/// `btime` of `/proc/stat`: when the machine booted, in seconds since the epoch.
fn boot_time() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|n| n.trim().parse().ok())
}

/// The open-file limit before and after [`raise_fd_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    /// The soft limit the process started with (`None`: unlimited).
    pub was: Option<u64>,
    /// The soft limit now.
    pub now: Option<u64>,
}

/// Raises the soft open-file limit to the hard one (what systemd's
/// `LimitNOFILE=` or `ulimit -Hn` allows): descriptors are cheap, and
/// running out of them fails every capture. An unlimited hard limit is
/// taken as the kernel's `fs.nr_open`.
pub fn raise_fd_limit() -> io::Result<FdLimit> {
    let limit = getrlimit(Resource::Nofile);
    let hard = match limit.maximum {
        Some(hard) => Some(hard),
        None => std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|n| n.trim().parse().ok()),
    };
    let was = limit.current;
    if hard.is_none() || was >= hard {
        return Ok(FdLimit { was, now: was });
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: hard,
            maximum: limit.maximum,
        },
    )?;
    Ok(FdLimit {
        was,
        now: getrlimit(Resource::Nofile).current,
    })
}

/// Whether `error` is a process (`EMFILE`) or the system (`ENFILE`) out of
/// file descriptors, and which, in words.
pub(crate) fn out_of_fds(error: &io::Error) -> Option<&'static str> {
    match error.raw_os_error() {
        Some(code) if code == rustix::io::Errno::MFILE.raw_os_error() => {
            Some("this monitor is out of file descriptors")
        }
        Some(code) if code == rustix::io::Errno::NFILE.raw_os_error() => {
            Some("the system is out of file descriptors")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_as_itself() {
        let before = usage().expect("/proc/self");
        let held: Vec<std::fs::File> = (0..5)
            .map(|_| std::fs::File::open("/dev/null").unwrap())
            .collect();
        let after = usage().expect("/proc/self");
        assert!(
            after.open_fds >= before.open_fds + 5,
            "{before:?} {after:?}"
        );
        drop(held);
        assert!(after.resident_bytes > 0 && after.virtual_bytes >= after.resident_bytes);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            after.start_time_seconds <= now + 1.0 && after.start_time_seconds > now - 86_400.0,
            "{after:?}"
        );
        assert!(after.cpu_seconds >= 0.0);
    }

    #[test]
    fn out_of_descriptors_is_named_for_what_it_is() {
        let emfile = io::Error::from_raw_os_error(24);
        assert_eq!(
            out_of_fds(&emfile),
            Some("this monitor is out of file descriptors")
        );
        assert_eq!(
            out_of_fds(&io::Error::from_raw_os_error(23)),
            Some("the system is out of file descriptors")
        );
        assert_eq!(out_of_fds(&io::Error::from_raw_os_error(2)), None);
    }
}
