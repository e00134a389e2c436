//! The fleet's config file (`watch --config FILE`, TOML): targets local and
//! remote, each with its own probes, budget, nudge and profile; `[defaults]`
//! for all of them; `[sinks]`; `metrics_listen`; `[server]`.
//!
//! The whole file is checked before anything runs, and every mistake is
//! named by its line and key, all of them at once: the parser recovers past
//! a syntax error, and the checker goes on past a bad value, so a fleet's
//! file is fixed in one pass, not one mistake per restart.

use std::fmt;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::Path;

use classify::Profiles;
use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use watchdog::session::target::Target;
use watchdog::session::{DEFAULT_BUDGET, DEFAULT_NUDGE_TEXT};

use super::ProbesOn;
use super::target_settings::{SessionPattern, TargetSettings};
use crate::alert::AlertFormat;
use crate::server_args::ServerArgs;

/// More nudges than this without progress is not a budget but a loop.
pub(super) const MAX_NUDGE_BUDGET: i64 = 100;
/// A fleet of a thousand targets is a few hundred KiB; more is not a config file.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Each target's own keys, which `[defaults]` gives for all of them.
const PER_TARGET: &[&str] = &[
    "work_probe",
    "progress_probe",
    "nudge_budget",
    "nudge_text",
    "profile",
    "probes_on",
];
/// The process's timing, in `[defaults]` only.
const TIMING: &[&str] = &["interval", "capture_timeout", "probe_timeout"];
const SINKS: &[&str] = &["alert_cmd", "alert_format", "alertmanager"];
const SERVER: &[&str] = &["socket_name", "socket_path", "tmux_bin", "ssh_config"];
const TOP: &[&str] = &[
    "metrics_listen",
    "log",
    "defaults",
    "sinks",
    "server",
    "hosts",
    "targets",
];
/// A `[hosts.ALIAS]` table: that host's own tmux server and binary.
const HOST: &[&str] = &["socket_name", "socket_path", "tmux_bin"];

/// One mistake in the file: where, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mistake {
    pub(super) line: usize,
    /// The key's path (`targets[1].nudge_budget`, `sinks.alert_format`);
    /// empty for a syntax error, which no key owns.
    pub(super) key: String,
    pub(super) message: String,
}

impl fmt::Display for Mistake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.line, self.message)
        } else {
            write!(f, "{}: {}: {}", self.line, self.key, self.message)
        }
    }
}

/// Why a config file gives no settings.
#[derive(Debug)]
pub(super) enum LoadError {
    /// It could not be read at all (missing, not a regular file, too large, not UTF-8).
    Unreadable(String),
    /// What is wrong in it, in the file's order.
    Mistakes(Vec<Mistake>),
}

/// What a valid file says; what it leaves out is the command line's default.
#[derive(Debug)]
pub(super) struct Config {
    pub(super) targets: Vec<TargetSettings>,
    pub(super) interval: Option<u64>,
    pub(super) capture_timeout: Option<u64>,
    pub(super) probe_timeout: Option<u64>,
    pub(super) alert_cmd: Option<String>,
    pub(super) alert_format: Option<AlertFormat>,
    pub(super) alertmanager: Option<String>,
    pub(super) metrics_listen: Option<SocketAddr>,
    /// `log`: which poll lines are printed.
    pub(super) log: Option<super::report::LogMode>,
    /// The `[server]` table, when the file has one.
    pub(super) server: Option<ServerArgs>,
    /// Targets that name a pattern of sessions (`sessions = "agent-*"`).
    pub(super) patterns: Vec<SessionPattern>,
    /// `[hosts.ALIAS]`: a host's own tmux server and binary.
    pub(super) per_host: std::collections::BTreeMap<String, crate::server_args::HostServer>,
}

