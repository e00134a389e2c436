//! `cargo bench -p bmb-monitor --bench watch_remote_cycle`: what a cycle over
//! remote targets costs, on the real sshd of the tests (two aliases of one
//! daemon play two hosts; one private tmux server plays both hosts' tmux).
//! Prints figures for PERFORMANCE.md; asserts no time.
//!
//! `BMB_MONITOR_BIN=/path/to/bmb-monitor` measures another build of the
//! binary (an older commit) in the same harness.
//!
//! Each pane plays a Claude Code agent: a working screen, and a session
//! file under the pane process's own HOME, so the second witness finds it.
//! CPU is counted on both sides of ssh, from `/proc` clock ticks: the
//! monitor and the ssh clients it reaped, its ssh masters (daemons of
//! their own), the whole sshd tree (the sessions, and the remote shells,
//! tmux clients and anything else they ran and reaped), and the tmux server.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use bmb_testkit::sshd::Sshd;
use bmb_testkit::tmux::{PrivateTmux, write_session_file};
use probes::os::procfs::{ProcessTable, Stat};
use probes::run::{Background, Invocation};

/// A process's own ticks plus its reaped children's.
fn ticks(stat: &Stat) -> u64 {
    stat.own_ticks().unwrap_or(0) + stat.reaped_children_ticks().unwrap_or(0)
}

/// `pid` and its live descendants.
fn tree(pid: u32) -> Vec<u32> {
    let table = ProcessTable::scan().expect("/proc");
    let root = probes::os::pid::Pid::new(pid).expect("a pid");
    std::iter::once(pid)
        .chain(table.descendants(root))
        .collect()
}

/// `pid` and its live descendants, each with what it reaped: a dead
/// process's ticks are counted once, in its parent's reaped share.
fn tree_ticks(pid: u32) -> u64 {
    tree(pid)
        .into_iter()
        .filter_map(Stat::of)
        .map(|s| ticks(&s))
        .sum()
}

/// Processes whose command line mentions `needle` (a master's is `ssh: <socket> [mux]`),
/// except those in `skip` (the monitor's own ssh clients, whose command lines name the
/// socket too and are counted in the monitor's tree).
fn mentioning_ticks(needle: &str, skip: &[u32]) -> (usize, u64) {
    let mut total = 0;
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !skip.contains(&pid) && String::from_utf8_lossy(&cmdline).contains(needle) {
            total += Stat::of(pid).map_or(0, |s| ticks(&s));
            count += 1;
        }
    }
    (count, total)
}

/// A pane that shows the working screen, then (its process playing the
/// agent, `HOME` = `home`) writes a new count under it every second, as a
/// live spinner does: its screen changes between any two cycles. Fork-free
/// after its start (`read -t 1` on a FIFO it holds open both ways, which
/// nobody writes, is the wait; on the terminal it returned at once), so the
/// ticking itself loads the machine little. Returns the pane's pid.
fn ticking_agent(server: &PrivateTmux, name: &str, home: &Path) -> u32 {
    let capture = bmb_testkit::tmux::capture_path("working-bash-sleep");
    let fifo = home.with_extension("tick");
    let tick = format!(
        "mkfifo {0:?} && exec 3<>{0:?} && i=0 && while :; do i=$((i+1)); printf \"\\r  tick %s \" \"$i\"; read -r -t 1 -u 3 _; done",
        fifo
    );
    server.session(
        name,
        &format!(
            "cat '{}'; exec env HOME='{}' bash -c '{tick}'",
            capture.display(),
            home.display()
        ),
    );
    server.wait_for(name, |pane| pane.contains("tick "));
    let target = format!("={name}:");
    String::from_utf8_lossy(
        &server
            .tmux(&["display-message", "-p", "-t", &target, "#{pane_pid}"])
            .stdout,
    )
    .trim()
    .parse()
    .expect("pane pid")
}

#[derive(Default, Clone, Copy)]
struct Sample {
    monitor: u64,
    /// The monitor process alone (its threads, and what it reaped), without
    /// its live ssh clients.
    own: u64,
    masters: u64,
    master_processes: usize,
    sshd: u64,
    tmux: u64,
}

