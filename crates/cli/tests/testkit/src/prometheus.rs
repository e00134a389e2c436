//! A real Prometheus (Debian's `prometheus`) on 127.0.0.1 for one test: the
//! test's own config (scrape targets, rule files, an Alertmanager), its own
//! storage folder, a free port; ended by its pid on drop, and by the kernel
//! if the test dies first.

use std::process::Child;
use std::time::Duration;

use crate::daemon::{Daemon, get};

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
        let storage = format!("--storage.tsdb.path={}", dir.path().join("data").display());
        let (child, port) = Daemon::new("prometheus", PROMETHEUS, 60, Duration::from_millis(100))
            .start(dir.path(), &config_path, None, &[storage]);
        Prometheus { child, port, dir }
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
