//! One `/proc` scan: the process tree and every process's CPU clock.
//!
//! The seed sampled CPU with a `ps` snapshot per pass; here one directory walk
//! of `/proc` reads each `/proc/<pid>/stat` once and builds both the
//! parent → children map and the CPU ticks, so a pass costs no fork at all
//! (SPEC §6, §9: "one `/proc` scan, no `ps` forks").

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::os::pid::Pid;

/// One `/proc/<pid>/stat` line, its fields numbered as proc(5) numbers
/// them: 1 the pid, 2 the command name, 3 the state letter, 4 the parent, …
/// The name sits in parentheses and may itself hold spaces and `)` (a
/// process can name itself `a) R 1`), so the fields from 3 on are counted
/// after the LAST `)`. Every reader of the file goes through this one parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The line, a name that is not UTF-8 made lossy (no `)` comes of that).
    line: String,
    /// The name's opening `(` and the last `)`.
    open: usize,
    close: usize,
    pid: u32,
    state: u8,
}

impl Stat {
    /// `None` unless the line has a pid, a name in parentheses and a state.
    pub fn parse(line: impl Into<Vec<u8>>) -> Option<Stat> {
        let line = String::from_utf8(line.into())
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let open = line.find('(')?;
        let close = line.rfind(')').filter(|&close| close > open)?;
        let pid = line[..open].trim().parse().ok()?;
        let state = *line[close + 1..]
            .split_ascii_whitespace()
            .next()?
            .as_bytes()
            .first()?;
        Some(Stat {
            line,
            open,
            close,
            pid,
            state,
        })
    }

    /// `<proc_root>/<pid>/stat`; `None` when the process is gone or the line is not one.
    pub fn read(proc_root: &Path, pid: u32) -> Option<Stat> {
        Stat::parse(std::fs::read(proc_root.join(pid.to_string()).join("stat")).ok()?)
    }

    /// `/proc/<pid>/stat`.
    pub fn of(pid: u32) -> Option<Stat> {
        Stat::read(Path::new("/proc"), pid)
    }

    /// Field 1.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Field 2 without its parentheses: the executable's name (whatever
    /// `argv[0]` says), cut at 15 bytes by the kernel.
    pub fn comm(&self) -> &str {
        &self.line[self.open + 1..self.close]
    }

    /// Field 3: `R`, `S`, `D`, `T`, `t`, `Z`, `X`, …
    pub fn state(&self) -> u8 {
        self.state
    }

    /// The process has exited and waits to be reaped (`Z` zombie, `X` or
    /// the old `x` dead): for every question here, it is gone.
    pub fn has_exited(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }

    /// Field `n` (proc(5)'s numbering, from 1) as written, if the line has it.
    pub fn field(&self, n: usize) -> Option<&str> {
        match n {
            0 => None,
            1 => Some(self.line[..self.open].trim()),
            2 => Some(self.comm()),
            n => self.line[self.close + 1..]
                .split_ascii_whitespace()
                .nth(n - 3),
        }
    }

    fn number<T: std::str::FromStr>(&self, n: usize) -> Option<T> {
        self.field(n)?.parse().ok()
    }

    /// Field 4.
    pub fn ppid(&self) -> Option<u32> {
        self.number(4)
    }

    /// Field 5: the process group.
    pub fn pgrp(&self) -> Option<i64> {
        self.number(5)
    }

    /// Field 7: the controlling terminal's device number, 0 for none.
    pub fn tty_nr(&self) -> Option<i64> {
        self.number(7)
    }

    /// Field 8: the terminal's foreground process group, -1 for no terminal.
    pub fn tpgid(&self) -> Option<i64> {
        self.number(8)
    }

    /// Fields 14 + 15, utime + stime: CPU this process itself used, in clock ticks.
    pub fn own_ticks(&self) -> Option<u64> {
        self.number::<u64>(14)?.checked_add(self.number(15)?)
    }

    /// Fields 16 + 17, cutime + cstime: CPU of children it has waited for, in clock ticks.
    pub fn reaped_children_ticks(&self) -> Option<u64> {
        self.number::<u64>(16)?.checked_add(self.number(17)?)
    }

    /// Field 22: when the process started, in clock ticks since boot. With
    /// the pid it names one process for good (Claude Code's `procStart`).
    pub fn start_ticks(&self) -> Option<u64> {
        self.number(22)
    }
}