/// Reads and checks the file at `path`; `profiles` are the ones a target may name.
pub(super) fn read(path: &Path, profiles: &Profiles) -> Result<Config, LoadError> {
    let bytes = probes::fs::file::read_regular(path, MAX_CONFIG_BYTES)
        .map_err(|error| LoadError::Unreadable(error.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|error| {
        LoadError::Unreadable(format!(
            "is not UTF-8 text (byte {})",
            error.utf8_error().valid_up_to()
        ))
    })?;
    parse(&text, profiles).map_err(LoadError::Mistakes)
}

/// Checks a config file's text: its settings, or every mistake in it.
pub(super) fn parse(text: &str, profiles: &Profiles) -> Result<Config, Vec<Mistake>> {
    let (document, errors) = DeTable::parse_recoverable(text);
    let mut checker = Checker {
        text,
        profiles,
        mistakes: Vec::new(),
    };
    if !errors.is_empty() {
        // What the parser recovered around a syntax error is a guess: its
        // values are not checked, so no mistake is reported that is not one.
        for error in errors {
            let span = error.span().unwrap_or(0..0);
            // The parser's message names no key; the span is the key's text
            // for a duplicate, so the line says which one.
            let key = text
                .get(span.clone())
                .map(|k| k.trim().trim_matches(['[', ']']).trim())
                .filter(|k| {
                    error.message().contains("duplicate")
                        && !k.is_empty()
                        && !k.contains(['\n', '='])
                })
                .unwrap_or("")
                .to_string();
            checker.mistake(span, &key, error.message());
        }
        return Err(checker.finish());
    }
    let config = checker.document(document.get_ref());
    match checker.finish() {
        mistakes if mistakes.is_empty() => Ok(config),
        mistakes => Err(mistakes),
    }
}

/// The keys one target may be given, from `[defaults]` or its own table.
#[derive(Debug, Default, Clone)]
struct Layer {
    work_probe: Option<String>,
    progress_probe: Option<String>,
    nudge_budget: Option<u32>,
    nudge_text: Option<String>,
    /// `Some(None)`: `auto`, overriding a default profile.
    profile: Option<Option<String>>,
    probes_on: Option<ProbesOn>,
}

type Value<'s> = Spanned<DeValue<'s>>;

struct Checker<'s, 'p> {
    text: &'s str,
    profiles: &'p Profiles,
    mistakes: Vec<Mistake>,
}

impl<'s> Checker<'s, '_> {
    fn finish(&mut self) -> Vec<Mistake> {
        let mut mistakes = std::mem::take(&mut self.mistakes);
        mistakes.sort_by_key(|m| m.line);
        mistakes
    }

    fn line(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        1 + self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }

    fn mistake(&mut self, span: Range<usize>, key: &str, message: impl Into<String>) {
        self.mistakes.push(Mistake {
            line: self.line(&span),
            key: key.to_string(),
            message: message.into(),
        });
    }

    fn document(&mut self, top: &DeTable<'s>) -> Config {
        let fields = self.keys(top, "", TOP);
        let mut defaults = Layer::default();
        let mut config = Config {
            targets: Vec::new(),
            interval: None,
            capture_timeout: None,
            probe_timeout: None,
            alert_cmd: None,
            alert_format: None,
            alertmanager: None,
            metrics_listen: None,
            log: None,
            server: None,
            patterns: Vec::new(),
            per_host: std::collections::BTreeMap::new(),
        };
        if let Some(value) = fields.get("defaults")
            && let Some(table) = self.table(value, "defaults")
        {
            let known: Vec<&'static str> = PER_TARGET.iter().chain(TIMING).copied().collect();
            let fields = self.keys(table, "defaults", &known);
            defaults = self.layer(&fields, "defaults");
            config.interval = self.duration(fields.get("interval"), "defaults.interval");
            config.capture_timeout =
                self.duration(fields.get("capture_timeout"), "defaults.capture_timeout");
            config.probe_timeout =
                self.duration(fields.get("probe_timeout"), "defaults.probe_timeout");
        }
        if let Some(value) = fields.get("sinks")
            && let Some(table) = self.table(value, "sinks")
        {
            let fields = self.keys(table, "sinks", SINKS);
            config.alert_cmd = self.command(fields.get("alert_cmd"), "sinks.alert_cmd");
            config.alert_format = self.alert_format(fields.get("alert_format"));
            config.alertmanager = self.alertmanager(fields.get("alertmanager"));
        }
        config.metrics_listen = self.metrics_listen(fields.get("metrics_listen"));
        config.log = self.log(fields.get("log"));
        if let Some(value) = fields.get("server")
            && let Some(table) = self.table(value, "server")
        {
            config.server = Some(self.server(table));
        }
        (config.targets, config.patterns) = self.targets(fields.get("targets").copied(), &defaults);
        if let Some(value) = fields.get("hosts")
            && let Some(table) = self.table(value, "hosts")
        {
            config.per_host = self.hosts(table, &config.targets, &config.patterns);
        }
        config
    }

    /// The known keys of `table`; every other key is a mistake, said with
    /// where it belongs when it belongs somewhere else.
    fn keys<'t>(
        &mut self,
        table: &'t DeTable<'s>,
        path: &str,
        known: &[&'static str],
    ) -> std::collections::BTreeMap<&'static str, &'t Value<'s>> {
        let mut found = std::collections::BTreeMap::new();
        for (key, value) in table.iter() {
            let name: &str = key.get_ref();
            match known.iter().find(|k| **k == name) {
                Some(known) => {
                    found.insert(*known, value);
                }
                None => {
                    let message = match home_of(name) {
                        Some(home) => format!("unknown key here: it belongs in {home}"),
                        None => format!("unknown key (expected one of: {})", known.join(", ")),
                    };
                    self.mistake(key.span(), &join(path, name), message);
                }
            }
        }
        found
    }

    fn table<'t>(&mut self, value: &'t Value<'s>, path: &str) -> Option<&'t DeTable<'s>> {
        match value.get_ref() {
            DeValue::Table(table) => Some(table),
            other => {
                self.mistake(
                    value.span(),
                    path,
                    format!("expected a table ([{path}]), found {}", kind(other)),
                );
                None
            }
        }
    }

    fn layer(
        &mut self,
        fields: &std::collections::BTreeMap<&'static str, &Value<'s>>,
        path: &str,
    ) -> Layer {
        let key = |name: &str| join(path, name);
        Layer {
            work_probe: self.command(fields.get("work_probe"), &key("work_probe")),
            progress_probe: self.command(fields.get("progress_probe"), &key("progress_probe")),
            nudge_budget: self.budget(fields.get("nudge_budget"), &key("nudge_budget")),
            nudge_text: self.nudge_text(fields.get("nudge_text"), &key("nudge_text")),
            profile: self.profile(fields.get("profile"), &key("profile")),
            probes_on: self.probes_on(fields.get("probes_on"), &key("probes_on")),
        }
    }

    fn targets(
        &mut self,
        value: Option<&Value<'s>>,
        defaults: &Layer,
    ) -> (Vec<TargetSettings>, Vec<SessionPattern>) {
        let no_targets = "no targets: add a [[targets]] table with target = \"session\" or \"host:session\" \
             (or sessions = \"agent-*\", with host = \"alias\" for another machine's)";
        let Some(value) = value else {
            self.mistake(0..0, "targets", no_targets);
            return (Vec::new(), Vec::new());
        };
        let DeValue::Array(items) = value.get_ref() else {
            let found = kind(value.get_ref());
            self.mistake(
                value.span(),
                "targets",
                format!("expected [[targets]] tables, found {found}"),
            );
            return (Vec::new(), Vec::new());
        };
        if items.is_empty() {
            self.mistake(value.span(), "targets", no_targets);
        }
        let mut targets: Vec<(TargetSettings, usize)> = Vec::new();
        let mut patterns: Vec<(SessionPattern, usize)> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let path = format!("targets[{index}]");
            let Some(table) = self.table(item, &path) else {
                continue;
            };
            let mut known = vec!["target", "sessions", "host", "socket_name", "socket_path"];
            known.extend(PER_TARGET);
            let fields = self.keys(table, &path, &known);
            let own = self.layer(&fields, &path);
            let server = self.target_server(&fields, &path);
            let settings = |target: Target| TargetSettings {
                target,
                server: server.clone(),
                work_probe: own
                    .work_probe
                    .clone()
                    .or_else(|| defaults.work_probe.clone()),
                progress_probe: own
                    .progress_probe
                    .clone()
                    .or_else(|| defaults.progress_probe.clone()),
                nudge_budget: own
                    .nudge_budget
                    .or(defaults.nudge_budget)
                    .unwrap_or(DEFAULT_BUDGET),
                nudge_text: own
                    .nudge_text
                    .clone()
                    .or_else(|| defaults.nudge_text.clone())
                    .unwrap_or_else(|| DEFAULT_NUDGE_TEXT.to_string()),
                profile: own
                    .profile
                    .clone()
                    .or_else(|| defaults.profile.clone())
                    .flatten(),
                probes_on: own.probes_on.or(defaults.probes_on).unwrap_or_default(),
            };
            match (fields.get("target"), fields.get("sessions")) {
                (Some(_), Some(sessions)) => {
                    self.mistake(
                        sessions.span(),
                        &join(&path, "sessions"),
                        "a target names one session (target) or a pattern of them (sessions), not both",
                    );
                }
                (None, None) => {
                    self.mistake(
                        item.span(),
                        &join(&path, "target"),
                        "missing: each [[targets]] table names its target, \"session\" or \"host:session\" \
                         (or a pattern of sessions: sessions = \"agent-*\")",
                    );
                }
                (Some(value), None) => {
                    if let Some(host) = fields.get("host") {
                        self.mistake(
                            host.span(),
                            &join(&path, "host"),
                            "host goes with sessions = \"PATTERN\"; one session of a host is target = \"host:session\"",
                        );
                    }
                    if let Some(target) = self.target(value, &join(&path, "target"), &targets) {
                        if target.host.is_some()
                            && let Some((key, value)) = own_socket(&fields)
                        {
                            self.mistake(
                                value.span(),
                                &join(&path, key),
                                "a target's own tmux server is for a session on this machine; \
                                 a host's server goes in its [hosts.ALIAS] table",
                            );
                        }
                        let line = self.line(&value.span());
                        targets.push((settings(target), line));
                    }
                }
                (None, Some(value)) => {
                    if let Some((key, value)) = own_socket(&fields) {
                        self.mistake(
                            value.span(),
                            &join(&path, key),
                            "a pattern's sessions are on the server [server] names (or the host's \
                             [hosts.ALIAS] table); a target's own server goes with target = \"session\"",
                        );
                    }
                    let host = fields
                        .get("host")
                        .and_then(|h| self.string(h, &join(&path, "host")));
                    if let Some(pattern) =
                        self.pattern(value, host, &join(&path, "sessions"), &patterns)
                    {
                        let template = settings(Target {
                            host: pattern.0.clone(),
                            session: pattern.1.clone(),
                        });
                        let line = self.line(&value.span());
                        patterns.push((
                            SessionPattern {
                                host: pattern.0,
                                glob: pattern.1,
                                template,
                            },
                            line,
                        ));
                    }
                }
            }
        }
        (
            targets.into_iter().map(|(settings, _)| settings).collect(),
            patterns.into_iter().map(|(pattern, _)| pattern).collect(),
        )
    }

    /// A `[[targets]]` table's own tmux server (`socket_name` as `-L`, or
    /// `socket_path` as `-S`, not both); `None`: the one `[server]` names.
    fn target_server(
        &mut self,
        fields: &std::collections::BTreeMap<&'static str, &Value<'s>>,
        path: &str,
    ) -> Option<probes::tmux::Server> {
        let text = |this: &mut Self, key: &str| -> Option<String> {
            let value = fields.get(key)?;
            let key = join(path, key);
            let text = this.string(value, &key)?;
            if text.is_empty() {
                this.mistake(
                    value.span(),
                    &key,
                    "empty: leave the key out for [server]'s",
                );
                return None;
            }
            Some(text)
        };
        let name = text(self, "socket_name");
        let socket = text(self, "socket_path");
        match (name, socket) {
            (Some(_), Some(_)) => {
                if let Some(value) = fields.get("socket_path") {
                    self.mistake(
                        value.span(),
                        &join(path, "socket_path"),
                        "give socket_name or socket_path, not both (as -L and -S)",
                    );
                }
                None
            }
            (Some(name), None) => Some(probes::tmux::Server::Name(name)),
            (None, Some(socket)) => Some(probes::tmux::Server::Path(socket)),
            (None, None) => None,
        }
    }

    /// A pattern of sessions (`*`, `?`) on a host (`None`: this machine),
    /// each name it can match one the command line would take, given once.
    fn pattern(
        &mut self,
        value: &Value<'s>,
        host: Option<String>,
        key: &str,
        before: &[(SessionPattern, usize)],
    ) -> Option<(Option<String>, String)> {
        let glob = self.string(value, key)?;
        if glob.is_empty() {
            self.mistake(
                value.span(),
                key,
                "an empty pattern: give one such as \"agent-*\"",
            );
            return None;
        }
        // What it matches is a session name: checked as one, its wildcards
        // standing for a letter.
        let example = glob.replace(['*', '?'], "x");
        let spelled = match &host {
            Some(host) => format!("{host}:{example}"),
            None => example,
        };
        if let Err(error) = Target::parse(&spelled) {
            self.mistake(value.span(), key, error.to_string());
            return None;
        }
        if let Some((_, line)) = before
            .iter()
            .find(|(p, _)| p.host == host && p.glob == glob)
        {
            self.mistake(
                value.span(),
                key,
                format!("the pattern `{glob}` is given twice for this host (first at line {line})"),
            );
            return None;
        }
        Some((host, glob))
    }

    /// A target as the command line spells it, given once.
    fn target(
        &mut self,
        value: &Value<'s>,
        key: &str,
        before: &[(TargetSettings, usize)],
    ) -> Option<Target> {
        let text = self.string(value, key)?;
        let target = match Target::parse(&text) {
            Ok(target) => target,
            Err(error) => {
                self.mistake(value.span(), key, error.to_string());
                return None;
            }
        };
        if let Some((_, line)) = before.iter().find(|(t, _)| t.target == target) {
            self.mistake(
                value.span(),
                key,
                format!("`{target}` is given twice (first at line {line})"),
            );
            return None;
        }
        Some(target)
    }

    fn string(&mut self, value: &Value<'s>, key: &str) -> Option<String> {
        match value.get_ref() {
            DeValue::String(text) => Some(text.to_string()),
            other => {
                self.mistake(
                    value.span(),
                    key,
                    format!("expected a string, found {}", kind(other)),
                );
                None
            }
        }
    }

    fn integer(&mut self, value: &Value<'s>, key: &str) -> Option<i64> {
        if !matches!(value.get_ref(), DeValue::Integer(_)) {
            let found = kind(value.get_ref());
            self.mistake(
                value.span(),
                key,
                format!("expected a whole number, found {found}"),
            );
            return None;
        }
        match i64::deserialize(ValueDeserializer::from(value.clone())) {
            Ok(number) => Some(number),
            Err(error) => {
                self.mistake(value.span(), key, error.message());
                None
            }
        }
    }

    /// A shell command: a probe or the alert command.
    fn command(&mut self, value: Option<&&Value<'s>>, key: &str) -> Option<String> {
        let value = value?;
        let command = self.string(value, key)?;
        if command.trim().is_empty() {
            self.mistake(
                value.span(),
                key,
                "an empty command: leave the key out for none",
            );
            return None;
        }
        Some(command)
    }

    fn budget(&mut self, value: Option<&&Value<'s>>, key: &str) -> Option<u32> {
        let value = value?;
        let budget = self.integer(value, key)?;
        if !(1..=MAX_NUDGE_BUDGET).contains(&budget) {
            self.mistake(
                value.span(),
                key,
                format!(
                    "{budget} is not a nudge budget: give 1 to {MAX_NUDGE_BUDGET} (nudges without progress before escalating)"
                ),
            );
            return None;
        }
        u32::try_from(budget).ok()
    }

    fn nudge_text(&mut self, value: Option<&&Value<'s>>, key: &str) -> Option<String> {
        let value = value?;
        let text = self.string(value, key)?;
        if text.trim().is_empty() || text.chars().any(char::is_control) {
            self.mistake(
                value.span(),
                key,
                "must be one non-empty line without control characters",
            );
            return None;
        }
        Some(text)
    }

    fn profile(&mut self, value: Option<&&Value<'s>>, key: &str) -> Option<Option<String>> {
        let value = value?;
        let name = self.string(value, key)?;
        if name == "auto" {
            return Some(None);
        }
        if self.profiles.get(&name).is_none() {
            let known: Vec<&str> = std::iter::once("auto")
                .chain(self.profiles.names())
                .collect();
            self.mistake(
                value.span(),
                key,
                format!("unknown profile `{name}` (known: {})", known.join(", ")),
            );
            return None;
        }
        Some(Some(name))
    }

    /// Whole seconds, from one to a year: `30`, or a duration as people write
    /// it (`"30s"`, `"5m"`, `"1h 30m"`, or ISO 8601's `"PT30S"`).
    fn duration(&mut self, value: Option<&&Value<'s>>, key: &str) -> Option<u64> {
        let value = value?;
        let how = "write seconds (30) or a duration such as \"30s\", \"5m\", \"1h 30m\"";
        let seconds = match value.get_ref() {
            DeValue::Integer(_) => self.integer(value, key)?,
            DeValue::String(text) => match text.parse::<jiff::SignedDuration>() {
                Ok(duration) if duration.subsec_nanos() != 0 => {
                    self.mistake(
                        value.span(),
                        key,
                        format!("`{text}` is not a whole number of seconds"),
                    );
                    return None;
                }
                Ok(duration) => duration.as_secs(),
                Err(_) => {
                    self.mistake(
                        value.span(),
                        key,
                        format!("`{text}` is not a duration: {how}"),
                    );
                    return None;
                }
            },
            other => {
                self.mistake(
                    value.span(),
                    key,
                    format!("expected a duration, found {}: {how}", kind(other)),
                );
                return None;
            }
        };
        match u64::try_from(seconds) {
            Ok(seconds) if (1..=crate::MAX_SECS).contains(&seconds) => Some(seconds),
            _ => {
                self.mistake(
                    value.span(),
                    key,
                    format!(
                        "{seconds} seconds is out of range: give 1 second to a year ({} seconds)",
                        crate::MAX_SECS
                    ),
                );
                None
            }
        }
    }

    /// Where a target's probes run: `monitor` (this machine) or `host` (its ssh host).
    fn probes_on(&mut self, value: Option<&&Value<'s>>, key: &str) -> Option<ProbesOn> {
        let value = value?;
        match self.string(value, key)?.as_str() {
            "monitor" => Some(ProbesOn::Monitor),
            "host" => Some(ProbesOn::Host),
            other => {
                self.mistake(
                    value.span(),
                    key,
                    format!(
                        "`{other}` is not where probes run: \"monitor\" (this machine) or \"host\" (the target's ssh host, in its cycle's one round trip)"
                    ),
                );
                None
            }
        }
    }

    fn alert_format(&mut self, value: Option<&&Value<'s>>) -> Option<AlertFormat> {
        let value = value?;
        let key = "sinks.alert_format";
        match self.string(value, key)?.as_str() {
            "text" => Some(AlertFormat::Text),
            "html" => Some(AlertFormat::Html),
            other => {
                self.mistake(
                    value.span(),
                    key,
                    format!("`{other}` is not an alert format: text or html"),
                );
                None
            }
        }
    }

    /// Alertmanager's base URL, `http://host:port` (its API is under it).
    fn alertmanager(&mut self, value: Option<&&Value<'s>>) -> Option<String> {
        let value = value?;
        let key = "sinks.alertmanager";
        let url = self.string(value, key)?;
        match super::alertmanager::parse_url(&url) {
            Ok(url) => Some(url),
            Err(why) => {
                self.mistake(value.span(), key, why);
                None
            }
        }
    }

    /// `log = "polls"` (the seed's line per poll) or `"changes"`.
    fn log(&mut self, value: Option<&&Value<'s>>) -> Option<super::report::LogMode> {
        let value = value?;
        match self.string(value, "log")?.as_str() {
            "polls" => Some(super::report::LogMode::Polls),
            "changes" => Some(super::report::LogMode::Changes),
            other => {
                self.mistake(
                    value.span(),
                    "log",
                    format!(
                        "`{}` is not a log mode: polls (a line per target per poll) or changes (a line when a target's state or action changes)",
                        other.escape_debug()
                    ),
                );
                None
            }
        }
    }

    fn metrics_listen(&mut self, value: Option<&&Value<'s>>) -> Option<SocketAddr> {
        let value = value?;
        let key = "metrics_listen";
        let text = self.string(value, key)?;
        match text.parse::<SocketAddr>() {
            Ok(address) => Some(address),
            Err(_) => {
                self.mistake(
                    value.span(),
                    key,
                    format!(
                        "`{}` is not an address to listen on: give IP:PORT, such as 127.0.0.1:9184",
                        text.escape_debug()
                    ),
                );
                None
            }
        }
    }

    fn server(&mut self, table: &DeTable<'s>) -> ServerArgs {
        let fields = self.keys(table, "server", SERVER);
        let name = |this: &mut Self, key: &str| {
            let value = fields.get(key)?;
            let path = join("server", key);
            let text = this.string(value, &path)?;
            if text.is_empty() {
                this.mistake(
                    value.span(),
                    &path,
                    "empty: leave the key out for the default",
                );
                return None;
            }
            Some(text)
        };
        let socket_name = name(self, "socket_name");
        let socket_path = name(self, "socket_path");
        let tmux_bin = name(self, "tmux_bin");
        let ssh_config = name(self, "ssh_config");
        if socket_name.is_some()
            && socket_path.is_some()
            && let Some(value) = fields.get("socket_path")
        {
            self.mistake(
                value.span(),
                "server.socket_path",
                "give socket_name or socket_path, not both (as -L and -S)",
            );
        }
        ServerArgs::new(socket_name, socket_path, tmux_bin, ssh_config)
    }
}

