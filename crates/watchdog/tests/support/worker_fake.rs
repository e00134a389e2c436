// The worker monitor's fake machine, ports and clock, shared by its table
// tests (`src/worker/tests.rs`) and its properties (`bmb-watchdog-properties`),
// each of which brings the worker's types, `Clock` and `PortError` into scope
// before `include!`ing it; `impl World`'s builders stay with each.

/// What the fake machine answers on one pass.
#[derive(Debug, Clone)]
struct World {
    pid: PidReading,
    quiet: Option<u64>,
    cpu: Option<CpuClocks>,
    /// The tree's fingerprint; `None` when git cannot answer.
    tree: Option<String>,
    commits: CommitsReading,
    now: i64,
}

/// 2026-09-02T10:00:00Z
const T0: i64 = 1_788_343_200;
const AGENT: u32 = 4242;
const WINDOW: u64 = 900;

/// Ports that answer from the current `World` and count what was asked.
#[derive(Default)]
struct Fake {
    world: Option<World>,
    tree_calls: usize,
    commit_calls: usize,
    cpu_calls: usize,
}

impl WorkerPort for Fake {
    fn pid(&mut self) -> PidReading {
        self.world().pid.clone()
    }
    fn transcript_quiet_seconds(&mut self) -> Option<u64> {
        self.world().quiet
    }
    fn descendant_cpu(&mut self, pid: u32) -> Option<CpuClocks> {
        self.cpu_calls += 1;
        assert_eq!(PidReading::Alive(pid), self.world().pid);
        self.world().cpu.clone()
    }
    fn tree_fingerprint(&mut self) -> Result<String, PortError> {
        self.tree_calls += 1;
        self.world()
            .tree
            .clone()
            .ok_or_else(|| "git status failed".into())
    }
    fn commits(&mut self) -> CommitsReading {
        self.commit_calls += 1;
        self.world().commits.clone()
    }
}

/// The clock, read from the current `World`.
struct WorldClock(i64);

impl Clock for WorldClock {
    fn now(&self) -> i64 {
        self.0
    }
    fn hhmm(&self, epoch: i64) -> String {
        format!("{:02}:{:02}", (epoch / 3600) % 24, (epoch / 60) % 60)
    }
    fn hhmmss(&self, epoch: i64) -> String {
        format!("{}:{:02}", self.hhmm(epoch), epoch % 60)
    }
}

impl Fake {
    fn clock(&self) -> WorldClock {
        WorldClock(self.world().now)
    }

    fn world(&self) -> &World {
        self.world.as_ref().expect("a world for this pass")
    }
}

fn config() -> WorkerConfig {
    WorkerConfig {
        branch: "feature/x".to_owned(),
        worktree: "/tmp/desk".to_owned(),
        interval: Duration::from_secs(30),
        quiet_seconds: WINDOW,
    }
}

/// Run one pass per world (30 s apart) and return the published finding words.
fn check(worlds: &[World]) -> Vec<Option<&'static str>> {
    let mut monitor = WorkerMonitor::new(config());
    run(&mut monitor, worlds)
        .into_iter()
        .map(|pass| pass.report.map(|r| r.finding))
        .collect()
}

fn run(monitor: &mut WorkerMonitor, worlds: &[World]) -> Vec<Pass> {
    let mut fake = Fake::default();
    worlds
        .iter()
        .enumerate()
        .map(|(i, world)| {
            let mut world = world.clone();
            world.now += 30 * i as i64;
            fake.world = Some(world);
            let clock = fake.clock();
            monitor.pass(&mut fake, &clock)
        })
        .collect()
}

