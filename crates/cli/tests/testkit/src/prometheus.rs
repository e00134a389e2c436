//! A real Prometheus (Debian's `prometheus`) on 127.0.0.1 for one test: the
//! test's own config (scrape targets, rule files, an Alertmanager), its own
//! storage folder, a free port; ended by its pid on drop, and by the kernel
//! if the test dies first.
// Starting the daemon is the harness's job.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sshd::free_port;

pub const PROMETHEUS: &str = "/usr/bin/prometheus";

pub struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts one with `config` (prometheus.yml's text; a rule file it
    /// names by a relative path is read from `files`, copied beside it) and
    /// waits until it answers `/-/ready`.
    pub fn start(config: &str, files: &[&std::path::Path]) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        for file in files {
            let name = file.file_name().expect("a file name");
            std::fs::copy(file, dir.path().join(name)).expect("copy a rule file");
        }
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write the config");
        let mut last_log = String::new();
        for attempt in 0..5 {
            let port = free_port();
            let log_path = dir.path().join(format!("prometheus-{attempt}.log"));
            let log = std::fs::File::create(&log_path).expect("log file");
            let mut command = Command::new(PROMETHEUS);
            command
                .arg(format!("--config.file={}", config_path.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log file"))
                .stderr(log);
            crate::dies_with_this_thread(&mut command);
            let mut child = command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {PROMETHEUS}: {e}"));
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    break;
                }
                if get(port, "/-/ready").is_ok() {
                    return Prometheus { child, port, dir };
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "prometheus did not answer on 127.0.0.1:{port} within 60 s; its log:\n{}",
                        std::fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("prometheus could not start in 5 attempts; its last log:\n{last_log}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The alerts its rules hold (`GET /api/v1/alerts`), pending and firing.
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        let text = get(self.port, "/api/v1/alerts").expect("GET /api/v1/alerts");
        let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        value["data"]["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Whether an alert named `name` is firing.
    pub fn firing(&self, name: &str) -> bool {
        self.alerts()
            .iter()
            .any(|a| a["labels"]["alertname"] == name && a["state"] == "firing")
    }

    /// What it logged so far, for failure messages.
    pub fn log(&self) -> String {
        let mut text = String::new();
        for attempt in 0..5 {
            let path = self.dir.path().join(format!("prometheus-{attempt}.log"));
            text.push_str(&std::fs::read_to_string(path).unwrap_or_default());
        }
        text
    }

    pub fn stop(&mut self) {
        crate::stop_child(&mut self.child);
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
    }
}

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