impl<'s> Checker<'s, '_> {
    /// `[hosts.ALIAS]` tables: each a host some target names, each with at
    /// most one of `socket_name` and `socket_path`.
    fn hosts(
        &mut self,
        table: &DeTable<'s>,
        targets: &[TargetSettings],
        patterns: &[SessionPattern],
    ) -> std::collections::BTreeMap<String, crate::server_args::HostServer> {
        let mut hosts = std::collections::BTreeMap::new();
        for (key, value) in table.iter() {
            let alias: &str = key.get_ref();
            let path = join("hosts", alias);
            if let Err(error) = Target::parse(&format!("{alias}:x")) {
                self.mistake(key.span(), &path, error.to_string());
                continue;
            }
            let named = targets
                .iter()
                .any(|t| t.target.host.as_deref() == Some(alias))
                || patterns.iter().any(|p| p.host.as_deref() == Some(alias));
            if !named {
                self.mistake(
                    key.span(),
                    &path,
                    "no target names this host: a [hosts.ALIAS] table is for a host some target is on",
                );
            }
            let Some(fields) = self.table(value, &path) else {
                continue;
            };
            let fields = self.keys(fields, &path, HOST);
            let text = |this: &mut Self, name: &str| -> Option<String> {
                let value = fields.get(name)?;
                let key = join(&path, name);
                let text = this.string(value, &key)?;
                if text.is_empty() {
                    this.mistake(
                        value.span(),
                        &key,
                        "empty: leave the key out for the default",
                    );
                    return None;
                }
                Some(text)
            };
            let server = crate::server_args::HostServer {
                socket_name: text(self, "socket_name"),
                socket_path: text(self, "socket_path"),
                tmux_bin: text(self, "tmux_bin"),
            };
            if server.socket_name.is_some()
                && server.socket_path.is_some()
                && let Some(value) = fields.get("socket_path")
            {
                self.mistake(
                    value.span(),
                    &join(&path, "socket_path"),
                    "give socket_name or socket_path, not both (as -L and -S)",
                );
            }
            hosts.insert(alias.to_string(), server);
        }
        hosts
    }
}

