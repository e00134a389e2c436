//! Control messages from the Lead: one JSON object per line or per inbox file.
//!
//! Messages are told apart by their keys, in this order: `ack`, `type`, a
//! watch item (any key of the watch item that a blind-phase update does not
//! have: [`WATCH_ITEM_KEYS`]), then `blind_phase` (a blind-phase update is
//! exactly `agent`, `step` and `blind_phase`). A
//! message that is not JSON, misses a field or holds a wrong type is refused
//! with an error that names the field; the caller changes nothing.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::render::State;

/// Why a control message was refused. Each names the field that is wrong
/// ([`ControlError::field`]); the monitor changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlError {
    /// Not JSON at all: serde's account of where it broke, kept as the
    /// error's [`source`](std::error::Error::source).
    NotJson {
        /// serde's error.
        error: JsonCause,
    },
    /// JSON, but not an object (an array, a number, …).
    NotAnObject,
    /// A required field is absent.
    Missing {
        /// The field's name.
        field: &'static str,
    },
    /// The field holds a value of the wrong type or range; `got` is its JSON, cut at 40 bytes.
    Wrong {
        /// The field's name.
        field: &'static str,
        /// What it must hold.
        expected: &'static str,
        /// What it held, as JSON.
        got: String,
    },
    /// `ack` names an event that is never repeated, so cannot be acknowledged.
    UnknownAck {
        /// The event named, as JSON.
        got: String,
    },
    /// `type` names no message the monitor knows.
    UnknownType {
        /// The type named, as JSON.
        got: String,
    },
    /// `consultant_reporting` names no level the monitor knows.
    UnknownReporting {
        /// The level named, as JSON.
        got: String,
    },
    /// `timeout_sec` of 0: every pass would be past it.
    ZeroTimeout,
    /// A path with a NUL byte names no file.
    NulInPath {
        /// The field's name.
        field: &'static str,
    },
    /// More seconds than [`crate::MAX_DURATION_SECS`].
    TooLong {
        /// The field's name.
        field: &'static str,
        /// The seconds it held.
        secs: u64,
    },
    /// None of the keys that tell the message kinds apart.
    Unrecognised,
}

impl ControlError {
    /// The field the message got wrong, where one is to blame.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            ControlError::NotJson { .. }
            | ControlError::NotAnObject
            | ControlError::Unrecognised => None,
            ControlError::Missing { field }
            | ControlError::Wrong { field, .. }
            | ControlError::NulInPath { field }
            | ControlError::TooLong { field, .. } => Some(field),
            ControlError::UnknownAck { .. } => Some("ack"),
            ControlError::UnknownType { .. } => Some("type"),
            ControlError::UnknownReporting { .. } => Some("consultant_reporting"),
            ControlError::ZeroTimeout => Some("timeout_sec"),
        }
    }
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::NotJson { error } => write!(f, "not a JSON object: {error}"),
            ControlError::NotAnObject => f.write_str("not a JSON object"),
            ControlError::Missing { field } => write!(f, "missing field `{field}`"),
            ControlError::Wrong {
                field,
                expected,
                got,
            } => write!(f, "field `{field}` must be {expected}, got {got}"),
            ControlError::UnknownAck { got } => write!(
                f,
                "field `ack` is {got:?}; expected {:?} or {:?}",
                State::Stalled.as_str(),
                State::ProcessDied.as_str()
            ),
            ControlError::UnknownType { got } => write!(
                f,
                "field `type` is {got:?}; the only message type is \"shutdown_request\""
            ),
            ControlError::UnknownReporting { got } => write!(
                f,
                "field `consultant_reporting` is {got:?}; expected \"filtered\" or \"full\""
            ),
            ControlError::ZeroTimeout => f.write_str("field `timeout_sec` must be greater than 0"),
            ControlError::NulInPath { field } => write!(f, "field `{field}` holds a NUL byte"),
            ControlError::TooLong { field, secs } => write!(
                f,
                "field `{field}` must be at most {} seconds (a year), got {secs}",
                crate::MAX_DURATION_SECS
            ),
            ControlError::Unrecognised => f.write_str(
                "message has none of the fields `result_path`, `blind_phase`, `ack` or `type`",
            ),
        }
    }
}

