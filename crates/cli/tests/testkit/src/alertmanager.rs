//! A real Alertmanager (Debian's `prometheus-alertmanager`) on 127.0.0.1 for
//! one test: its own config (one receiver that sends nowhere), its own
//! storage folder, clustering off, a free port; ended by its pid on drop,
//! and by the kernel if the test dies first.

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use crate::daemon::{Daemon, get};

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
        let storage = format!("--storage.path={}", dir.path().join("data").display());
        let clustering_off = "--cluster.listen-address=".to_string();
        let (child, port) = Daemon::new(
            "alertmanager",
            ALERTMANAGER,
            30,
            Duration::from_millis(50),
        )
        .start(dir.path(), &config, port, &[storage, clustering_off]);
        Alertmanager { child, port, dir }
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
