//! The demo's temporary folder and private tmux server, removed on every path.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use probes::run::{self, Invocation, Limits};
use probes::ssh::quote_literal;
use probes::tmux::{Server, Tmux};

use super::script::{ALERT_END, NUDGE, Step, trim_screen};
use crate::output::say;

/// The session the scripted agent runs in, and the monitor's target.
pub(super) const SESSION: &str = "agent";

/// The demo's temporary folder and private tmux server; removed on every path.
pub(super) struct Sandbox {
    pub(super) dir: PathBuf,
    pub(super) socket: PathBuf,
    pub(super) tmux: Tmux,
    pub(super) server_pid: Option<u32>,
    pub(super) cleaned: bool,
}

impl Sandbox {
    pub(super) fn create() -> Result<Sandbox, String> {
        let mut base = std::env::temp_dir();
        // A unix socket path must fit in sun_path (108 bytes, 104 on BSDs).
        if base.as_os_str().len() > 60 {
            base = PathBuf::from("/tmp");
        }
        // Private to this user (a socket in it reaches the demo's server);
        // removed by `cleanup`, which reports what it could not remove.
        let dir = tempfile::Builder::new()
            .prefix("bmb-demo-")
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(&base)
            .map_err(|e| {
                format!(
                    "cannot create a temporary folder in {}: {e}",
                    base.display()
                )
            })?
            .keep();
        let socket = dir.join("tmux.sock");
        let mut tmux = Tmux::new(Server::Path(socket.to_string_lossy().into_owned()));
        tmux.timeout = Duration::from_secs(5);
        let sandbox = Sandbox {
            dir,
            socket,
            tmux,
            server_pid: None,
            cleaned: false,
        };
        for file in ["typed", "alerts"] {
            fs::write(sandbox.dir.join(file), "")
                .map_err(|e| format!("cannot write in {}: {e}", sandbox.dir.display()))?;
        }
        fs::create_dir(sandbox.state_dir())
            .map_err(|e| format!("cannot write in {}: {e}", sandbox.dir.display()))?;
        Ok(sandbox)
    }

    pub(super) fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    pub(super) fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// The pane's program: draw nothing, then record every key it is sent.
    pub(super) fn keys_recorder(&self) -> String {
        format!(
            "stty raw -echo; exec cat >> {}",
            quote_literal(&self.path("typed"))
        )
    }

    pub(super) fn start_server(&mut self) -> Result<(), String> {
        let command = sh(self.keys_recorder());
        let pid = self
            .tmux
            .start_private_server(SESSION, (120, 40), &command)
            .map_err(|e| format!("cannot start a private tmux server (is tmux installed?): {e}"))?;
        self.server_pid = Some(pid);
        Ok(())
    }

    /// Puts step `number`'s probe readings in place and the screen in the
    /// pane, then waits until a capture shows exactly that screen.
    pub(super) fn show(&self, number: usize, step: &Step) -> Result<(), String> {
        let screen = trim_screen(step.screen);
        let screen_file = self.path(&format!("screen-{number}.txt"));
        let write = |name: &str, text: &str| {
            fs::write(self.path(name), text)
                .map_err(|e| format!("cannot write {}: {e}", self.path(name)))
        };
        write(&format!("screen-{number}.txt"), &screen)?;
        write("work", &format!("{}\n", step.work))?;
        write("progress", &format!("{}\n", step.progress))?;
        let script = format!(
            "printf '\\033[H\\033[2J'; cat {}; {}",
            quote_literal(&screen_file),
            self.keys_recorder()
        );
        self.tmux
            .respawn_pane(&format!("={SESSION}:"), &sh(script))
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = String::new();
        let mut nonce = 0u32;
        while Instant::now() < deadline && !probes::os::signals::stop_requested() {
            nonce += 1;
            let captured = self
                .tmux
                .capture_sessions(&[SESSION.to_string()], &format!("demo{nonce}"))
                .map_err(|e| e.to_string())?;
            if let Some(Ok(capture)) = captured.into_iter().next() {
                if trim_screen(&capture.text) == screen {
                    return Ok(());
                }
                last = capture.text;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "the pane did not show the screen in time; it shows {} lines",
            last.lines().count()
        ))
    }