impl std::error::Error for ControlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ControlError::NotJson { error } => Some(error.serde()),
            _ => None,
        }
    }
}

/// serde's error for a message that is not JSON, shared so that
/// [`ControlError`] stays `Clone` and comparable: two are equal when serde
/// says the same thing at the same line and column.
#[derive(Debug, Clone)]
pub struct JsonCause(Arc<serde_json::Error>);

impl JsonCause {
    /// serde's error itself (its line, column and category).
    pub fn serde(&self) -> &serde_json::Error {
        &self.0
    }
}

impl From<serde_json::Error> for JsonCause {
    fn from(error: serde_json::Error) -> JsonCause {
        JsonCause(Arc::new(error))
    }
}

impl PartialEq for JsonCause {
    fn eq(&self, other: &JsonCause) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for JsonCause {}

impl fmt::Display for JsonCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How much the Consultant may hear about an item (the seed's `consultant_reporting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporting {
    /// Lifecycle fields only, always.
    Filtered,
    /// Outside the blind phase, `agent_complete` also carries the handoff's `Type` and `Status`.
    Full,
}

/// The seed's watch item, plus the two optional extras of issue 4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchItem {
    /// The agent's name, as on the Lead line.
    pub agent: String,
    /// The plan step it works on.
    pub step: String,
    /// The file whose appearance is `result_ready`.
    pub result_path: String,
    /// The file holding the agent's pid.
    pub pid_file: String,
    /// Seconds after `started_at_epoch` at which the item times out.
    pub timeout_sec: u64,
    /// When the agent started, in epoch seconds.
    pub started_at_epoch: i64,
    /// While set, no handoff header is read (the seed's blind phase).
    pub blind_phase: bool,
    /// How much `agent_complete` tells the Consultant.
    pub consultant_reporting: Reporting,
    /// Overrides the monitor's `--idle-stall` for this item.
    pub idle_stall_sec: Option<u64>,
    /// Related working files whose size and mtime count as progress.
    pub watch_paths: Vec<String>,
}

/// The events a Lead can acknowledge: the two that are repeated until it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckEvent {
    /// `stalled`, repeated until acknowledged.
    Stalled,
    /// `process_died`, repeated until acknowledged.
    ProcessDied,
}

impl AckEvent {
    /// The state whose report it acknowledges.
    pub fn state(self) -> State {
        match self {
            AckEvent::Stalled => State::Stalled,
            AckEvent::ProcessDied => State::ProcessDied,
        }
    }

    /// The seed's word for it (`stalled`, `process_died`).
    pub fn as_str(self) -> &'static str {
        self.state().as_str()
    }
}

/// One parsed control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Start watching an item (`type: watch`).
    Watch(WatchItem),
    /// Set or clear an item's blind phase.
    BlindPhase {
        /// The item's agent.
        agent: String,
        /// The item's step.
        step: String,
        /// The new blind phase.
        blind_phase: bool,
    },
    /// The Lead acknowledges a repeated event: it stops repeating.
    Ack {
        /// The event acknowledged.
        event: AckEvent,
        /// The agent whose event it was.
        agent: String,
    },
    /// Stop watching and exit 0.
    Shutdown,
}

/// The keys that make a message a watch item: the seed's schema and the two
/// extras, less the three a blind-phase update shares with it. A watch item
/// that forgot `result_path` is still a watch item, refused for that field;
/// read as a blind-phase update it would get a misleading error (or, for a
/// registered item, silently apply only `blind_phase` and drop the rest).
pub const WATCH_ITEM_KEYS: [&str; 7] = [
    "result_path",
    "pid_file",
    "timeout_sec",
    "started_at_epoch",
    "consultant_reporting",
    "idle_stall_sec",
    "watch_paths",
];