/// The `[[targets]]` table's own server key, when it has one.
fn own_socket<'f, 's>(
    fields: &std::collections::BTreeMap<&'static str, &'f Value<'s>>,
) -> Option<(&'static str, &'f Value<'s>)> {
    ["socket_name", "socket_path"]
        .into_iter()
        .find_map(|key| fields.get(key).map(|value| (key, *value)))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Where a key that is misplaced belongs.
fn home_of(key: &str) -> Option<&'static str> {
    if PER_TARGET.contains(&key) {
        Some("[defaults] or a [[targets]] table")
    } else if TIMING.contains(&key) {
        Some("[defaults]")
    } else if SINKS.contains(&key) {
        Some("[sinks]")
    } else if SERVER.contains(&key) {
        Some("[server]")
    } else if key == "target" {
        Some("a [[targets]] table")
    } else if key == "metrics_listen" || key == "log" {
        Some("the top of the file, before any table")
    } else {
        None
    }
}

/// A TOML value's kind, as a mistake names it.
fn kind(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "a whole number",
        DeValue::Float(_) => "a decimal number",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Config {
        parse(text, Profiles::builtin()).unwrap_or_else(|mistakes| {
            panic!(
                "{}",
                mistakes
                    .iter()
                    .map(|m| format!("{m}\n"))
                    .collect::<String>()
            )
        })
    }

    #[test]
    fn defaults_reach_every_target_and_a_target_overrides_them() {
        let config = parsed(
            r#"
[defaults]
interval = "2m"
work_probe = "echo 3"
nudge_budget = 4
profile = "codex"

[[targets]]
target = "api"

[[targets]]
target = "box:web"
work_probe = "echo 0"
nudge_text = "Go on."
profile = "auto"
"#,
        );
        assert_eq!(config.interval, Some(120));
        let [api, web] = &config.targets[..] else {
            panic!("{:?}", config.targets)
        };
        assert_eq!(
            (api.target.to_string(), api.work_probe.as_deref()),
            ("api".to_string(), Some("echo 3"))
        );
        assert_eq!(
            (
                api.nudge_budget,
                api.nudge_text.as_str(),
                api.profile.as_deref()
            ),
            (4, DEFAULT_NUDGE_TEXT, Some("codex"))
        );
        assert_eq!(web.target.host.as_deref(), Some("box"));
        assert_eq!(
            (web.work_probe.as_deref(), web.nudge_text.as_str()),
            (Some("echo 0"), "Go on.")
        );
        // `auto` undoes the default profile.
        assert_eq!(web.profile, None);
    }

    #[test]
    fn a_file_without_defaults_has_the_command_lines_defaults() {
        let config = parsed("[[targets]]\ntarget = \"api\"\n");
        assert_eq!(config.interval, None);
        assert_eq!(config.targets[0].nudge_budget, DEFAULT_BUDGET);
        assert_eq!(config.targets[0].nudge_text, DEFAULT_NUDGE_TEXT);
        assert_eq!(config.targets[0].probes_on, ProbesOn::Monitor);
        assert!(config.server.is_none());
    }

    #[test]
    fn probes_on_is_monitor_or_host_from_the_defaults_or_the_target() {
        let config = parsed(
            "[defaults]\nprobes_on = \"host\"\n[[targets]]\ntarget = \"box:a\"\n\
             [[targets]]\ntarget = \"box:b\"\nprobes_on = \"monitor\"\n",
        );
        let on: Vec<ProbesOn> = config.targets.iter().map(|t| t.probes_on).collect();
        assert_eq!(on, [ProbesOn::Host, ProbesOn::Monitor]);
        let mistakes = parse(
            "[[targets]]\ntarget = \"box:a\"\nprobes_on = \"remote\"\n",
            Profiles::builtin(),
        )
        .unwrap_err();
        assert_eq!(
            mistakes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "3: targets[0].probes_on: `remote` is not where probes run: \"monitor\" (this machine) \
              or \"host\" (the target's ssh host, in its cycle's one round trip)"
            ]
        );
    }
}
