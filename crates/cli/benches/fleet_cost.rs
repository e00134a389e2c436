//! `cargo bench -p bmb-monitor --bench fleet_cost`: what the board and the
//! metrics cost a `watch` cycle. Prints figures for PERFORMANCE.md; asserts
//! no time.
//!
//! Two parts: (1) in this process, the board's own bookkeeping per cycle
//! (`watchdog::session::board`: observe N reports, end the cycle, the JSON form, the
//! file replaced through a temporary file and a rename), on this thread's CPU
//! clock; (2) the release binary over N real panes, its CPU per cycle
//! without `--metrics-listen`, with it and nobody scraping, and with a
//! scraper reading `/metrics` every second (the scrape is served inside the
//! monitor, so its cost lands in the figure).

use std::path::Path;
use std::time::{Duration, Instant};

use bmb_testkit::tmux::PrivateTmux;
use classify::State;
use probes::run::{Background, Invocation};
use watchdog::session::board::{Board, Observed};
use watchdog::session::target::Target;
use watchdog::session::{Done, PollReport};

fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn report(i: usize) -> PollReport {
    PollReport {
        state: Some(State::Working),
        done: if i.is_multiple_of(10) {
            vec![Done::Nudged { used: 1, budget: 5 }]
        } else {
            Vec::new()
        },
        rule: Some("working-footer"),
        evidence: Some("✻ Crunching… (12s · esc to interrupt)".to_string()),
        pane_state: Some(State::Working),
        agent_seen: true,
        ..PollReport::unread(format!("p{i}"), 5)
    }
}

/// The board's bookkeeping for `targets` panes, per cycle, median of `cycles`.
fn bookkeeping(dir: &Path, targets: usize, cycles: usize) {
    let list: Vec<Target> = (0..targets)
        .map(|i| Target::parse(&format!("p{i}")).expect("target"))
        .collect();
    let reports: Vec<PollReport> = (0..targets).map(report).collect();
    let mut board = Board::new(1, 0, 1, 5, &list);
    let path = dir.join("board.json");
    let mut observe = Vec::new();
    let mut publish = Vec::new();
    let mut size = 0;
    for cycle in 0..cycles {
        let start = thread_cpu();
        for (index, report) in reports.iter().enumerate() {
            let observed = Observed {
                report,
                actions: &[],
                cli: Some("claude"),
                capture_error: None,
                probe_failures: 0,
                host_answered: true,
            };
            board.observe(index, observed, cycle as i64);
        }
        board.cycle_done(0.01, cycle as i64);
        let observed = thread_cpu();
        let snapshot = board.clone();
        let json = watchdog::session::board::wire::to_json(&snapshot);
        let mut temp = tempfile::NamedTempFile::new_in(dir).expect("temp");
        std::io::Write::write_all(&mut temp, json.as_bytes()).expect("write");
        temp.persist(&path).expect("rename");
        let published = thread_cpu();
        size = json.len();
        observe.push(observed - start);
        publish.push(published - observed);
    }
    observe.sort();
    publish.sort();
    println!(
        "{targets:>4} targets: board bookkeeping {:.1} µs/cycle, snapshot + JSON + file {:.1} µs/cycle (median of {cycles}), board file {:.1} KiB",
        observe[cycles / 2].as_secs_f64() * 1e6,
        publish[cycles / 2].as_secs_f64() * 1e6,
        size as f64 / 1024.0
    );
}

fn cpu_ticks(pid: u32) -> u64 {
    probes::os::procfs::Stat::of(pid)
        .expect("stat")
        .own_ticks()
        .expect("utime, stime")
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Plain,
    Listening,
    Scraped,
}

/// The monitor's own CPU per cycle over `panes` panes in `mode`.
fn monitor(dir: &Path, panes: usize, cycles: usize, mode: Mode) -> f64 {
    let server = PrivateTmux::new();
    let working = bmb_testkit::tmux::capture_path("working-bash-sleep");
    let names: Vec<String> = (0..panes).map(|i| format!("p{i}")).collect();
    for name in &names {
        server.session(
            name,
            &format!("cat '{}'; exec sleep 600", working.display()),
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let state = tempfile::tempdir_in(dir).expect("state");
    let out = state.path().join("out");
    let err = state.path().join("err");
    // stderr is where the bound address is said: through a shell redirect.
    let shell = Invocation::new("sh")
        .arg("-c")
        .arg(format!("exec \"$@\" 2>'{}'", err.display()))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_bmb-monitor"))
        .args(invocation_args(&server, &names, mode))
        .env("XDG_STATE_HOME", state.path());
    let child = Background::start(&shell, Some(std::fs::File::create(&out).expect("out")))
        .expect("monitor");
    let lines = |n: usize| {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
            >= n
    };
    let deadline = Instant::now() + Duration::from_secs(180);
    while !lines(panes) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = std::fs::read_to_string(&err)
        .unwrap_or_default()
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .map(str::to_string);
    let before = cpu_ticks(child.id());
    let mut scrape_wall = Vec::new();
    let mut last_scrape = Instant::now() - Duration::from_secs(2);
    while !lines(panes * (cycles + 1)) && Instant::now() < deadline {
        if mode == Mode::Scraped
            && last_scrape.elapsed() >= Duration::from_secs(1)
            && let Some(addr) = &addr
        {
            last_scrape = Instant::now();
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .proxy(None)
                .timeout_global(Some(Duration::from_secs(5)))
                .build()
                .into();
            let start = Instant::now();
            if let Ok(mut response) = agent.get(&format!("http://{addr}/metrics")).call() {
                let _ = response.body_mut().read_to_string();
                scrape_wall.push(start.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = cpu_ticks(child.id());
    child.stop();
    drop(server);
    let hz = probes::os::clock::ticks_per_second() as f64;
    let per_cycle = (after - before) as f64 / hz / cycles as f64 * 1000.0;
    if mode == Mode::Scraped {
        scrape_wall.sort();
        if let Some(median) = scrape_wall.get(scrape_wall.len() / 2) {
            println!(
                "{panes:>4} panes: a scrape of /metrics took {:.2} ms wall (median of {})",
                median.as_secs_f64() * 1000.0,
                scrape_wall.len()
            );
        }
    }
    per_cycle
}

fn invocation_args(server: &PrivateTmux, names: &[String], mode: Mode) -> Vec<String> {
    let mut args = vec![
        "watch".to_string(),
        "-S".to_string(),
        server.socket.to_string_lossy().into_owned(),
    ];
    args.extend(names.iter().cloned());
    args.extend(["--interval".to_string(), "1".to_string()]);
    if mode != Mode::Plain {
        args.extend(["--metrics-listen".to_string(), "127.0.0.1:0".to_string()]);
    }
    args
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    for targets in [1, 50, 100] {
        bookkeeping(dir.path(), targets, 200);
    }
    let cycles = 20;
    for panes in [50, 100] {
        let plain = monitor(dir.path(), panes, cycles, Mode::Plain);
        let listening = monitor(dir.path(), panes, cycles, Mode::Listening);
        let scraped = monitor(dir.path(), panes, cycles, Mode::Scraped);
        println!(
            "{panes:>4} panes: monitor CPU per cycle over {cycles} cycles: {plain:.2} ms without --metrics-listen, {listening:.2} ms listening, {scraped:.2} ms scraped every second"
        );
    }
}
