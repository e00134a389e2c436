//! Session-monitor coordinates: `session` or `host:session`, validated up
//! front, and the name of the detached monitor session that watches one.
//!
//! A multiplexer silently REWRITES some names (`:` and `.` become `_`), and a
//! shell interprets others, so such a name is refused with its reason instead
//! of watching something else (seed, "Coordinates and substrate").

use std::fmt;

/// A watched session: on this machine, or on an ssh alias.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    pub host: Option<String>,
    pub session: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host}:{}", self.session),
            None => f.write_str(&self.session),
        }
    }
}

impl Target {
    /// Parses `session` or `host:session`; the error is one line saying what is wrong.
    pub fn parse(text: &str) -> Result<Target, String> {
        let (host, session) = match text.split_once(':') {
            Some((host, session)) => (Some(host), session),
            None => (None, text),
        };
        if let Some(host) = host {
            check_host(host).map_err(|why| format!("target `{}`: host {why}", printable(text)))?;
        }
        check_session(session)
            .map_err(|why| format!("target `{}`: session {why}", printable(text)))?;
        Ok(Target {
            host: host.map(str::to_string),
            session: session.to_string(),
        })
    }

    /// The detached monitor's session name: `monitor-<session>` or
    /// `monitor-<host>-<session>` where that decodes unambiguously (no `-` in
    /// the parts), else the injective fallback `monitor_x<hex of the target>`.
    pub fn monitor_session(&self) -> String {
        let plain_ok = !self.session.contains('-')
            && self.host.as_deref().is_none_or(|h| !h.contains(['-', '.']));
        if plain_ok {
            match &self.host {
                Some(host) => format!("monitor-{host}-{}", self.session),
                None => format!("monitor-{}", self.session),
            }
        } else {
            let hex: String = self
                .to_string()
                .bytes()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("monitor_x{hex}")
        }
    }

    /// The target a monitor session name stands for, if it is one of ours.
    pub fn from_monitor_session(name: &str) -> Option<Target> {
        if let Some(hex) = name.strip_prefix("monitor_x") {
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                })
                .collect();
            return Target::parse(&String::from_utf8(bytes?).ok()?).ok();
        }
        let rest = name.strip_prefix("monitor-")?;
        match rest.split_once('-') {
            Some((host, session)) => Target::parse(&format!("{host}:{session}")).ok(),
            None => Target::parse(rest).ok(),
        }
    }
}

/// tmux rewrites `:` and `.`; a shell reads spaces, quotes, `$`, `;` and friends.
fn check_session(session: &str) -> Result<(), String> {
    if session.is_empty() {
        return Err("name is empty".to_string());
    }
    if session.starts_with('-') {
        return Err("name starts with `-`, which a command would read as a flag".to_string());
    }
    if let Some(bad) = session
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || "_-+@%,".contains(c)))
    {
        return Err(format!(
            "name holds {}, which tmux would rewrite or a shell would interpret (allowed: letters, digits, _ - + @ % ,)",
            describe(bad)
        ));
    }
    Ok(())
}

/// An ssh alias: what `Host` lines hold, never an option or a shell word.
fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("alias is empty".to_string());
    }
    if host.starts_with('-') {
        return Err("alias starts with `-`, which ssh would read as an option".to_string());
    }
    if let Some(bad) = host
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
    {
        return Err(format!(
            "alias holds {}, which is not an ssh alias (allowed: letters, digits, _ - .)",
            describe(bad)
        ));
    }
    Ok(())
}

fn describe(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("{:?}", c)
    } else {
        format!("`{c}`")
    }
}

fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn local_and_remote_targets_parse() {
        assert_eq!(
            Target::parse("build").unwrap(),
            Target {
                host: None,
                session: "build".into()
            }
        );
        assert_eq!(
            Target::parse("box-1.lan:build_2").unwrap(),
            Target {
                host: Some("box-1.lan".into()),
                session: "build_2".into()
            }
        );
    }

    #[test]
    fn names_a_multiplexer_would_rewrite_or_a_shell_would_read_are_refused() {
        for (bad, why) in [
            ("", "session name is empty"),
            ("a.b", "`.`"),
            ("h:a:b", "`:`"),
            ("a b", "' '"),
            ("$HOME", "`$`"),
            ("a;rm", "`;`"),
            ("-t", "starts with `-`"),
            ("-oProxyCommand=x:s", "host alias starts with `-`"),
            ("h$x:s", "host alias holds `$`"),
            ("\u{1b}[31m", "'\\u{1b}'"),
            (":s", "host alias is empty"),
        ] {
            let err = Target::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(!err.contains('\u{1b}'), "the error is printable: {err:?}");
        }
    }

    #[test]
    fn monitor_session_names_are_injective() {
        let targets = [
            "a", "a-b", "x:a", "x:a-b", "x-y:a", "x.y:a", "a-b-c", "monitor", "b",
        ];
        let names: Vec<String> = targets
            .iter()
            .map(|t| Target::parse(t).unwrap().monitor_session())
            .collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(names[0], "monitor-a");
        assert_eq!(names[2], "monitor-x-a");
        for (target, name) in targets.iter().zip(&names) {
            assert_eq!(
                Target::from_monitor_session(name).unwrap().to_string(),
                *target,
                "{name}"
            );
        }
        assert_eq!(Target::from_monitor_session("work"), None);
    }
}
