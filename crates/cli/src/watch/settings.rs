//! What one `watch` process runs with, built either from the command line or
//! from a config file (`--config`): each target's own settings, and the
//! process-wide ones spelled as the flags spell them, so the rest of the
//! loop reads them in one way whichever form started it.

use watchdog::session::target::Target;

use super::Args;
use super::config::Config;
use super::target_settings::{SessionPattern, TargetSettings};

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
