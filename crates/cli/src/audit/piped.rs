//! `--commands-on-stdin`: the agent and alert commands `watch --audit` hands
//! its audit on stdin, never in argv.

use super::args::Args;

/// What `watch --audit` hands its audit on stdin.
#[derive(serde::Serialize, serde::Deserialize, Default)]
pub(crate) struct PipedCommands {
    pub(crate) agent_cmd: Option<String>,
    pub(crate) alert_cmd: Option<String>,
}

/// The most read of `--commands-on-stdin`.
const PIPED_COMMANDS_CAP: u64 = 1 << 20;

/// Replaces the flags' agent and alert commands with those on stdin (each only when given).
pub(super) fn read_piped_commands(args: &mut Args) -> Result<(), String> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .take(PIPED_COMMANDS_CAP)
        .read_to_string(&mut text)
        .map_err(|e| format!("--commands-on-stdin: cannot read stdin: {e}"))?;
    let piped: PipedCommands = serde_json::from_str(&text)
        .map_err(|e| format!("--commands-on-stdin: stdin is not the commands' JSON: {e}"))?;
    if let Some(command) = piped.agent_cmd {
        args.agent_cmd = command;
    }
    if piped.alert_cmd.is_some() {
        args.alert_cmd = piped.alert_cmd;
    }
    Ok(())
}