/// Parses one message. The error names the field.
pub fn parse_control(text: &str) -> Result<Control, ControlError> {
    let value: Value =
        serde_json::from_str(text.trim()).map_err(|e| ControlError::NotJson { error: e.into() })?;
    let Value::Object(obj) = value else {
        return Err(ControlError::NotAnObject);
    };
    if obj.contains_key("ack") {
        let word = string_field(&obj, "ack")?;
        let event = match State::from_word(&word) {
            Some(State::Stalled) => AckEvent::Stalled,
            Some(State::ProcessDied) => AckEvent::ProcessDied,
            _ => return Err(ControlError::UnknownAck { got: word }),
        };
        return Ok(Control::Ack {
            event,
            agent: string_field(&obj, "agent")?,
        });
    }
    if obj.contains_key("type") {
        return match string_field(&obj, "type")?.as_str() {
            "shutdown_request" => Ok(Control::Shutdown),
            other => Err(ControlError::UnknownType {
                got: other.to_owned(),
            }),
        };
    }
    if WATCH_ITEM_KEYS.iter().any(|key| obj.contains_key(*key)) {
        return parse_watch_item(&obj).map(Control::Watch);
    }
    if obj.contains_key("blind_phase") {
        return Ok(Control::BlindPhase {
            agent: string_field(&obj, "agent")?,
            step: step_field(&obj)?,
            blind_phase: bool_field(&obj, "blind_phase")?,
        });
    }
    Err(ControlError::Unrecognised)
}

fn parse_watch_item(obj: &Map<String, Value>) -> Result<WatchItem, ControlError> {
    let agent = string_field(obj, "agent")?;
    let step = step_field(obj)?;
    let result_path = path_field(obj, "result_path")?;
    let pid_file = path_field(obj, "pid_file")?;
    let timeout_sec = duration_field(obj, "timeout_sec")?;
    if timeout_sec == 0 {
        return Err(ControlError::ZeroTimeout);
    }
    let started_at_epoch = match obj.get("started_at_epoch") {
        None => return Err(missing("started_at_epoch")),
        Some(v) => v
            .as_i64()
            .filter(|&n| n >= 0)
            .ok_or_else(|| wrong("started_at_epoch", "a non-negative whole number", v))?,
    };
    let blind_phase = bool_field(obj, "blind_phase")?;
    let consultant_reporting = match string_field(obj, "consultant_reporting")?.as_str() {
        "filtered" => Reporting::Filtered,
        "full" => Reporting::Full,
        other => {
            return Err(ControlError::UnknownReporting {
                got: other.to_owned(),
            });
        }
    };
    let idle_stall_sec = match obj.get("idle_stall_sec") {
        None | Some(Value::Null) => None,
        Some(_) => Some(duration_field(obj, "idle_stall_sec")?),
    };
    let watch_paths = match obj.get("watch_paths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v.as_str() {
                Some(s) if !s.is_empty() => Ok(s.to_owned()),
                _ => Err(wrong("watch_paths", "an array of non-empty strings", v)),
            })
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(wrong("watch_paths", "an array of strings", v)),
    };
    Ok(WatchItem {
        agent,
        step,
        result_path,
        pid_file,
        timeout_sec,
        started_at_epoch,
        blind_phase,
        consultant_reporting,
        idle_stall_sec,
        watch_paths,
    })
}

fn missing(field: &'static str) -> ControlError {
    ControlError::Missing { field }
}

fn wrong(field: &'static str, expected: &'static str, got: &Value) -> ControlError {
    let mut shown = got.to_string();
    if shown.len() > 40 {
        let cut = (0..=40)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    ControlError::Wrong {
        field,
        expected,
        got: shown,
    }
}

fn string_field(obj: &Map<String, Value>, field: &'static str) -> Result<String, ControlError> {
    match obj.get(field) {
        None => Err(missing(field)),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(v) => Err(wrong(field, "a non-empty string", v)),
    }
}

fn path_field(obj: &Map<String, Value>, field: &'static str) -> Result<String, ControlError> {
    let path = string_field(obj, field)?;
    if path.contains('\0') {
        return Err(ControlError::NulInPath { field });
    }
    Ok(path)
}

/// `step` is "a pipeline step number" sent as a string; a bare number is taken too.
fn step_field(obj: &Map<String, Value>) -> Result<String, ControlError> {
    match obj.get("step") {
        None => Err(missing("step")),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_u64() => Ok(n.to_string()),
        Some(v) => Err(wrong("step", "a string or a whole number", v)),
    }
}

fn bool_field(obj: &Map<String, Value>, field: &'static str) -> Result<bool, ControlError> {
    match obj.get(field) {
        None => Err(missing(field)),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(wrong(field, "true or false", v)),
    }
}

fn u64_field(obj: &Map<String, Value>, field: &'static str) -> Result<u64, ControlError> {
    match obj.get(field) {
        None => Err(missing(field)),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| wrong(field, "a non-negative whole number", v)),
    }
}

