//! The foreground policy: what runs in front of a pane's terminal (the
//! process tables of shells, terminal wrappers and relays) decides whether
//! the agent is still there and whether a key may be typed into it.

use classify::{Profiles, Verdict};

use super::Refusal;

/// The foreground of a pane's terminal: the process tmux names
/// (`#{pane_current_command}`, from its `argv[0]`) and, where the process
/// table can be read, its executable's name and whether a child of it runs
/// in the foreground process group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Foreground {
    /// The name tmux gives the front process (`#{pane_current_command}`).
    pub command: String,
    /// The name `/proc` gives it (`exec -a agentsh bash` is still `bash`).
    pub process: Option<String>,
    /// `Some(true)`: a child runs in the foreground group (a wrapper's
    /// agent). `None`: unknown (its processes were not read).
    pub running_child: Option<bool>,
    /// tmux says the pane's program ended (`#{pane_dead}`, remain-on-exit).
    pub dead: bool,
    /// tmux says the pane is in copy mode or another mode (`#{pane_in_mode}`).
    pub in_mode: bool,
    /// tmux copies the pane's keys to every pane of its window
    /// (`#{synchronize-panes}`): a nudge would reach them all.
    pub synchronized: bool,
    /// The running children of the front process in its group (what a
    /// wrapper shell waits on: `ssh` under `bash -c 'ssh box; bash'`).
    pub children_in_front: Vec<String>,
    /// The terminal wrappers the front process was found behind (`script`).
    pub outer: Vec<String>,
}

/// Interactive shells: in the foreground with nothing under them, the agent
/// that ran in the pane has exited or crashed, whatever its last frame shows.
pub const SHELLS: &[&str] = &[
    "bash", "rbash", "zsh", "sh", "dash", "fish", "ksh", "ksh93", "mksh", "pdksh", "tcsh", "csh",
    "ash", "yash", "posh", "nu", "elvish", "pwsh",
];

/// Programs that give what they run a terminal of their own and pass the
/// pane's keys and screen through: the pane shows that inner terminal, so
/// its foreground is what is judged (an idle shell behind `script` or sudo is
/// an idle shell).
pub const TERMINAL_WRAPPERS: &[&str] = &[
    "script",
    "sudo",
    "su",
    "unbuffer",
    "poetry",
    "pipenv",
    "asciinema",
    "ttyrec",
    "expect",
];

/// Programs that show another terminal's screen and pass keys on to it: what
/// runs behind them cannot be checked from here, so nothing is typed through
/// them (watch the inner session itself, `host:session`).
pub const RELAYS: &[&str] = &[
    "tmux",
    "screen",
    "ssh",
    "mosh-client",
    "mosh",
    "et",
    "telnet",
    "sshpass",
    "autossh",
];

impl Foreground {
    /// The names it goes by, without a login shell's `-` or a path.
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.command.as_str())
            .chain(self.process.as_deref())
            .map(|name| {
                let name = name.trim_start_matches('-');
                name.rsplit('/').next().unwrap_or(name)
            })
    }

    /// The shell, when one is in the foreground with nothing running in
    /// front under it: its background or stopped jobs (a suspended agent)
    /// do not count, a wrapper's agent (`bash -c claude`) does; an unknown
    /// child count on a shell is read as exited (a keystroke into a shell
    /// runs as a command).
    pub fn idle_shell(&self) -> Option<&'static str> {
        let shell = self
            .names()
            .find_map(|name| SHELLS.iter().find(|&&shell| shell == name))?;
        (self.running_child != Some(true)).then_some(*shell)
    }

    /// Why the agent is gone, if it is: the pane's program ended, or an idle
    /// shell is in front.
    pub fn gone(&self) -> Option<String> {
        if self.dead {
            return Some(format!(
                "the pane's program ({}) ended and its pane is dead",
                self.command
            ));
        }
        self.idle_shell().map(|shell| {
            format!("a shell ({shell}) is in the foreground with nothing running under it")
        })
    }

    /// The relay in front, if one is: the front program itself, a wrapper
    /// it was found behind, or what a shell in front waits on (`bash -c 'ssh
    /// box; bash'`). An agent's own children are its business: an MCP server
    /// started as `ssh` is no relay of the pane's.
    pub fn relay(&self) -> Option<&'static str> {
        let shell_in_front = self.names().any(|name| SHELLS.contains(&name));
        let waited_on = self
            .children_in_front
            .iter()
            .filter(|_| shell_in_front)
            .map(String::as_str);
        self.names()
            .chain(self.outer.iter().map(String::as_str))
            .chain(waited_on)
            .find_map(|name| RELAYS.iter().find(|&&relay| relay == name))
            .copied()
    }
}

/// Why a stop must not be typed into, and the words for it, if it must not:
/// the agent gone from the pane, a relay in front, a tmux mode or
/// synchronised panes taking the keys, or no input box the profile knows.
pub(super) fn refusal_of(
    verdict: &Verdict,
    foreground: Option<&Foreground>,
    exited: Option<String>,
) -> Option<(Refusal, String)> {
    if let Some(gone) = exited {
        return Some((Refusal::AgentExited, format!("the agent exited: {gone}")));
    }
    if let Some(relay) = foreground.and_then(Foreground::relay) {
        let why = format!(
            "the pane runs {relay}, which relays a terminal this monitor cannot check (watch that session itself)"
        );
        return Some((Refusal::Relay, why));
    }
    if foreground.is_some_and(|f| f.in_mode) {
        let why =
            "the pane is in a tmux mode (copy mode): keys would go to the mode, not the agent";
        return Some((Refusal::PaneInMode, why.to_string()));
    }
    if foreground.is_some_and(|f| f.synchronized) {
        let why =
            "the window's panes are synchronised (synchronize-panes): a key would reach every pane";
        return Some((Refusal::Synchronized, why.to_string()));
    }
    (!verdict.input_box).then(|| (Refusal::NoInputBox, "no input box recognised".to_string()))
}

/// Whether a pane shows an agent to watch: a profile recognises its screen
/// and tmux does not say a shell is its foreground program (an agent's last
/// frame above a shell prompt is an exited agent). At first sight, a target
/// whose active pane does not is searched for a pane that does.
pub fn shows_an_agent(text: &str, current_command: Option<&str>, profiles: &Profiles) -> bool {
    let shell_in_front = current_command.is_some_and(|command| {
        Foreground {
            command: command.to_string(),
            ..Foreground::default()
        }
        .idle_shell()
        .is_some()
    });
    !shell_in_front && classify::detect_profile(text, profiles).is_some()
}
