//! One target's own settings (what it is probed with, its nudge, budget and
//! profile), and the session patterns that stand for many targets: the
//! vocabulary both a config file (`config.rs`) and the command line
//! (`settings.rs`) build, so neither module needs the other's.

use watchdog::session::SessionConfig;
use watchdog::session::target::Target;

use super::ProbesOn;

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
