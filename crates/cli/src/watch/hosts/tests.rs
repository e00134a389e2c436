//! The fleet's ssh on the real sshd of `bmb_testkit::sshd`: two aliases of
//! one daemon play two hosts, a private tmux server plays both hosts' tmux.

use std::time::{Duration, Instant};

use bmb_testkit::entries;
use bmb_testkit::sshd::Sshd;
use bmb_testkit::tmux::{PrivateTmux, capture_path};
use clap::Parser;

use super::super::Args;
use super::super::cycle::Watch;
use super::super::settings::Settings;
use super::*;

#[derive(Parser)]
struct TestCli {
    #[command(flatten)]
    args: Args,
}

/// A private tmux server whose panes `names` replay a working screen.
fn working_panes(names: &[&str]) -> PrivateTmux {
    let server = PrivateTmux::new();
    for name in names {
        let received = server.dir.path().join(format!("{name}.received"));
        server.replay(name, &capture_path("working-bash-sleep"), &received);
    }
    server
}

/// A watcher's arguments: `flags`, then `server`'s socket and `targets`,
/// its ssh masters under `dir`'s `ctl`.
fn watcher_args(
    dir: &std::path::Path,
    flags: &[&str],
    server: &PrivateTmux,
    targets: &[&str],
) -> Args {
    let socket = server.socket.to_string_lossy().into_owned();
    let argv = std::iter::once("test")
        .chain(flags.iter().copied())
        .chain(["-S", socket.as_str()])
        .chain(targets.iter().copied());
    let mut args = TestCli::parse_from(argv).args;
    let control = dir.join("ctl");
    args.server.multiplex =
        Some(Multiplex::prepare(std::slice::from_ref(&control), Duration::from_secs(60)).unwrap());
    args
}

