//! Control messages from the Lead: one JSON object per line or per inbox file.
//!
//! Messages are told apart by their keys, in this order: `ack`, `type`, a
//! watch item (any key of the watch item that a blind-phase update does not
//! have: [`WATCH_ITEM_KEYS`]), then `blind_phase` (a blind-phase update is
//! exactly `agent`, `step` and `blind_phase`). A
//! message that is not JSON, misses a field or holds a wrong type is refused
//! with an error that names the field; the caller changes nothing.

use serde_json::{Map, Value};

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
    pub agent: String,
    pub step: String,
    pub result_path: String,
    pub pid_file: String,
    pub timeout_sec: u64,
    pub started_at_epoch: i64,
    pub blind_phase: bool,
    pub consultant_reporting: Reporting,
    /// Overrides the monitor's `--idle-stall` for this item.
    pub idle_stall_sec: Option<u64>,
    /// Related working files whose size and mtime count as progress.
    pub watch_paths: Vec<String>,
}

/// The events a Lead can acknowledge: the two that are repeated until it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckEvent {
    Stalled,
    ProcessDied,
}

impl AckEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            AckEvent::Stalled => "stalled",
            AckEvent::ProcessDied => "process_died",
        }
    }
}

/// One parsed control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    Watch(WatchItem),
    BlindPhase {
        agent: String,
        step: String,
        blind_phase: bool,
    },
    Ack {
        event: AckEvent,
        agent: String,
    },
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

/// Parses one message. The error is one lowercase line naming the field.
pub fn parse_control(text: &str) -> Result<Control, String> {
    let value: Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("not a JSON object: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".to_owned());
    };
    if obj.contains_key("ack") {
        let event = match string_field(&obj, "ack")?.as_str() {
            "stalled" => AckEvent::Stalled,
            "process_died" => AckEvent::ProcessDied,
            other => {
                return Err(format!(
                    "field `ack` is {other:?}; expected \"stalled\" or \"process_died\""
                ));
            }
        };
        return Ok(Control::Ack {
            event,
            agent: string_field(&obj, "agent")?,
        });
    }
    if obj.contains_key("type") {
        return match string_field(&obj, "type")?.as_str() {
            "shutdown_request" => Ok(Control::Shutdown),
            other => Err(format!(
                "field `type` is {other:?}; the only message type is \"shutdown_request\""
            )),
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
    Err("message has none of the fields `result_path`, `blind_phase`, `ack` or `type`".to_owned())
}

fn parse_watch_item(obj: &Map<String, Value>) -> Result<WatchItem, String> {
    let agent = string_field(obj, "agent")?;
    let step = step_field(obj)?;
    let result_path = path_field(obj, "result_path")?;
    let pid_file = path_field(obj, "pid_file")?;
    let timeout_sec = duration_field(obj, "timeout_sec")?;
    if timeout_sec == 0 {
        return Err("field `timeout_sec` must be greater than 0".to_owned());
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
            return Err(format!(
                "field `consultant_reporting` is {other:?}; expected \"filtered\" or \"full\""
            ));
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

fn missing(field: &str) -> String {
    format!("missing field `{field}`")
}

fn wrong(field: &str, expected: &str, got: &Value) -> String {
    let mut shown = got.to_string();
    if shown.len() > 40 {
        let cut = (0..=40)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    format!("field `{field}` must be {expected}, got {shown}")
}

fn string_field(obj: &Map<String, Value>, field: &str) -> Result<String, String> {
    match obj.get(field) {
        None => Err(missing(field)),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(v) => Err(wrong(field, "a non-empty string", v)),
    }
}

fn path_field(obj: &Map<String, Value>, field: &str) -> Result<String, String> {
    let path = string_field(obj, field)?;
    if path.contains('\0') {
        return Err(format!("field `{field}` holds a NUL byte"));
    }
    Ok(path)
}

/// `step` is "a pipeline step number" sent as a string; a bare number is taken too.
fn step_field(obj: &Map<String, Value>) -> Result<String, String> {
    match obj.get("step") {
        None => Err(missing("step")),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_u64() => Ok(n.to_string()),
        Some(v) => Err(wrong("step", "a string or a whole number", v)),
    }
}

fn bool_field(obj: &Map<String, Value>, field: &str) -> Result<bool, String> {
    match obj.get(field) {
        None => Err(missing(field)),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(wrong(field, "true or false", v)),
    }
}

fn u64_field(obj: &Map<String, Value>, field: &str) -> Result<u64, String> {
    match obj.get(field) {
        None => Err(missing(field)),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| wrong(field, "a non-negative whole number", v)),
    }
}

/// A number of seconds, at most [`crate::MAX_DURATION_SECS`]: a larger one
/// is a mistake that would overflow the clock arithmetic it enters.
fn duration_field(obj: &Map<String, Value>, field: &str) -> Result<u64, String> {
    let secs = u64_field(obj, field)?;
    if secs > crate::MAX_DURATION_SECS {
        return Err(format!(
            "field `{field}` must be at most {} seconds (a year), got {secs}",
            crate::MAX_DURATION_SECS
        ));
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
            assert_eq!(
                parse_control(&without(field)),
                Err(format!("missing field `{field}`")),
                "{field}"
            );
        }
    }

    #[test]
    fn a_watch_item_without_result_path_is_refused_for_that_field() {
        // Not read as a blind-phase update: any watch-item key makes it a watch item.
        assert_eq!(
            parse_control(&without("result_path")),
            Err("missing field `result_path`".to_owned())
        );
        for key in WATCH_ITEM_KEYS.iter().filter(|k| **k != "result_path") {
            let text = serde_json::json!({
                "agent": "executor", "step": "3", "blind_phase": true, *key: 1,
            })
            .to_string();
            assert_eq!(
                parse_control(&text),
                Err("missing field `result_path`".to_owned()),
                "{text}"
            );
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
            assert!(
                err.contains(&format!("`{field}`")),
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
        assert!(
            parse_control("not json")
                .unwrap_err()
                .starts_with("not a JSON object")
        );
        assert_eq!(parse_control("[1,2]"), Err("not a JSON object".into()));
        assert_eq!(
            parse_control(r#"{"ack":"stalled"}"#),
            Err("missing field `agent`".into())
        );
        assert!(
            parse_control(r#"{"ack":"done","agent":"x"}"#)
                .unwrap_err()
                .contains("`ack`")
        );
        assert!(
            parse_control(r#"{"type":"reboot"}"#)
                .unwrap_err()
                .contains("`type`")
        );
        assert_eq!(
            parse_control(r#"{"agent":"x","blind_phase":true}"#),
            Err("missing field `step`".into())
        );
        assert!(
            parse_control(r#"{"hello":1}"#)
                .unwrap_err()
                .contains("`result_path`")
        );
    }
}