/// A number of seconds, at most [`crate::MAX_DURATION_SECS`]: a larger one
/// is a mistake that would overflow the clock arithmetic it enters.
fn duration_field(obj: &Map<String, Value>, field: &'static str) -> Result<u64, ControlError> {
    let secs = u64_field(obj, field)?;
    if secs > crate::MAX_DURATION_SECS {
        return Err(ControlError::TooLong { field, secs });
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ITEM: &str = r#"{"agent":"executor","step":"3","result_path":"/r/3.md","pid_file":"/r/3.pid","timeout_sec":600,"started_at_epoch":1000,"blind_phase":false,"consultant_reporting":"filtered"}"#;

    fn without(field: &str) -> String {
        let mut v: Value = serde_json::from_str(ITEM).unwrap();
        v.as_object_mut().unwrap().remove(field);
        v.to_string()
    }

    fn with(field: &str, value: Value) -> String {
        let mut v: Value = serde_json::from_str(ITEM).unwrap();
        v.as_object_mut().unwrap().insert(field.to_owned(), value);
        v.to_string()
    }

    #[test]
    fn absurd_durations_are_refused_naming_the_field() {
        for field in ["timeout_sec", "idle_stall_sec"] {
            let line = with(field, Value::from(1u64 << 63));
            let err = parse_control(&line).map(|_| ()).unwrap_err();
            assert_eq!(err.field(), Some(field));
            let err = err.to_string();
            assert!(err.contains(field) && err.contains("at most"), "{err}");
            let year = with(field, Value::from(crate::MAX_DURATION_SECS));
            assert!(parse_control(&year).is_ok(), "{field}: a year is allowed");
        }
    }

    #[test]
    fn a_full_watch_item_parses() {
        let Control::Watch(item) = parse_control(ITEM).unwrap() else {
            panic!("not a watch item");
        };
        assert_eq!(item.agent, "executor");
        assert_eq!(item.step, "3");
        assert_eq!(item.timeout_sec, 600);
        assert_eq!(item.started_at_epoch, 1000);
        assert_eq!(item.consultant_reporting, Reporting::Filtered);
        assert_eq!(item.idle_stall_sec, None);
        assert!(item.watch_paths.is_empty());
        let extras = with("watch_paths", serde_json::json!(["/w/a", "/w/b"]));
        let extras = {
            let mut v: Value = serde_json::from_str(&extras).unwrap();
            v["idle_stall_sec"] = serde_json::json!(30);
            v["step"] = serde_json::json!(7);
            v.to_string()
        };
        let Control::Watch(item) = parse_control(&extras).unwrap() else {
            panic!("not a watch item");
        };
        assert_eq!(item.watch_paths, ["/w/a", "/w/b"]);
        assert_eq!(item.idle_stall_sec, Some(30));
        assert_eq!(item.step, "7");
    }

    #[test]
    fn every_missing_schema_field_is_named() {
        for field in [
            "agent",
            "step",
            "pid_file",
            "timeout_sec",
            "started_at_epoch",
            "blind_phase",
            "consultant_reporting",
        ] {
            let err = parse_control(&without(field)).unwrap_err();
            assert_eq!(err, ControlError::Missing { field }, "{field}");
            assert_eq!(err.to_string(), format!("missing field `{field}`"));
        }
    }

    #[test]
    fn a_watch_item_without_result_path_is_refused_for_that_field() {
        // Not read as a blind-phase update: any watch-item key makes it a watch item.
        let missing = ControlError::Missing {
            field: "result_path",
        };
        assert_eq!(parse_control(&without("result_path")), Err(missing.clone()));
        assert_eq!(missing.to_string(), "missing field `result_path`");
        for key in WATCH_ITEM_KEYS.iter().filter(|k| **k != "result_path") {
            let text = serde_json::json!({
                "agent": "executor", "step": "3", "blind_phase": true, *key: 1,
            })
            .to_string();
            assert_eq!(parse_control(&text), Err(missing.clone()), "{text}");
        }
    }

    #[test]
    fn wrong_types_and_values_are_named() {
        let cases = [
            ("timeout_sec", serde_json::json!("600")),
            ("timeout_sec", serde_json::json!(-1)),
            ("timeout_sec", serde_json::json!(0)),
            ("started_at_epoch", serde_json::json!(-5)),
            ("blind_phase", serde_json::json!("yes")),
            ("consultant_reporting", serde_json::json!("everything")),
            ("agent", serde_json::json!("")),
            ("step", serde_json::json!(1.5)),
            ("watch_paths", serde_json::json!("/w/a")),
            ("watch_paths", serde_json::json!([1])),
            ("idle_stall_sec", serde_json::json!(-3)),
        ];
        for (field, value) in cases {
            let err = parse_control(&with(field, value.clone())).unwrap_err();
            assert_eq!(err.field(), Some(field), "{field}={value}: {err}");
            assert!(
                err.to_string().contains(&format!("`{field}`")),
                "{field}={value}: {err}"
            );
        }
    }

    #[test]
    fn other_messages_are_told_apart_by_their_keys() {
        assert_eq!(
            parse_control(r#"{"type":"shutdown_request"}"#),
            Ok(Control::Shutdown)
        );
        assert_eq!(
            parse_control(r#"{"ack":"stalled","agent":"writer"}"#),
            Ok(Control::Ack {
                event: AckEvent::Stalled,
                agent: "writer".into()
            })
        );
        assert_eq!(
            parse_control(r#"{"ack":"process_died","agent":"writer"}"#),
            Ok(Control::Ack {
                event: AckEvent::ProcessDied,
                agent: "writer".into()
            })
        );
        assert_eq!(
            parse_control(r#"{"agent":"writer","step":"2","blind_phase":true}"#),
            Ok(Control::BlindPhase {
                agent: "writer".into(),
                step: "2".into(),
                blind_phase: true
            })
        );
    }

    #[test]
    fn malformed_messages_name_what_is_wrong() {
        let shown = |text: &str| parse_control(text).unwrap_err().to_string();
        assert!(shown("not json").starts_with("not a JSON object: "));
        assert_eq!(parse_control("[1,2]"), Err(ControlError::NotAnObject));
        assert_eq!(shown("[1,2]"), "not a JSON object");
        assert_eq!(
            parse_control(r#"{"ack":"stalled"}"#),
            Err(ControlError::Missing { field: "agent" })
        );
        assert_eq!(
            shown(r#"{"ack":"done","agent":"x"}"#),
            r#"field `ack` is "done"; expected "stalled" or "process_died""#
        );
        assert_eq!(
            shown(r#"{"type":"reboot"}"#),
            r#"field `type` is "reboot"; the only message type is "shutdown_request""#
        );
        assert_eq!(
            parse_control(r#"{"agent":"x","blind_phase":true}"#),
            Err(ControlError::Missing { field: "step" })
        );
        assert_eq!(
            parse_control(r#"{"hello":1}"#),
            Err(ControlError::Unrecognised)
        );
        assert!(shown(r#"{"hello":1}"#).contains("`result_path`"));
    }

    #[test]
    fn not_json_keeps_serdes_error_as_its_source() {
        use std::error::Error as _;
        let err = parse_control("{\"ack\": nope}").unwrap_err();
        let source = err.source().expect("NotJson has a source");
        let serde = source
            .downcast_ref::<serde_json::Error>()
            .expect("the source is serde's own error");
        assert_eq!((serde.line(), serde.column()), (1, 10), "{serde}");
        assert_eq!(err.to_string(), format!("not a JSON object: {serde}"));
        assert!(
            ControlError::NotAnObject.source().is_none(),
            "a refusal of our own has no cause"
        );
    }
}