/// Captures until every pane has drawn its working screen (the first
/// calls open the masters).
fn screens_drawn(watch: &mut Watch<'_>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while watch.capture_all().iter().any(|c| {
        !c.as_ref()
            .is_ok_and(|p| p.text.contains("esc to interrupt"))
    }) {
        assert!(
            Instant::now() < deadline,
            "the panes never drew their screens"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Live processes whose command line mentions `needle` (a master's is
/// `ssh: <its socket> [mux]`).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn two_hosts_cost_no_process_per_cycle_over_one_connection_and_one_session_each_closed_at_the_end()
{
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box1", &[]);
    // A second alias of the same daemon plays a second host.
    let config = sshd.two_hosts_config(&sshd.dir().join("two_hosts_config"), "box2");
    let server = working_panes(&["a", "b", "c"]);
    let args = watcher_args(
        dir.path(),
        &["--ssh-config", config.to_str().unwrap()],
        &server,
        &["box1:a", "box1:b", "box2:c"],
    );
    let targets = Settings::from_args(&args).unwrap().targets;
    let mut watch = Watch::new(
        std::borrow::Cow::Borrowed(&args),
        targets,
        &dir.path().join("state"),
    )
    .unwrap();

    // Every pane has drawn its screen (the first calls open the masters).
    screens_drawn(&mut watch);
    // The sockets are in this run's own folder inside `control`, beside its lock.
    let run_folder = args.server.multiplex.as_ref().unwrap().dir.clone();
    let sockets = || {
        entries(&run_folder)
            .into_iter()
            .filter(|name| name != "lock")
            .collect::<Vec<_>>()
    };
    assert_eq!(sockets().len(), 2, "one master per alias");
    for _ in 0..3 {
        let before = probes::run::spawned_by_this_thread();
        watch.cycle();
        assert_eq!(
            probes::run::spawned_by_this_thread() - before,
            0,
            "subprocesses in one cycle over two hosts (three panes): each host's session is open"
        );
        // The processes came with the captures, for the very panes captured.
        for (index, read) in watch.hosts.processes.iter().enumerate() {
            let (root, processes) = read.as_ref().expect("read in the capture's call");
            assert!(root.is_some(), "target {index}: {processes:?}");
            assert!(
                processes.foreground.is_some(),
                "target {index}: {processes:?}"
            );
        }
    }
    // Every call of every cycle rode on the two masters: two logins in all.
    let logins = sshd.log().matches("Accepted publickey for root").count();
    assert_eq!(logins, 2, "{}", sshd.log());

    // The monitor holds its masters: they close with it.
    drop(watch);
    assert_eq!(sockets(), Vec::<String>::new(), "sockets left behind");
    let needle = dir.path().join("ctl").to_string_lossy().into_owned();
    assert!(
        bmb_testkit::bin::wait_until(20, || processes_mentioning(&needle).is_empty()),
        "a master outlived its monitor: {:?}",
        processes_mentioning(&needle)
    );
}

/// `pid` and every live descendant.
fn tree(pid: u32) -> Vec<u32> {
    let table = probes::os::procfs::ProcessTable::scan().expect("/proc");
    let root = probes::os::pid::Pid::new(pid).expect("a pid");
    std::iter::once(pid)
        .chain(table.descendants(root))
        .collect()
}

fn signal_all(pids: &[u32], signal: rustix::process::Signal) {
    for &pid in pids {
        if let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

#[test]
fn a_hung_host_goes_unreachable_on_its_own_while_the_other_is_polled_every_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let hung = Sshd::start("boxa", &[]);
    let fine = Sshd::start("boxb", &[]);
    let config = dir.path().join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "{}{}",
            std::fs::read_to_string(hung.config()).unwrap(),
            fine.host_block("boxb")
        ),
    )
    .unwrap();
    let server = working_panes(&["a", "b"]);
    let args = watcher_args(
        dir.path(),
        &[
            "--capture-timeout",
            "2",
            "--ssh-config",
            config.to_str().unwrap(),
        ],
        &server,
        &["boxa:a", "boxb:b"],
    );
    let targets = Settings::from_args(&args).unwrap().targets;
    let mut watch = Watch::new(std::borrow::Cow::Borrowed(&args), targets, dir.path()).unwrap();
    screens_drawn(&mut watch);
    // The daemon and its connections' processes stop: the host hangs.
    let stopped = tree(hung.pid());
    struct Resume(Vec<u32>);
    impl Drop for Resume {
        fn drop(&mut self) {
            signal_all(&self.0, rustix::process::Signal::CONT);
        }
    }
    signal_all(&stopped, rustix::process::Signal::STOP);
    let _resume = Resume(stopped);
    let mut unreachable = 0;
    for cycle in 0..6 {
        watch.cycle();
        assert!(
            watch.hosts.polled[1] && watch.hosts.answered[1],
            "cycle {cycle}: the other host was not polled"
        );
        if watch.hosts.polled[0] {
            assert!(
                !watch.hosts.answered[0],
                "cycle {cycle}: a stopped host answered"
            );
            unreachable += 1;
        }
    }
    assert!(
        unreachable >= 1,
        "the hung host's target never went unreachable"
    );
}

#[test]
fn a_remote_targets_probes_ride_in_its_hosts_request_and_one_that_hangs_there_is_cut_at_its_deadline()
 {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box1", &[]);
    // Only the host's HOME holds the count: read here, the probe would fail.
    std::fs::write(sshd.remote_home().join("todo-a"), "one\ntwo\nthree\n").unwrap();
    let server = working_panes(&["a", "b"]);
    let config = sshd.config().to_str().unwrap().to_string();
    let args = watcher_args(
        dir.path(),
        &[
            "--probe-timeout",
            "1",
            "--probes-on",
            "host",
            "--work-probe",
            // box1:b's hangs; box1:a's counts its file's lines.
            "case $BMB_TARGET in *:b) exec sleep 86399;; esac; wc -l < \"$HOME/todo-${BMB_TARGET#*:}\"",
            "--progress-probe",
            "echo 7",
            "--ssh-config",
            &config,
        ],
        &server,
        &["box1:a", "box1:b"],
    );
    let targets = Settings::from_args(&args).unwrap().targets;
    let mut watch = Watch::new(std::borrow::Cow::Borrowed(&args), targets, dir.path()).unwrap();
    screens_drawn(&mut watch);
    let plan = watch.probe_plan();
    assert_eq!(
        plan.remote["box1"].len(),
        3,
        "two per-target runs, one shared"
    );
    for _ in 0..2 {
        let before = probes::run::spawned_by_this_thread();
        let local = watch.run_local_probes(&plan);
        watch.capture_all_with(&plan.remote);
        let (works, progresses) = watch.probe_answers(&plan, &local);
        assert_eq!(
            probes::run::spawned_by_this_thread() - before,
            0,
            "no process here for the probes or the captures"
        );
        assert_eq!(works[0].as_deref().map(str::trim), Some("3"), "{works:?}");
        assert_eq!(works[1], None, "the hung probe is unknown");
        assert_eq!(
            progresses,
            [Some("7\n".to_string()), Some("7\n".to_string())]
        );
        // The hung probe ended on the host at its deadline.
        let hung = || -> Vec<String> {
            processes_mentioning("sleep 86399")
                .into_iter()
                .filter(|c| c.trim() == "sleep 86399")
                .collect()
        };
        assert!(
            bmb_testkit::bin::wait_until(20, || hung().is_empty()),
            "{:?}",
            hung()
        );
    }
    let runs = &watch.fleet.operations.probes;
    assert_eq!(runs[&("work", "host")].runs, 4);
    assert_eq!(
        runs[&("progress", "host")].runs,
        2,
        "one shared run per cycle"
    );
    assert_eq!(runs[&("work", "monitor")].runs, 0);
    let logins = sshd.log().matches("Accepted publickey for root").count();
    assert_eq!(logins, 1, "{}", sshd.log());
}

/// Whether process `pid` is stopped (`T` in `/proc/PID/stat`).
fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(") ")?;
            rest.chars().next()
        })
        == Some('T')
}

