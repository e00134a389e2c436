//! `bmb-monitor lead` ends with its Lead: when its parent is gone it makes
//! one final pass and exits 0. Its own test binary, because it makes the
//! whole test process a subreaper to collect the orphaned monitor's status.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::process::{
    Pid, Signal, WaitOptions, getpid, kill_process, set_child_subreaper, waitpid,
};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

// The Lead stand-in must stay running while the test kills it, which
// `probes::run` (run to completion) cannot do.
#[expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]
#[test]
fn when_the_lead_is_gone_the_monitor_makes_a_final_pass_and_exits_0() {
    // This process adopts its orphaned descendants: the monitor, once its
    // parent shell is killed.
    set_child_subreaper(Some(getpid())).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bmb = dir.join(".bmb");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let item = format!(
        r#"{{"agent":"writer","step":"2","result_path":"{d}/writer.md","pid_file":"{d}/writer.pid","timeout_sec":3600,"started_at_epoch":{now},"blind_phase":false,"consultant_reporting":"filtered"}}"#,
        d = dir.display()
    );
    std::fs::create_dir_all(bmb.join("monitor-inbox")).unwrap();
    std::fs::write(bmb.join("monitor-inbox/001.json"), item).unwrap();
    // The Lead: a shell that starts the monitor in the background (stdin from
    // /dev/null: EOF at once, which is not a shutdown), records its pid, and
    // waits. The interval is long, so after the first pass at start only the
    // final pass can see the result written below.
    let script = r#""$0" lead --interval 30 --no-sweep --bmb-dir "$1" </dev/null >"$2/out" 2>"$2/err" & echo $! >"$2/monitor.pid"; exec sleep 600"#;
    let mut lead = std::process::Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_bmb-monitor")])
        .arg(&bmb)
        .arg(dir)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let monitor_pid: Pid = loop {
        if let Some(pid) = read(&dir.join("monitor.pid"))
            .trim()
            .parse()
            .ok()
            .and_then(Pid::from_raw)
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "monitor never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The item is applied (its inbox file consumed) and checked in the same
    // turn of the loop; then finish the agent's work and kill the Lead.
    let inbox = bmb.join("monitor-inbox");
    let deadline = Instant::now() + Duration::from_secs(10);
    while inbox.join("001.json").exists() || inbox.join(".claimed/001.json").exists() {
        assert!(Instant::now() < deadline, "the item was never applied");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(dir.join("writer.md"), "done").unwrap();
    lead.kill().unwrap();
    lead.wait().unwrap();

    // The orphan is ours now: wait for it with a deadline.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some((_, status)) = waitpid(Some(monitor_pid), WaitOptions::NOHANG).unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // Ours to reap, so its pid cannot have been recycled.
            let _ = kill_process(monitor_pid, Signal::TERM);
            panic!("the monitor outlived its Lead");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.exit_status(), Some(0), "{status:?}");
    let out = read(&dir.join("out"));
    let line = out.lines().next().unwrap_or_default();
    assert!(
        line.starts_with(&format!(
            "[MONITOR] agent=writer step=2 state=result_ready file={}/writer.md ts=",
            dir.display()
        )),
        "the final pass saw the result: {out:?}"
    );
    assert_eq!(out.lines().count(), 1, "{out:?}");
    assert_eq!(read(&dir.join("err")), "");
}
