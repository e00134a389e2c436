//! What the tests read in the monitor's `/metrics` exposition: one series'
//! value, and `promtool check metrics` (Debian's prometheus package) on it.
// promtool is a program the test runs itself.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::io::Write;
use std::process::{Command, Stdio};

/// The value of the one series `series` (name and labels as printed);
/// fails the test, showing the exposition, when there is none.
pub fn value(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
}

/// `promtool check metrics` reads the exposition and says nothing.
pub fn promtool_clean(metrics: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(metrics.as_bytes())
        .expect("written");
    let output = child.wait_with_output().expect("promtool ends");
    assert!(
        output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
        "promtool: {} {}\n{metrics}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