/// One cycle with `hung`'s daemon stopped throughout: returns the polls in
/// the order made. Checks, from the order of events alone, that every
/// healthy target was polled while the hung host's request was still out
/// (its daemon stopped, so it cannot have answered), and that the hung
/// host's target was failed on its own afterwards.
fn a_cycle_with_a_hung_host(watch: &mut Watch<'_>, hung: u32, hung_target: &str) {
    let start = watch.poll_log.len();
    assert!(watch.start_cycle(), "a stop was requested");
    let mut healthy_while_pending = false;
    while watch.hosts.awaited() {
        let far = Instant::now() + Duration::from_secs(3600);
        if let Some(event) = watch.hosts.next(far) {
            watch.take_event(event);
        }
        let polled: Vec<String> = watch.poll_log[start..]
            .iter()
            .map(|(target, _)| target.to_string())
            .collect();
        if polled.len() == watch.watched.len() - 1 && !polled.iter().any(|t| t == hung_target) {
            // Every other target is polled; the hung host is still awaited
            // (its daemon is stopped: no answer can have come from it).
            assert!(is_stopped(hung), "the hung daemon is running");
            assert!(watch.hosts.awaited(), "the hung host is no longer awaited");
            healthy_while_pending = true;
        }
    }
    assert!(watch.finish_cycle());
    let polls = &watch.poll_log[start..];
    let shown: Vec<String> = polls
        .iter()
        .map(|(target, answered)| format!("{target} answered={answered}"))
        .collect();
    assert!(
        healthy_while_pending,
        "the healthy hosts were not all polled before the hung one: {shown:?}"
    );
    // Each target once, the hung one last and failed; the others answered.
    assert_eq!(polls.len(), watch.watched.len(), "{shown:?}");
    let (last, answered) = polls.last().unwrap();
    assert_eq!(last.to_string(), hung_target, "{shown:?}");
    assert!(!answered, "{shown:?}");
    assert!(
        polls[..polls.len() - 1].iter().all(|(_, a)| *a),
        "{shown:?}"
    );
    // Its host is unreachable on the board (what BmbHostUnreachable reads).
    let host = hung_target.split(':').next().unwrap();
    let errors = watch.fleet.host_errors();
    let error = errors
        .iter()
        .find(|(h, _)| h == host)
        .and_then(|(_, e)| e.clone());
    assert!(error.is_some(), "{host} is not unreachable: {errors:?}");
}

