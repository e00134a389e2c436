//! One `/proc` scan: the process tree and every process's CPU clock.
//!
//! The seed sampled CPU with a `ps` snapshot per pass; here one directory walk
//! of `/proc` reads each `/proc/<pid>/stat` once and builds both the
//! parent → children map and the CPU ticks, so a pass costs no fork at all
//! (SPEC §6, §9: "one `/proc` scan, no `ps` forks").

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::process::Pid;

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    pub ppid: u32,
    pub state: u8,
    /// utime + stime: CPU this process itself used, in clock ticks.
    pub own_ticks: u64,
    /// cutime + cstime: CPU of children it has waited for, in clock ticks.
    pub reaped_children_ticks: u64,
}

/// Parse one `/proc/<pid>/stat` line. The command name sits in parentheses
/// and may hold spaces and `)`, so fields are counted after the LAST `)`.
pub fn parse_stat(line: &[u8]) -> Option<ProcStat> {
    let open = line.iter().position(|&b| b == b'(')?;
    let close = line.iter().rposition(|&b| b == b')')?;
    let pid: u32 = std::str::from_utf8(&line[..open])
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let rest = std::str::from_utf8(line.get(close + 1..)?).ok()?;
    // After the name: state(3) ppid(4) pgrp sess tty tpgid flags minflt
    // cminflt majflt cmajflt utime(14) stime(15) cutime(16) cstime(17).
    let fields: Vec<&str> = rest.split_ascii_whitespace().take(15).collect();
    if fields.len() < 15 {
        return None;
    }
    let num = |i: usize| fields[i].parse::<u64>().ok();
    Some(ProcStat {
        pid,
        state: *fields[0].as_bytes().first()?,
        ppid: fields[1].parse().ok()?,
        own_ticks: num(11)?.checked_add(num(12)?)?,
        reaped_children_ticks: num(13)?.checked_add(num(14)?)?,
    })
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
pub fn foreground_of(pid: u32, follow_through: &[&str]) -> Option<ForegroundProcess> {
    foreground_of_in(Path::new("/proc"), pid, follow_through)
}

/// How many terminals inside terminals are followed.
const MAX_NESTED_TERMINALS: usize = 4;

/// As [`foreground_of`], with `/proc` at `root` (tests).
pub fn foreground_of_in(
    root: &Path,
    pid: u32,
    follow_through: &[&str],
) -> Option<ForegroundProcess> {
    // After the name: state(0) ppid(1) pgrp(2) session(3) tty_nr(4) tpgid(5).
    let fields = |pid: u32| -> Option<(String, Vec<String>)> {
        let stat = std::fs::read(root.join(pid.to_string()).join("stat")).ok()?;
        let open = stat.iter().position(|&b| b == b'(')?;
        let close = stat.iter().rposition(|&b| b == b')')?;
        let comm = String::from_utf8_lossy(stat.get(open + 1..close)?).into_owned();
        let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
        Some((
            comm,
            rest.split_ascii_whitespace().map(str::to_string).collect(),
        ))
    };
    let number = |stat: &[String], at: usize| stat.get(at).and_then(|v| v.parse::<i64>().ok());
    let mut at = pid;
    let mut found = None;
    let mut outer: Vec<String> = Vec::new();
    for _ in 0..=MAX_NESTED_TERMINALS {
        let Some((_, stat)) = fields(at) else { break };
        let (Some(tty), Some(tpgid)) = (number(&stat, 4), number(&stat, 5)) else {
            break;
        };
        let Some(leader) = u32::try_from(tpgid).ok().filter(|&l| l > 0) else {
            break;
        };
        let Some((comm, _)) = fields(leader) else {
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
                let Some((name, stat)) = fields(child) else {
                    continue;
                };
                let state = stat.first().map(String::as_str).unwrap_or("");
                let running = !matches!(state, "T" | "t" | "Z" | "X");
                if running && number(&stat, 2) == Some(tpgid) {
                    children_in_front.push(name);
                }
                let own_terminal = number(&stat, 4).is_some_and(|t| t != 0 && t != tty);
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

/// [`foreground_of`] on another machine: a POSIX shell script for the
/// REMOTE shell that prints `BMB-FG <pid> <0|1> <name>` for each pid whose
/// terminal foreground it could read; [`parse_remote_foreground`] reads them.
/// It ends without `exit`, so another script may follow it in one ssh call.
pub fn remote_foreground_script(pids: &[u32]) -> String {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    format!(
        r#"for root in {pids}; do
  fg=$(sed 's/.*) //' /proc/$root/stat 2>/dev/null | cut -d ' ' -f 6)
  case "$fg" in ''|*[!0-9]*|0) continue ;; esac
  [ -d /proc/$fg/task ] || continue
  kids=0
  for c in $(cat /proc/$fg/task/*/children 2>/dev/null); do
    set -- $(sed 's/.*) //' /proc/$c/stat 2>/dev/null)
    case "$1" in T|t|Z|X|'') ;; *) [ "$3" = "$fg" ] && kids=1 ;; esac
  done
  case "$(cat /proc/$fg/wchan 2>/dev/null)" in
    n_tty_read*|wait_woken*|poll_schedule_timeout*|do_select*|do_sys_poll*|core_sys_select*|ep_poll*) kids=0 ;;
  esac
  name=$(sed -n 's/^[^(]*(\(.*\)).*$/\1/p' /proc/$fg/stat 2>/dev/null)
  printf 'BMB-FG %s %s %s\n' "$root" "$kids" "$name"
done
"#,
        pids = pids.join(" ")
    )
}

/// Reads [`remote_foreground_script`]'s lines: (pid, its foreground).
pub fn parse_remote_foreground(output: &str) -> Vec<(u32, ForegroundProcess)> {
    output
        .lines()
        .filter_map(|line| {
            let mut fields = line.strip_prefix("BMB-FG ")?.splitn(3, ' ');
            let pid = fields.next()?.parse().ok()?;
            let running_child = match fields.next()? {
                "0" => false,
                "1" => true,
                _ => return None,
            };
            let comm = fields.next().unwrap_or("").to_string();
            Some((
                pid,
                ForegroundProcess {
                    comm,
                    running_child,
                    children_in_front: Vec::new(),
                    outer: Vec::new(),
                },
            ))
        })
        .collect()
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
                && let Some(stat) = parse_stat(&line)
            {
                stats.push(stat);
            }
        }
        Ok(ProcessTable::from_stats(stats))
    }

    pub fn from_stats(stats: impl IntoIterator<Item = ProcStat>) -> ProcessTable {
        let mut table = ProcessTable::default();
        for stat in stats {
            table.children.entry(stat.ppid).or_default().push(stat.pid);
            table.processes.insert(stat.pid, stat);
        }
        table
    }

    pub fn get(&self, pid: u32) -> Option<&ProcStat> {
        self.processes.get(&pid)
    }

    pub fn len(&self) -> usize {
        self.processes.len()
    }

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

    #[test]
    fn parses_a_real_shaped_stat_line_with_a_hostile_name() {
        let line = b"4242 (evil) S 1 (x) R 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 11 2 20 0 1 0 1234 1000 100";
        let parsed = parse_stat(line).unwrap();
        assert_eq!(parsed.pid, 4242);
        assert_eq!(parsed.state, b'R');
        assert_eq!(parsed.ppid, 17);
        assert_eq!(parsed.own_ticks, 10);
        assert_eq!(parsed.reaped_children_ticks, 13);
    }

    #[test]
    fn refuses_truncated_or_garbage_lines() {
        assert_eq!(parse_stat(b""), None);
        assert_eq!(parse_stat(b"12 (x) S 1 2"), None);
        assert_eq!(parse_stat(b"abc (x) S 1 1 1 0 -1 0 0 0 0 0 1 1 1 1"), None);
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
    fn the_remote_foreground_script_agrees_with_the_local_reading() {
        #[allow(clippy::disallowed_methods)] // probes may spawn; the script runs under sh here.
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(remote_foreground_script(&[
                std::process::id(),
                1,
                999_999_999,
            ]))
            .output()
            .unwrap();
        let found = parse_remote_foreground(&String::from_utf8_lossy(&output.stdout));
        for (pid, front) in &found {
            let local = foreground_of(*pid, &[]);
            assert_eq!(
                local.map(|f| (f.comm, f.running_child)),
                Some((front.comm.clone(), front.running_child)),
                "pid {pid}"
            );
        }
        assert!(found.iter().all(|(pid, _)| *pid != 999_999_999));
        let parsed = parse_remote_foreground(
            "BMB-FG 12 1 claude\nBMB-FG 13 0 a b\nBMB-FG x 1 sh\nBMB-FG 14 2 sh\nnoise",
        );
        let names: Vec<(u32, bool, &str)> = parsed
            .iter()
            .map(|(pid, f)| (*pid, f.running_child, f.comm.as_str()))
            .collect();
        assert_eq!(names, [(12, true, "claude"), (13, false, "a b")]);
    }

    #[test]
    fn a_real_scan_finds_this_process_and_a_child_under_it() {
        #[allow(clippy::disallowed_methods)] // probes may spawn; a real child to find.
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
