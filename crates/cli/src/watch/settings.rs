//! What one `watch` process runs with, built either from the command line or
//! from a config file (`--config`): each target's own settings, and the
//! process-wide ones spelled as the flags spell them, so the rest of the
//! loop reads them in one way whichever form started it.

use watchdog::session::SessionConfig;
use watchdog::target::Target;

use super::config::Config;
use super::*;

/// One target's own settings: what it is probed with, its nudge and budget,
/// and the profile it is read with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TargetSettings {
    pub(super) target: Target,
    /// Its own tmux server (`socket_name`/`socket_path` in its `[[targets]]`
    /// table, a local target only); `None`: the one `[server]` or `-L`/`-S` names.
    pub(super) server: Option<probes::tmux::Server>,
    pub(super) work_probe: Option<String>,
    pub(super) progress_probe: Option<String>,
    pub(super) nudge_budget: u32,
    pub(super) nudge_text: String,
    /// A profile forced on this target; `None` picks one from the pane (`auto`).
    pub(super) profile: Option<String>,
    /// Where its probes run (`probes_on`, `--probes-on`).
    pub(super) probes_on: ProbesOn,
}

impl TargetSettings {
    /// What its monitor decides with.
    pub(super) fn session_config(&self) -> SessionConfig {
        SessionConfig {
            budget: self.nudge_budget,
            nudge_text: self.nudge_text.clone(),
            profile: self.profile.clone(),
            ..SessionConfig::default()
        }
    }
}

/// A target that names every session of a host matching a pattern
/// (`host = "gpu3"`, `sessions = "agent-*"`): each session found in that
/// host's pane listing is watched with these settings, a session that
/// appears from the next cycle on, one that ends dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionPattern {
    /// The ssh alias; `None`: this machine.
    pub(super) host: Option<String>,
    /// `*` any run of characters, `?` any one; everything else itself.
    pub(super) glob: String,
    /// The settings each session found gets (its `target` is the pattern's
    /// own spelling until a session gives it one).
    pub(super) template: TargetSettings,
}

impl SessionPattern {
    pub(super) fn matches(&self, session: &str) -> bool {
        glob_matches(self.glob.as_bytes(), session.as_bytes())
    }

    /// The settings of the target for `session` of this pattern's host.
    pub(super) fn target(&self, session: &str) -> TargetSettings {
        TargetSettings {
            target: Target {
                host: self.host.clone(),
                session: session.to_string(),
            },
            ..self.template.clone()
        }
    }

    /// As the config file spells it: `gpu3:agent-*`.
    pub(super) fn shown(&self) -> String {
        match &self.host {
            Some(host) => format!("{host}:{}", self.glob),
            None => self.glob.clone(),
        }
    }
}

/// `*` and `?` over bytes (a `?` is one byte: session names a pattern is
/// meant for are ASCII), iteratively, with the last `*` as the only
/// backtrack point: linear in practice, never exponential.
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Everything one `watch` process runs with.
#[derive(Debug)]
pub(super) struct Settings {
    /// The process-wide settings as the flags spell them: the interval, the
    /// timeouts, the alert command and its format, the tmux server, and the
    /// flags only the command line gives (`--once`, `--json`, `--no-witness`).
    /// Built from a config file, its per-target flags are unset (each target
    /// has its own in `targets`) and it names no target.
    pub(super) args: Args,
    pub(super) targets: Vec<TargetSettings>,
    /// Targets named by a pattern of sessions (config files only).
    pub(super) patterns: Vec<SessionPattern>,
}

impl Settings {
    /// The command-line form: every target with the same flags.
    pub(super) fn from_args(args: &Args) -> Result<Settings, String> {
        let mut targets: Vec<TargetSettings> = Vec::new();
        for text in &args.targets {
            let target = Target::parse(text).map_err(|e| e.to_string())?;
            if targets.iter().any(|t| t.target == target) {
                return Err(format!("target `{target}` is given twice"));
            }
            targets.push(TargetSettings {
                target,
                server: None,
                work_probe: args.work_probe.clone(),
                progress_probe: args.progress_probe.clone(),
                nudge_budget: args.nudge_budget,
                nudge_text: args.nudge_text.clone(),
                profile: None,
                probes_on: args.probes_on,
            });
        }
        Ok(Settings {
            args: args.clone(),
            targets,
            patterns: Vec::new(),
        })
    }

    /// The config-file form. The flags a config file cannot give (`--once`,
    /// `--json`, `--no-witness`) come from the command line; so does the tmux
    /// server when the file has no `[server]` table (both is an error: which
    /// one meant it?).
    pub(super) fn from_config(cli: &Args, config: Config) -> Result<Settings, String> {
        let mut args = cli.clone();
        args.targets.clear();
        args.work_probe = None;
        args.progress_probe = None;
        args.interval = config.interval.unwrap_or(cli.interval);
        args.capture_timeout = config.capture_timeout.unwrap_or(cli.capture_timeout);
        args.probe_timeout = config.probe_timeout.unwrap_or(cli.probe_timeout);
        args.alert_cmd = config.alert_cmd;
        args.alert_format = config.alert_format.unwrap_or(cli.alert_format);
        args.log = config.log.unwrap_or_default();
        if config.alertmanager.is_some() {
            if cli.alertmanager.is_some() {
                return Err(
                    "Alertmanager is given twice: by the config file's [sinks] alertmanager and \
                     by --alertmanager; keep one"
                        .to_string(),
                );
            }
            args.alertmanager = config.alertmanager;
        }
        if let Some(addr) = config.metrics_listen {
            if cli.metrics_listen.is_some() {
                return Err(
                    "the metrics address is given twice: by the config file's metrics_listen and \
                     by --metrics-listen; keep one"
                        .to_string(),
                );
            }
            args.metrics_listen = Some(addr.to_string());
        }
        if let Some(server) = config.server {
            if !cli.server.is_default() {
                return Err(
                    "the tmux server is given twice: by the config file's [server] table and \
                     by -L, -S, --tmux-bin or --ssh-config; keep one"
                        .to_string(),
                );
            }
            args.server = server;
        }
        args.server.per_host = config.per_host;
        Ok(Settings {
            args,
            targets: config.targets,
            patterns: config.patterns,
        })
    }
}

#[cfg(test)]
mod glob_tests {
    use super::glob_matches;

    #[test]
    fn star_and_question_mark_match_as_a_shell_would() {
        let m = |p: &str, t: &str| glob_matches(p.as_bytes(), t.as_bytes());
        assert!(m("agent-*", "agent-1") && m("agent-*", "agent-") && m("*", ""));
        assert!(!m("agent-*", "other") && !m("agent-*", "xagent-1"));
        assert!(m("a?c", "abc") && !m("a?c", "ac") && m("*-gpu-*", "run-gpu-3"));
        assert!(m("a*b*c", "aXbYbZc") && !m("a*b*c", "aXbYbZ"));
        assert!(m("exact", "exact") && !m("exact", "exact2"));
    }
}