#[test]
fn a_host_that_starts_hanging_delays_no_other_hosts_poll_at_the_first_cycle_nor_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let hung = Sshd::start("boxa", &[]);
    let fine = [Sshd::start("boxb", &[]), Sshd::start("boxc", &[])];
    let config = dir.path().join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "{}{}{}",
            std::fs::read_to_string(hung.config()).unwrap(),
            fine[0].host_block("boxb"),
            fine[1].host_block("boxc")
        ),
    )
    .unwrap();
    let server = working_panes(&["a", "b", "c"]);
    let args = watcher_args(
        dir.path(),
        &[
            "--capture-timeout",
            "2",
            "--ssh-config",
            config.to_str().unwrap(),
        ],
        &server,
        &["boxa:a", "boxb:b", "boxc:c"],
    );
    let targets = Settings::from_args(&args).unwrap().targets;
    let mut watch = Watch::new(std::borrow::Cow::Borrowed(&args), targets, dir.path()).unwrap();
    struct Resume(Vec<u32>);
    impl Drop for Resume {
        fn drop(&mut self) {
            signal_all(&self.0, rustix::process::Signal::CONT);
        }
    }
    let mut resume = Resume(Vec::new());

    // The first cycle of the watcher: the host hangs before it was ever reached.
    let stopped = tree(hung.pid());
    signal_all(&stopped, rustix::process::Signal::STOP);
    resume.0.extend(&stopped);
    a_cycle_with_a_hung_host(&mut watch, hung.pid(), "boxa:a");

    // It answers again once it runs.
    signal_all(&stopped, rustix::process::Signal::CONT);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        watch.cycle();
        if watch.hosts.polled[0] && watch.hosts.answered[0] {
            break;
        }
        assert!(Instant::now() < deadline, "the host never answered again");
    }

    // Mid-run: its daemon and its connection stop just before a cycle.
    let stopped = tree(hung.pid());
    assert!(stopped.len() > 1, "no connection to the host: {stopped:?}");
    signal_all(&stopped, rustix::process::Signal::STOP);
    resume.0.extend(&stopped);
    a_cycle_with_a_hung_host(&mut watch, hung.pid(), "boxa:a");
    drop(resume);
}

/// A pane's `#{window_activity}` on `server` (epoch seconds).
fn window_activity(server: &PrivateTmux, name: &str) -> u64 {
    let target = format!("={name}:");
    String::from_utf8_lossy(
        &server
            .tmux(&["display-message", "-p", "-t", &target, "#{window_activity}"])
            .stdout,
    )
    .trim()
    .parse()
    .expect("window_activity")
}

#[test]
fn a_still_remote_pane_is_not_captured_again_and_one_that_prints_is_with_its_new_text() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box1", &[]);
    let server = working_panes(&["still", "moving"]);
    let config = sshd.config().to_str().unwrap().to_string();
    let args = watcher_args(
        dir.path(),
        &["--ssh-config", &config],
        &server,
        &["box1:still", "box1:moving"],
    );
    let targets = Settings::from_args(&args).unwrap().targets;
    let mut watch = Watch::new(std::borrow::Cow::Borrowed(&args), targets, dir.path()).unwrap();
    screens_drawn(&mut watch);
    // A cycle sees both agents, whose panes are then read by their ids.
    watch.cycle();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while now() <= window_activity(&server, "still") || now() <= window_activity(&server, "moving")
    {
        assert!(Instant::now() < deadline, "the clock stood still");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Captured past both panes' last output: what the next cycles may keep.
    let first = watch.capture_all();
    let still = first[0].as_ref().expect("captured").text.clone();
    for round in 0..3 {
        let typed = format!("typed-{round}");
        server.tmux(&["send-keys", "-t", "=moving:", "-l", &typed]);
        server.wait_for("moving", |pane| pane.contains(&typed));
        let captures = watch.capture_all();
        assert_eq!(
            watch.hosts.reused,
            [true, false],
            "round {round}: the still pane alone is kept"
        );
        assert_eq!(
            captures[0].as_ref().map(|c| &c.text),
            Ok(&still),
            "round {round}"
        );
        let moving = captures[1].as_ref().expect("captured");
        assert!(moving.text.contains(&typed), "round {round}: {moving:?}");
        // A whole cycle acts on the kept text as on a read one.
        assert!(watch.cycle());
        assert!(watch.hosts.reused[0], "round {round}");
    }
    let logins = sshd.log().matches("Accepted publickey for root").count();
    assert_eq!(logins, 1, "{}", sshd.log());
}