    pub(super) fn watch_args(&self) -> Vec<String> {
        let alert = format!(
            "{{ printf '%s %s\\n' \"$BMB_STATE\" \"$BMB_REASON\"; cat; printf '\\n%s\\n' {}; }} >> {}",
            quote_literal(ALERT_END.trim()),
            quote_literal(&self.path("alerts"))
        );
        [
            "watch",
            SESSION,
            "-S",
            &self.socket.to_string_lossy(),
            "--once",
            "--work-probe",
            &format!("cat {}", quote_literal(&self.path("work"))),
            "--progress-probe",
            &format!("cat {}", quote_literal(&self.path("progress"))),
            "--alert-cmd",
            &alert,
            "--nudge-text",
            NUDGE,
            "--capture-timeout",
            "5",
            "--probe-timeout",
            "5",
        ]
        .map(str::to_string)
        .to_vec()
    }

    pub(super) fn typed(&self) -> String {
        fs::read_to_string(self.path("typed")).unwrap_or_default()
    }

    pub(super) fn alerts(&self) -> String {
        fs::read_to_string(self.path("alerts")).unwrap_or_default()
    }

    /// The keys the pane received since `before` bytes, up to a sentinel
    /// this demo types after the monitor is done: tmux delivers a pane's keys
    /// in order, so once the sentinel has arrived everything the monitor
    /// typed has too, and "nothing" means nothing without a guess at how
    /// long a stray key could take.
    pub(super) fn typed_since(&self, before: usize, step: usize) -> Result<String, String> {
        let sentinel = format!("<demo step {step} done>");
        self.tmux
            .send_line(&format!("={SESSION}:"), &sentinel)
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let typed = self.typed();
            let since = typed.get(before..).unwrap_or("");
            if let Some(end) = since.find(&sentinel) {
                return Ok(since[..end].to_string());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the pane never received this demo's own keys ({sentinel})"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the server by its own socket, waits for its pid to go, removes the
    /// socket and the folder. Idempotent; also run on drop.
    pub(super) fn cleanup(&mut self) -> Result<(), String> {
        if self.cleaned {
            return Ok(());
        }
        self.cleaned = true;
        let mut problems = Vec::new();
        if self.socket.exists() {
            let _ = self.tmux.kill_server();
        }
        if let Some(pid) = self.server_pid {
            let deadline = Instant::now() + Duration::from_secs(3);
            while is_tmux(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if is_tmux(pid) {
                // Only our own server's pid, and only while it is still tmux.
                let _ = run::run(
                    &Invocation::new("kill").args(["-KILL", &pid.to_string()]),
                    &Limits::with_timeout(Duration::from_secs(2)).for_cleanup(),
                );
                if is_tmux(pid) {
                    problems.push(format!("the tmux server (pid {pid}) is still running"));
                }
            }
        }
        let gone = |result: std::io::Result<()>, path: &std::path::Path| match result {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Some(format!("cannot remove {}: {e}", path.display()))
            }
            _ => None,
        };
        problems.extend(gone(fs::remove_file(&self.socket), &self.socket));
        problems.extend(gone(fs::remove_dir_all(&self.dir), &self.dir));
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Err(error) = self.cleanup() {
            say(format_args!("bmb-monitor: demo: cleanup: {error}"));
        }
    }
}

/// Whether `pid` is alive (not a zombie) and is a tmux process.
fn is_tmux(pid: u32) -> bool {
    probes::os::procfs::Stat::of(pid)
        .is_some_and(|stat| !stat.has_exited() && stat.comm().starts_with("tmux"))
}

/// `sh -c SCRIPT` as a command's words.
fn sh(script: String) -> [String; 3] {
    ["sh".to_string(), "-c".to_string(), script]
}