/// Watches `targets` at `--interval 1` for `cycles` cycles after the first.
#[expect(
    clippy::too_many_arguments,
    reason = "a bench harness: each is one knob of the scenario"
)]
fn measure(
    label: &str,
    bin: &str,
    sshd: &Sshd,
    config: &Path,
    targets: &[(&str, &str)],
    session_files: bool,
    cycles: usize,
    server_per_host: bool,
    ticking: bool,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    // One tmux server for all, or (`server_per_host`) one per host, so that
    // each host's listing holds only its own panes, as on separate machines.
    let mut servers: BTreeMap<&str, PrivateTmux> = BTreeMap::new();
    let mut names = Vec::new();
    for (host, session) in targets {
        let key = if server_per_host { *host } else { "" };
        let server = servers.entry(key).or_default();
        let home = dir.path().join(format!("home-{session}"));
        let pid = if ticking {
            ticking_agent(server, session, &home)
        } else {
            server.fake_agent(session, "working-bash-sleep", &home).0
        };
        if session_files {
            write_session_file(&home, pid, "busy", "", 0);
        }
        names.push(format!("{host}:{session}"));
    }
    let tmux_pids: Vec<u32> = servers
        .values()
        .map(|server| {
            String::from_utf8_lossy(&server.tmux(&["display-message", "-p", "#{pid}"]).stdout)
                .trim()
                .parse()
                .expect("tmux server pid")
        })
        .collect();
    let runtime = dir.path().join("run");
    std::fs::create_dir(&runtime).expect("runtime dir");
    let out_path = dir.path().join("out");
    let monitor = if server_per_host {
        // `[hosts.ALIAS] socket_path` needs `--config`.
        let mut text = format!(
            "[defaults]\ninterval = 1\n\n[server]\nssh_config = {:?}\n\n",
            config.to_string_lossy()
        );
        for (host, server) in &servers {
            text.push_str(&format!(
                "[hosts.{host}]\nsocket_path = {:?}\n\n",
                server.socket.to_string_lossy()
            ));
        }
        for name in &names {
            text.push_str(&format!("[[targets]]\ntarget = {name:?}\n\n"));
        }
        let path = dir.path().join("watch.toml");
        std::fs::write(&path, text).expect("watch config");
        Invocation::new(bin).arg("watch").arg("--config").arg(path)
    } else {
        Invocation::new(bin)
            .arg("watch")
            .args(["--interval", "1", "--ssh-config"])
            .arg(config)
            .arg("-S")
            .arg(&servers[""].socket)
            .args(&names)
    }
    .env("XDG_STATE_HOME", dir.path().join("state"))
    .env("XDG_RUNTIME_DIR", &runtime);
    let child = Background::start(
        &monitor,
        Some(std::fs::File::create(&out_path).expect("out")),
    )
    .expect("monitor");
    let lines = || {
        std::fs::read_to_string(&out_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("MONITOR"))
            .count()
    };
    let wait_lines = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(300);
        while lines() < n {
            assert!(Instant::now() < deadline, "{label}: no {n} lines");
            std::thread::sleep(Duration::from_millis(5));
        }
        Instant::now()
    };
    let needle = runtime.to_string_lossy().into_owned();
    let sample = || {
        let own = tree(child.id());
        let (master_processes, masters) = mentioning_ticks(&needle, &own);
        Sample {
            monitor: tree_ticks(child.id()),
            own: Stat::of(child.id()).map_or(0, |s| ticks(&s)),
            masters,
            master_processes,
            sshd: tree_ticks(sshd.pid()),
            tmux: tmux_pids
                .iter()
                .map(|pid| Stat::of(*pid).map_or(0, |s| ticks(&s)))
                .sum(),
        }
    };
    let per = targets.len();
    let t0 = wait_lines(per);
    let s0 = sample();
    let t1 = wait_lines(per * (cycles + 1));
    let s1 = sample();
    child.stop();
    let hosts: BTreeMap<&str, ()> = targets.iter().map(|(h, _)| (*h, ())).collect();
    let hz = probes::os::clock::ticks_per_second() as f64;
    let ms = |a: u64, b: u64| (b - a) as f64 / hz * 1000.0 / cycles as f64;
    let period = (t1 - t0).as_secs_f64() / cycles as f64;
    let total = ms(
        s0.monitor + s0.masters + s0.sshd + s0.tmux,
        s1.monitor + s1.masters + s1.sshd + s1.tmux,
    );
    println!(
        "{label}: period {period:.3} s (cycle {:.3} s + 1 s interval); CPU per cycle: monitor+ssh clients {:.1} ms (the monitor itself {:.1} ms), {} masters {:.1} ms, sshd side {:.1} ms, tmux server {:.1} ms; total {total:.1} ms, {:.1} ms per host",
        period - 1.0,
        ms(s0.monitor, s1.monitor),
        ms(s0.own, s1.own),
        s1.master_processes,
        ms(s0.masters, s1.masters),
        ms(s0.sshd, s1.sshd),
        ms(s0.tmux, s1.tmux),
        total / hosts.len() as f64,
    );
}