/// One process as `/proc/<pid>/stat` describes it: what a scan keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The process.
    pub pid: u32,
    /// Its parent, which puts it in the tree.
    pub ppid: u32,
    /// The state letter (`R`, `S`, `Z`, ...).
    pub state: u8,
    /// utime + stime: CPU this process itself used, in clock ticks.
    pub own_ticks: u64,
    /// cutime + cstime: CPU of children it has waited for, in clock ticks.
    pub reaped_children_ticks: u64,
}

impl ProcStat {
    /// `None` when the line lacks a field a scan needs.
    pub fn of(stat: &Stat) -> Option<ProcStat> {
        Some(ProcStat {
            pid: stat.pid(),
            state: stat.state(),
            ppid: stat.ppid()?,
            own_ticks: stat.own_ticks()?,
            reaped_children_ticks: stat.reaped_children_ticks()?,
        })
    }
}

/// The process in the foreground of a terminal, as `/proc` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForegroundProcess {
    /// Its name from `/proc/<pid>/stat` (the executable's, whatever `argv[0]`
    /// says: `exec -a agentsh bash` is still `bash` here).
    pub comm: String,
    /// A child of it runs in the foreground process group (not stopped, not a
    /// zombie). A wrapper (`bash -c claude`) has the agent there; an
    /// interactive shell's background and stopped jobs are in groups of their
    /// own, so they do not count: the shell itself reads the terminal.
    pub running_child: bool,
    /// The names of its running children in the front group (`ssh` under
    /// `bash -c 'ssh box; bash'`, the agent under a wrapper).
    pub children_in_front: Vec<String>,
    /// The terminal wrappers it was found behind, outermost first (`script`).
    pub outer: Vec<String>,
}

/// The foreground of `pid`'s terminal: `pid`'s `tpgid` names the terminal's
/// foreground process group, whose leader is asked for its name, its
/// children and what it waits on. A leader named in `follow_through` (a
/// terminal wrapper: `script`, sudo's `use_pty`, `poetry shell`) whose child
/// runs on a terminal of its own shows that terminal, so its foreground is
/// followed, a few levels deep; any other program's own terminals (an
/// agent's background shells) are its business, not what the pane shows.
/// `None` when it cannot be read (no such process, no terminal, the leader
/// gone).
pub(crate) fn foreground_of(pid: u32, follow_through: &[&str]) -> Option<ForegroundProcess> {
    foreground_of_in(Path::new("/proc"), pid, follow_through)
}

/// How many terminals inside terminals are followed.
const MAX_NESTED_TERMINALS: usize = 4;

/// As [`foreground_of`], with `/proc` at `root` (tests).
fn foreground_of_in(root: &Path, pid: u32, follow_through: &[&str]) -> Option<ForegroundProcess> {
    let stat = |pid: u32| Stat::read(root, pid);
    let mut at = pid;
    let mut found = None;
    let mut outer: Vec<String> = Vec::new();
    for _ in 0..=MAX_NESTED_TERMINALS {
        let Some(stat_at) = stat(at) else { break };
        let (Some(tty), Some(tpgid)) = (stat_at.tty_nr(), stat_at.tpgid()) else {
            break;
        };
        let Some(leader) = u32::try_from(tpgid).ok().filter(|&l| l > 0) else {
            break;
        };
        let Some(comm) = stat(leader).map(|leader| leader.comm().to_owned()) else {
            break;
        };
        let Ok(tasks) = std::fs::read_dir(root.join(leader.to_string()).join("task")) else {
            break;
        };
        let mut children_in_front = Vec::new();
        let mut nested = None;
        for task in tasks.filter_map(Result::ok) {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children
                .split_ascii_whitespace()
                .filter_map(|c| c.parse().ok())
            {
                let Some(child_stat) = stat(child) else {
                    continue;
                };
                let running = !matches!(child_stat.state(), b'T' | b't' | b'Z' | b'X');
                if running && child_stat.pgrp() == Some(tpgid) {
                    children_in_front.push(child_stat.comm().to_owned());
                }
                let own_terminal = child_stat.tty_nr().is_some_and(|t| t != 0 && t != tty);
                if running && own_terminal && nested.is_none() {
                    nested = Some(child);
                }
            }
        }
        // A shell reading or polling its terminal is at its prompt, whatever
        // it started in the background from a startup file (before job
        // control); one waiting for its child (bash `do_wait`, zsh
        // `sigsuspend`, fish a futex) runs a program in front of it.
        let wchan = std::fs::read_to_string(root.join(leader.to_string()).join("wchan"))
            .ok()
            .filter(|w| !w.is_empty() && w != "0");
        let at_prompt = wchan.as_deref().is_some_and(reads_the_terminal);
        let running_child = !children_in_front.is_empty() && !at_prompt;
        let wrapper = follow_through.contains(&comm.as_str());
        found = Some(ForegroundProcess {
            comm: comm.clone(),
            running_child,
            children_in_front,
            outer: outer.clone(),
        });
        match nested.filter(|_| wrapper) {
            Some(child) => {
                outer.push(comm);
                at = child;
            }
            None => break,
        }
    }
    found
}

