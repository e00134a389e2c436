// The lead monitor's fake machine and clock, shared by its table tests
// (`src/lead/tests.rs`) and its properties (`bmb-watchdog-properties`),
// each of which brings the lead's types into scope before `include!`ing it.

/// The machine as the port sees it, set by each test.
#[derive(Default)]
struct FakeMachine {
    files: HashMap<String, Meta>,
    stat_errors: HashMap<String, String>,
    pids: HashMap<String, PidCheck>,
    contents: HashMap<String, Vec<String>>,
    head_calls: Vec<String>,
    cpu: Option<u32>,
    cpu_calls: Vec<u32>,
    panes: Vec<Pane>,
    panes_error: Option<String>,
    list_calls: usize,
    consultant_pane: Option<String>,
}

impl FakeMachine {
    fn write(&mut self, path: &str, size: u64, mtime: i128) {
        self.files.insert(
            path.to_owned(),
            Meta::Present {
                size,
                mtime_ns: mtime,
                regular: true,
            },
        );
    }

    fn handoff(&mut self, path: &str, lines: &[&str]) {
        self.write(path, 100, 1);
        self.contents.insert(
            path.to_owned(),
            lines.iter().map(|l| l.to_string()).collect(),
        );
    }
}

impl LeadPort for FakeMachine {
    fn stat(&mut self, path: &str) -> Result<Meta, PortError> {
        if let Some(e) = self.stat_errors.get(path) {
            return Err(e.clone().into());
        }
        Ok(self.files.get(path).copied().unwrap_or(Meta::Missing))
    }

    fn pid_file(&mut self, path: &str) -> PidCheck {
        self.pids
            .get(path)
            .cloned()
            .unwrap_or(PidCheck::NotRecorded)
    }

    fn result_head(&mut self, path: &str) -> Result<Head, PortError> {
        self.head_calls.push(path.to_owned());
        match self.contents.get(path) {
            Some(lines) => Ok(Head::new(lines.iter().cloned())),
            None => Err(format!("cannot open {path}").into()),
        }
    }

    fn cpu_pct(&mut self, pid: u32) -> Option<u32> {
        self.cpu_calls.push(pid);
        self.cpu
    }

    fn list_panes(&mut self) -> Result<Vec<Pane>, PortError> {
        self.list_calls += 1;
        match &self.panes_error {
            Some(e) => Err(e.clone().into()),
            None => Ok(self.panes.clone()),
        }
    }

    fn consultant_pane(&mut self) -> Option<String> {
        self.consultant_pane.clone()
    }
}

struct FakeClock(Cell<i64>);

impl Clock for FakeClock {
    fn now(&self) -> i64 {
        self.0.get()
    }
    fn hhmm(&self, epoch: i64) -> String {
        format!("{:02}:{:02}", (epoch / 3600) % 24, (epoch / 60) % 60)
    }
    fn hhmmss(&self, epoch: i64) -> String {
        format!("{}:{:02}", self.hhmm(epoch), epoch % 60)
    }
}

const FEED: &str = "/b/consultant-feed.md";

struct Harness {
    monitor: LeadMonitor,
    m: FakeMachine,
    clock: FakeClock,
}

fn config() -> LeadConfig {
    LeadConfig {
        idle_stall_sec: 180,
        ack_timeout_sec: 120,
        sweep_interval_sec: None,
        feed_path: FEED.to_owned(),
        known_panes: vec![],
    }
}

impl Harness {
    fn new() -> Harness {
        Harness::with(config())
    }

    fn with(config: LeadConfig) -> Harness {
        Harness {
            monitor: LeadMonitor::new(config),
            m: FakeMachine::default(),
            clock: FakeClock(Cell::new(0)),
        }
    }

    /// Sends a control message at the current time; panics on a parse error.
    fn send(&mut self, json: &str) -> Result<Applied, ApplyError> {
        let control = parse_control(json).unwrap();
        self.monitor.apply(control, self.clock.0.get())
    }

    fn watch(&mut self, agent: &str, step: &str, extra: &str) {
        let json = format!(
            r#"{{"agent":"{agent}","step":"{step}","result_path":"/r/{agent}-{step}.md","pid_file":"/r/{agent}-{step}.pid","timeout_sec":1000,"started_at_epoch":0,"blind_phase":false,"consultant_reporting":"filtered"{extra}}}"#
        );
        assert_eq!(self.send(&json), Ok(Applied::Continue));
    }

    /// One pass at epoch `t`, outputs rendered `L`/`C`/`E` + the line.
    fn pass_at(&mut self, t: i64) -> Vec<String> {
        self.clock.0.set(t);
        self.monitor
            .pass(&mut self.m, &self.clock)
            .into_iter()
            .map(|o| match o {
                Output::Lead(s) => format!("L {s}"),
                Output::Consultant(s) => format!("C {s}"),
                Output::Error(s) => format!("E {s}"),
            })
            .collect()
    }

    fn alive(&mut self, agent_step: &str, pid: u32) {
        self.m
            .pids
            .insert(format!("/r/{agent_step}.pid"), PidCheck::Alive(pid));
    }

    fn dead(&mut self, agent_step: &str, pid: u32) {
        self.m
            .pids
            .insert(format!("/r/{agent_step}.pid"), PidCheck::Dead(pid));
    }
}
