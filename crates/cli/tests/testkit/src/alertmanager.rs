//! A real Alertmanager (Debian's `prometheus-alertmanager`) on 127.0.0.1 for
//! one test: its own config (one receiver that sends nowhere), its own
//! storage folder, clustering off, a free port; ended by its pid on drop,
//! and by the kernel if the test dies first.
// Starting the daemon is the harness's job.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sshd::free_port;

pub const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

pub struct Alertmanager {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Alertmanager {
    /// Starts one and waits until it answers `/-/ready`; retries another
    /// port if its port was taken between our probe and its bind.
    pub fn start() -> Alertmanager {
        Alertmanager::start_at(None)
    }

    /// One on `port` (a port a test reserved for it), or on a free one.
    pub fn start_at(port: Option<u16>) -> Alertmanager {
        Alertmanager::with_config(
            port,
            "route:\n  receiver: nowhere\n  group_wait: 1s\nreceivers:\n  - name: nowhere\n",
        )
    }

    /// One with `config` (alertmanager.yml's text), on `port` or a free one.
    pub fn with_config(port: Option<u16>, config_text: &str) -> Alertmanager {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(&config, config_text).expect("write the config");
        let mut last_log = String::new();
        let attempts = if port.is_some() { 1 } else { 5 };
        let wanted = port;
        for attempt in 0..attempts {
            let port = wanted.unwrap_or_else(free_port);
            let log_path = dir.path().join(format!("alertmanager-{attempt}.log"));
            let log = std::fs::File::create(&log_path).expect("log file");
            let mut command = Command::new(ALERTMANAGER);
            command
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--cluster.listen-address=")
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log file"))
                .stderr(log);
            crate::dies_with_this_thread(&mut command);
            let mut child = command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {ALERTMANAGER}: {e}"));
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    break;
                }
                if get(port, "/-/ready").is_ok() {
                    return Alertmanager { child, port, dir };
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "alertmanager did not answer on 127.0.0.1:{port} within 30 s; its log:\n{}",
                        std::fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("alertmanager could not start in {attempts} attempts; its last log:\n{last_log}");
    }

    /// Its base URL, as `--alertmanager` takes it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The alerts it holds as active (`GET /api/v2/alerts`: resolved ones,
    /// whose end time passed, are not listed).
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        let text = get(self.port, "/api/v2/alerts").expect("GET /api/v2/alerts");
        match serde_json::from_str(&text).expect("alertmanager answers JSON") {
            serde_json::Value::Array(alerts) => alerts,
            other => panic!("not an array of alerts: {other}"),
        }
    }

    /// Its folder (config, storage, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Ends it (SIGTERM, then SIGKILL after 5 s) and reaps it.
    pub fn stop(&mut self) {
        crate::stop_child(&mut self.child);
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `GET http://127.0.0.1:PORT/PATH`, its body when it answered 200.
fn get(port: u16, path: &str) -> Result<String, String> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .proxy(None)
            .build(),
    );
    agent
        .get(&format!("http://127.0.0.1:{port}{path}"))
        .call()
        .map_err(|e| e.to_string())?
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())
}