/// Kernel wait channels of a process blocked reading or polling a terminal
/// (readline, zle, fish's reader): a shell there is at its prompt.
const TERMINAL_READ_WCHANS: &[&str] = &[
    "n_tty_read",
    "wait_woken",
    "poll_schedule_timeout",
    "do_select",
    "do_sys_poll",
    "core_sys_select",
    "ep_poll",
];

fn reads_the_terminal(wchan: &str) -> bool {
    TERMINAL_READ_WCHANS.iter().any(|w| wchan.starts_with(w))
}

/// The whole process table at one moment.
#[derive(Debug, Clone, Default)]
pub struct ProcessTable {
    processes: HashMap<u32, ProcStat>,
    children: HashMap<u32, Vec<u32>>,
}

impl ProcessTable {
    /// Scan `/proc`. Processes that exit mid-scan are simply absent.
    pub fn scan() -> std::io::Result<ProcessTable> {
        ProcessTable::scan_root(Path::new("/proc"))
    }

    /// Scan a `/proc`-shaped directory (tests point this at a fixture).
    pub fn scan_root(root: &Path) -> std::io::Result<ProcessTable> {
        let mut stats = Vec::new();
        for entry in std::fs::read_dir(root)? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Ok(line) = std::fs::read(entry.path().join("stat"))
                && let Some(stat) = Stat::parse(line).as_ref().and_then(ProcStat::of)
            {
                stats.push(stat);
            }
        }
        Ok(ProcessTable::from_stats(stats))
    }

    /// A table from stats already read (tests and benches build one by hand).
    pub fn from_stats(stats: impl IntoIterator<Item = ProcStat>) -> ProcessTable {
        let mut table = ProcessTable::default();
        for stat in stats {
            table.children.entry(stat.ppid).or_default().push(stat.pid);
            table.processes.insert(stat.pid, stat);
        }
        table
    }

    /// What the scan read for `pid`, if it was there.
    pub fn get(&self, pid: u32) -> Option<&ProcStat> {
        self.processes.get(&pid)
    }

    /// How many processes the scan saw.
    pub fn len(&self) -> usize {
        self.processes.len()
    }

    /// True when the scan saw no process at all.
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// Every descendant of `pid` (children, their children, ...), not `pid` itself.
    pub fn descendants(&self, pid: Pid) -> Vec<u32> {
        let mut found = Vec::new();
        let mut stack = vec![pid.get()];
        while let Some(parent) = stack.pop() {
            for &child in self.children.get(&parent).into_iter().flatten() {
                // A cycle is impossible in a real table; guard anyway so a
                // corrupt fixture cannot loop forever.
                if child != pid.get() && !found.contains(&child) {
                    found.push(child);
                    stack.push(child);
                }
            }
        }
        found
    }

    /// The CPU clocks of `pid`'s DESCENDANTS, keyed by pid, in ticks.
    ///
    /// Each descendant counts its own CPU plus the CPU of children it has
    /// reaped, so a build's short-lived compiler processes still move a clock
    /// after they exit. The agent itself contributes only its reaped
    /// children's CPU, under its own pid: its OWN clock is left out, because
    /// an agent CLI can spin a core while it waits on a model.
    pub fn descendants_cpu(&self, pid: Pid) -> BTreeMap<u32, u64> {
        let mut clocks = BTreeMap::new();
        if let Some(agent) = self.get(pid.get()) {
            clocks.insert(agent.pid, agent.reaped_children_ticks);
        }
        for child in self.descendants(pid) {
            if let Some(stat) = self.get(child) {
                clocks.insert(
                    child,
                    stat.own_ticks.saturating_add(stat.reaped_children_ticks),
                );
            }
        }
        clocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(pid: u32, ppid: u32, own: u64, reaped: u64) -> ProcStat {
        ProcStat {
            pid,
            ppid,
            state: b'S',
            own_ticks: own,
            reaped_children_ticks: reaped,
        }
    }

    fn scanned(line: &[u8]) -> Option<ProcStat> {
        ProcStat::of(&Stat::parse(line)?)
    }

    #[test]
    fn parses_a_real_shaped_stat_line_with_a_hostile_name() {
        let line = b"4242 (evil) S 1 (x) R 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 11 2 20 0 1 0 1234 1000 100";
        let parsed = scanned(line).unwrap();
        assert_eq!(parsed.pid, 4242);
        assert_eq!(parsed.state, b'R');
        assert_eq!(parsed.ppid, 17);
        assert_eq!(parsed.own_ticks, 10);
        assert_eq!(parsed.reaped_children_ticks, 13);
        let stat = Stat::parse(line).unwrap();
        assert_eq!(stat.comm(), "evil) S 1 (x");
        assert_eq!(stat.start_ticks(), Some(1234));
        assert_eq!((stat.tty_nr(), stat.tpgid()), (Some(0), Some(-1)));
    }

    #[test]
    fn fields_are_numbered_as_proc_5_numbers_them() {
        let stat = Stat::parse("7 (a b) t 1 7 6 34816 9 0").unwrap();
        let fields: Vec<Option<&str>> = (0..=11).map(|n| stat.field(n)).collect();
        let expected = [
            None,
            Some("7"),
            Some("a b"),
            Some("t"),
            Some("1"),
            Some("7"),
            Some("6"),
            Some("34816"),
            Some("9"),
            Some("0"),
            None,
            None,
        ];
        assert_eq!(fields, expected);
        assert_eq!((stat.pid(), stat.state(), stat.ppid()), (7, b't', Some(1)));
        assert_eq!((stat.pgrp(), stat.tty_nr()), (Some(7), Some(34816)));
        // A short line has no CPU clocks, and a scan does not take it.
        assert_eq!((stat.own_ticks(), stat.start_ticks()), (None, None));
        assert_eq!(ProcStat::of(&stat), None);
    }

    #[test]
    fn exited_is_a_zombie_or_dead_and_a_name_need_not_be_utf8() {
        for (line, exited) in [
            (&b"42 (a) Z 1"[..], true),
            (b"42 (a) X 1", true),
            (b"42 (a) x 1", true),
            (b"42 (a) S 1", false),
            (b"42 (Z) R 1", false),
        ] {
            assert_eq!(Stat::parse(line).unwrap().has_exited(), exited);
        }
        let stat = Stat::parse(&b"5 (caf\xe9)) D 1"[..]).unwrap();
        assert_eq!((stat.comm(), stat.state()), ("caf\u{fffd})", b'D'));
    }

    #[test]
    fn refuses_truncated_or_garbage_lines() {
        for line in [
            &b""[..],
            b"seven",
            b"abc (x) S 1",
            b"12 (x)",
            b"12 (x)  ",
            b"12 ) (x S",
            b"(x) S 1",
        ] {
            assert_eq!(
                Stat::parse(line),
                None,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(scanned(b"12 (x) S 1 2"), None);
        assert_eq!(scanned(b"abc (x) S 1 1 1 0 -1 0 0 0 0 0 1 1 1 1"), None);
    }

    #[test]
    fn this_process_reads_as_running_with_its_parent_and_start() {
        let me = Stat::of(std::process::id()).unwrap();
        assert_eq!(me.pid(), std::process::id());
        assert_eq!(me.ppid(), Some(std::os::unix::process::parent_id()));
        assert!(!me.has_exited());
        assert!(me.start_ticks().is_some_and(|t| t > 0));
        assert_eq!(Stat::of(999_999_999), None);
    }

    #[test]
    fn descendants_walk_the_whole_subtree_but_not_the_root_or_siblings() {
        let table = ProcessTable::from_stats([
            stat(10, 1, 0, 0),
            stat(11, 10, 0, 0),
            stat(12, 11, 0, 0),
            stat(13, 10, 0, 0),
            stat(20, 1, 0, 0),
        ]);
        let mut found = table.descendants(Pid::new(10).unwrap());
        found.sort();
        assert_eq!(found, vec![11, 12, 13]);
    }

    #[test]
    fn descendants_cpu_leaves_out_the_agents_own_clock() {
        let table = ProcessTable::from_stats([stat(10, 1, 500, 7), stat(11, 10, 3, 4)]);
        let clocks = table.descendants_cpu(Pid::new(10).unwrap());
        assert_eq!(clocks, BTreeMap::from([(10, 7), (11, 7)]));
    }

    #[test]
    fn the_foreground_of_a_fake_proc_is_its_leaders_name_and_its_children_in_front() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = root.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        let front = |running_child| Some(("a) b".to_string(), running_child));
        let read =
            || foreground_of_in(root.path(), 10, &["script"]).map(|f| (f.comm, f.running_child));
        // The pane's first process (10) with tpgid 20: process 20, named `a) b`, is in front.
        write("10/stat", "10 (bash) S 1 10 10 34816 20 4194560 0 0");
        write("20/stat", "20 (a) b) S 10 20 10 34816 20 4194560 0 0");
        write("20/task/20/children", "");
        write("20/task/21/children", "");
        assert_eq!(read(), front(false));
        // A background job (its own group 30) and a stopped job do not count.
        write("20/task/21/children", "30 31");
        write("30/stat", "30 (sleep) S 20 30 10 34816 20 0");
        write("31/stat", "31 (claude) T 20 20 10 34816 20 0");
        assert_eq!(read(), front(false));
        // A running child in the foreground group (a wrapper's agent) does.
        write("20/task/20/children", "32");
        write("32/stat", "32 (claude) S 20 20 10 34816 20 0");
        assert_eq!(read(), front(true));
        // What runs in front under the wrapper is named (a relay there is one).
        let names = foreground_of_in(root.path(), 10, &[])
            .unwrap()
            .children_in_front;
        assert_eq!(names, ["claude"]);
        // Waiting for that child, it is a wrapper (bash, zsh, fish each wait
        // their own way); at its prompt (reading the terminal), the child is
        // a job it started before job control.
        for waiting in ["do_wait", "sigsuspend", "futex_do_wait"] {
            write("20/wchan", waiting);
            assert_eq!(read(), front(true), "{waiting}");
        }
        write("20/wchan", "poll_schedule_timeout.constprop.0");
        assert_eq!(read(), front(false));
        // `script` (40) in front runs bash (41) on a terminal of its own
        // (tty 34817): what the pane shows is that terminal's foreground.
        write("15/stat", "15 (sh) S 1 15 15 34816 40 0");
        write("40/stat", "40 (script) S 15 40 15 34816 40 0");
        write("40/task/40/children", "41");
        write("41/stat", "41 (bash) S 40 41 41 34817 41 0");
        write("41/task/41/children", "");
        write("41/wchan", "n_tty_read");
        let inner = foreground_of_in(root.path(), 15, &["script"]).unwrap();
        assert_eq!((inner.comm.as_str(), inner.running_child), ("bash", false));
        assert_eq!(inner.outer, ["script"]);
        // Any other program's own terminal (an agent's background shell) is not followed.
        let agent = foreground_of_in(root.path(), 15, &[]).unwrap();
        assert_eq!(agent.comm, "script");
        // No terminal (tpgid -1), a missing leader, garbage: unknown.
        write("11/stat", "11 (daemon) S 1 11 11 0 -1 0");
        write("12/stat", "12 (x) S 1 12 12 34816 99 0");
        write("13/stat", "seven");
        for pid in [11, 12, 13, 14] {
            assert_eq!(foreground_of_in(root.path(), pid, &[]), None, "{pid}");
        }
    }

    #[test]
    fn a_real_scan_finds_this_process_and_a_child_under_it() {
        #[expect(
            clippy::disallowed_methods,
            reason = "probes may spawn; a real child to find"
        )]
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let table = ProcessTable::scan().unwrap();
        let me = Pid::new(std::process::id()).unwrap();
        let found = table.descendants(me).contains(&child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(table.get(std::process::id()).is_some());
        assert!(
            found,
            "the child {} is a descendant of this test",
            child.id()
        );
    }
}