fn main() {
    let bin = std::env::var("BMB_MONITOR_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_bmb-monitor").to_string());
    let cycles: usize = std::env::var("BMB_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(10);
    println!("binary: {bin}");
    let sshd = Sshd::start("box", &[]);
    // A second alias of the same daemon plays a second host.
    let config = sshd.two_hosts_config(&sshd.dir().join("two_hosts"), "box2");
    let one_host: &[(&str, &str)] = &[("box", "a"), ("box", "b")];
    let two_hosts: &[(&str, &str)] = &[("box", "a"), ("box2", "b")];
    // `BMB_FLEET=HOSTSxPANES` (e.g. `10x100`): that many aliases of the one
    // daemon, each with that many panes, instead of the small scenarios.
    if let Some((hosts, panes)) = std::env::var("BMB_FLEET").ok().and_then(|f| {
        let (h, p) = f.split_once('x')?;
        Some((h.parse::<usize>().ok()?, p.parse::<usize>().ok()?))
    }) {
        let fleet_config = sshd.dir().join("fleet_config");
        let mut text = String::new();
        for host in 0..hosts {
            text.push_str(&sshd.host_block(&format!("h{host}")));
        }
        std::fs::write(&fleet_config, text).expect("fleet ssh config");
        let names: Vec<(String, String)> = (0..hosts)
            .flat_map(|h| (0..panes).map(move |p| (format!("h{h}"), format!("h{h}p{p}"))))
            .collect();
        let targets: Vec<(&str, &str)> = names
            .iter()
            .map(|(h, s)| (h.as_str(), s.as_str()))
            .collect();
        // `BMB_SERVER_PER_HOST=1`: a tmux server per host (needs a build
        // with `[hosts.ALIAS]` in `--config`); otherwise one for all, so
        // each host lists every host's panes.
        let per_host = std::env::var_os("BMB_SERVER_PER_HOST").is_some();
        // `BMB_TICKING=1`: every pane's screen changes every second
        // (`ticking_agent`), instead of the still working screens.
        let ticking = std::env::var_os("BMB_TICKING").is_some();
        let label = format!(
            "{hosts} hosts x {panes} panes{}{}",
            if per_host {
                ", a tmux server per host"
            } else {
                ""
            },
            if ticking { ", ticking" } else { "" }
        );
        measure(
            &label,
            &bin,
            &sshd,
            &fleet_config,
            &targets,
            true,
            cycles,
            per_host,
            ticking,
        );
        return;
    }
    let scenarios = [
        ("two panes, one host", one_host, true),
        ("two hosts, one pane each", two_hosts, true),
        ("two panes, one host, no session file", one_host, false),
    ];
    for (label, targets, session_files) in scenarios {
        measure(
            label,
            &bin,
            &sshd,
            &config,
            targets,
            session_files,
            cycles,
            false,
            false,
        );
    }
}
