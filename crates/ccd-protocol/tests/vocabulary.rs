//! The wire fields that were strings and are now open enums (`Event`'s
//! `status`, `previous` and `state`, `LiveWriter.state`,
//! `Transition.state`, `Progress.step`) and the typed `data` of the
//! connection-cap refusals encode exactly as before: every line here is
//! decoded with the old form (the structs as they were, strings, kept
//! below) and with the crate's, and both encode to the same bytes — for
//! every named value, for a value no version names, and for the
//! `docs/protocol.md` lines of those types.

use ccd_protocol::error_data::{CapReason, CapRefusedData};
use ccd_protocol::holder::{State, Transition, TransitionState};
use ccd_protocol::methods::events::{Event, EventKind, LiveWriter, SubscribeResult, WriterState};
use ccd_protocol::methods::session::{Lifecycle, Progress, ResumeStep, SessionState};
use ccd_protocol::{Response, RpcError};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The types as they were before the fields became enums (fields, order
/// and serde attributes copied; docs left out).
mod old {
    use ccd_protocol::methods::events::EventKind;
    use ccd_protocol::methods::session::Lifecycle;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    pub struct LiveWriter {
        pub session: String,
        pub pid: u32,
        pub state: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub holder: Option<String>,
    }

    #[derive(Debug, Serialize, Deserialize)]
    pub struct SubscribeResult {
        pub subscribed: bool,
        #[serde(default)]
        pub writers: Vec<LiveWriter>,
    }

    #[derive(Debug, Serialize, Deserialize)]
    pub struct Event {
        #[serde(rename = "type")]
        pub kind: EventKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        pub at: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pid: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub cwd: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub state: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub held: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub holder: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub from: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub to: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pids: Option<Vec<u32>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub previous: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub waiting_for: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tool: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub options: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub prompt: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub context_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub context_percent: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub exit_signal: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub freed_bytes: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub missed: Option<u64>,
    }

    #[derive(Debug, Serialize, Deserialize)]
    pub struct Transition {
        pub state: String,
        pub at: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub detail: Option<String>,
        pub screen: String,
    }

    #[derive(Debug, Serialize, Deserialize)]
    pub struct Progress {
        pub holder: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        pub lifecycle: Lifecycle,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub step: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub cwd: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pid: Option<u32>,
    }
}

/// A value no version names (and one with characters JSON escapes).
const UNKNOWN: [&str; 2] = ["hibernating", "a \"quoted\"\tvalue"];

/// `line` decoded as `Old` and as `New` encodes to the same bytes, which
/// are `line` itself (every line here is written as the encoder writes
/// it); and each form reads the other's bytes back to the same.
fn same_bytes<Old, New>(line: &str)
where
    Old: Serialize + DeserializeOwned,
    New: Serialize + DeserializeOwned,
{
    let old: Old = serde_json::from_str(line).unwrap_or_else(|e| panic!("old form: {e}: {line}"));
    let new: New = serde_json::from_str(line).unwrap_or_else(|e| panic!("new form: {e}: {line}"));
    let old_bytes = serde_json::to_string(&old).expect("old encodes");
    let new_bytes = serde_json::to_string(&new).expect("new encodes");
    assert_eq!(new_bytes, old_bytes, "the new form encodes otherwise");
    assert_eq!(new_bytes, line, "not the line as read");
    let back: Old = serde_json::from_str(&new_bytes).expect("old reads new");
    assert_eq!(serde_json::to_string(&back).expect("encodes"), line);
}

fn json(s: &str) -> String {
    serde_json::to_string(s).expect("a string encodes")
}

/// Every name `Event.status`/`previous` carries: the lifecycle's, Claude
/// Code's statuses (a subset), and unknown ones.
fn statuses() -> Vec<String> {
    let mut v: Vec<String> = Lifecycle::KNOWN.iter().map(|l| l.to_string()).collect();
    v.extend(UNKNOWN.iter().map(|s| s.to_string()));
    v
}

fn writer_states() -> Vec<String> {
    let mut v: Vec<String> = WriterState::KNOWN.iter().map(|l| l.to_string()).collect();
    v.extend(UNKNOWN.iter().map(|s| s.to_string()));
    v
}

#[test]
fn events_encode_as_they_did_for_every_status_previous_and_state() {
    let mut kinds: Vec<String> = EventKind::KNOWN.iter().map(|k| k.to_string()).collect();
    kinds.push("session.teleported".into());
    for kind in &kinds {
        for status in statuses() {
            let line = format!(
                r#"{{"type":{},"session":"9b1d","at":1795977302001,"pid":3011,"status":{},"previous":{}}}"#,
                json(kind),
                json(&status),
                json(&status)
            );
            same_bytes::<old::Event, Event>(&line);
        }
        for state in writer_states() {
            let line = format!(
                r#"{{"type":{},"session":"9b1d","at":1,"pid":3011,"cwd":"/p","state":{},"held":false}}"#,
                json(kind),
                json(&state)
            );
            same_bytes::<old::Event, Event>(&line);
        }
    }
    // Every field at once, and none of the three.
    same_bytes::<old::Event, Event>(
        r#"{"type":"session.id_changed","session":"b","at":5,"pid":7,"cwd":"/w","state":"live","held":true,"holder":"h1","from":"a","to":"b","pids":[7],"status":"waiting","previous":"busy","waiting_for":"permission prompt","reason":"clear","tool":"Bash command","detail":"ls","options":["Yes","No"],"prompt":"p1","context_tokens":9,"context_percent":1.5,"exit_code":0,"exit_signal":9,"freed_bytes":10,"missed":2}"#,
    );
    same_bytes::<old::Event, Event>(r#"{"type":"events.lagged","at":-5,"missed":3}"#);
}

#[test]
fn a_status_reads_as_its_name_and_an_unknown_one_is_kept() {
    let e: Event = serde_json::from_str(
        r#"{"type":"session.status","at":1,"status":"busy","previous":"hibernating","state":"dead"}"#,
    )
    .expect("decodes");
    assert_eq!(e.status, Some(Lifecycle::Busy));
    assert_eq!(e.previous, Some(Lifecycle::Other("hibernating".into())));
    assert_eq!(e.state, Some(WriterState::Dead));
    assert_eq!(
        e.state.as_ref().map(WriterState::session_state),
        Some(SessionState::Dead)
    );
    for s in [
        SessionState::Live,
        SessionState::Unknown,
        SessionState::Dead,
    ] {
        assert_eq!(WriterState::from(s).session_state(), s);
        assert_eq!(
            serde_json::to_value(WriterState::from(s)).expect("encodes"),
            serde_json::to_value(s).expect("encodes")
        );
    }
}

#[test]
fn writers_encode_as_they_did() {
    for state in writer_states() {
        let line = format!(
            r#"{{"session":"ff0b","pid":2244,"state":{},"holder":"h7k2m9q4"}}"#,
            json(&state)
        );
        same_bytes::<old::LiveWriter, LiveWriter>(&line);
        let line = format!(
            r#"{{"subscribed":true,"writers":[{{"session":"ff0b","pid":2244,"state":{}}}]}}"#,
            json(&state)
        );
        same_bytes::<old::SubscribeResult, SubscribeResult>(&line);
    }
}

#[test]
fn transitions_encode_as_they_did() {
    let mut names: Vec<String> = TransitionState::KNOWN
        .iter()
        .map(|t| t.to_string())
        .collect();
    names.extend(UNKNOWN.iter().map(|s| s.to_string()));
    for name in names {
        let line = format!(
            r#"{{"state":{},"at":1795977302001,"detail":"why","screen":"❯ \u001b"}}"#,
            json(&name)
        );
        same_bytes::<old::Transition, Transition>(&line);
        let line = format!(r#"{{"state":{},"at":1,"screen":""}}"#, json(&name));
        same_bytes::<old::Transition, Transition>(&line);
    }
    // What the holder records for each lifecycle state is that state's name.
    for s in [
        State::Starting,
        State::Trust,
        State::Ready,
        State::Exited,
        State::Failed,
    ] {
        assert_eq!(TransitionState::from(s).as_str(), s.as_str());
    }
}

#[test]
fn progress_encodes_as_it_did() {
    let mut steps: Vec<String> = ResumeStep::KNOWN.iter().map(|t| t.to_string()).collect();
    steps.extend(UNKNOWN.iter().map(|s| s.to_string()));
    for step in steps {
        let line = format!(
            r#"{{"holder":"h7c2m9q4","session":"3c5e","lifecycle":"starting","step":{},"cwd":"/home/me/old","pid":4120}}"#,
            json(&step)
        );
        same_bytes::<old::Progress, Progress>(&line);
    }
    same_bytes::<old::Progress, Progress>(r#"{"holder":"h","lifecycle":"ready"}"#);
}

/// The docs' lines of these types, through both forms.
#[test]
fn the_protocol_docs_lines_encode_as_they_did() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let md = std::fs::read_to_string(root.join("docs/protocol.md")).expect("protocol.md");
    let mut seen = [0usize; 3];
    for line in md.lines().filter(|l| l.starts_with("{\"jsonrpc\"")) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a docs line is JSON");
        let params = serde_json::to_string(&v["params"]).expect("encodes");
        // The docs write members in the types' order: compare the forms
        // with each other, the line's own spacing aside.
        let check = |old: String, new: String| assert_eq!(new, old, "{line}");
        match v["method"].as_str() {
            Some("event") => {
                let o: old::Event = serde_json::from_str(&params).expect("old event");
                let n: Event = serde_json::from_str(&params).expect("event");
                check(enc(&o), enc(&n));
                seen[0] += 1;
            }
            Some("session.progress") => {
                let o: old::Progress = serde_json::from_str(&params).expect("old progress");
                let n: Progress = serde_json::from_str(&params).expect("progress");
                check(enc(&o), enc(&n));
                seen[1] += 1;
            }
            _ if v["result"]["subscribed"].is_boolean() => {
                let r = serde_json::to_string(&v["result"]).expect("encodes");
                let o: old::SubscribeResult = serde_json::from_str(&r).expect("old subscribe");
                let n: SubscribeResult = serde_json::from_str(&r).expect("subscribe");
                check(enc(&o), enc(&n));
                seen[2] += 1;
            }
            _ => {}
        }
    }
    assert!(seen.iter().all(|n| *n > 0), "docs lines seen: {seen:?}");
}

fn enc<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("encodes")
}

/// The refusals' error lines: built from the typed data, byte for byte
/// the lines built from the `json!` objects they replaced; read back as
/// the typed data by a client.
#[test]
fn cap_refusals_encode_as_they_did_and_read_typed() {
    for limit in [56usize, 64, 1021] {
        let message = format!("the holder serves at most {limit} connections; try again later");
        let before = RpcError::internal(message.clone())
            .with_data(serde_json::json!({"reason": "too_many_connections", "limit": limit}));
        let now = CapRefusedData::connections(limit).into_error(message);
        let line = |e: RpcError| {
            String::from_utf8(ccd_protocol::encode(&Response::error(None, e)).expect("encodes"))
                .expect("UTF-8")
        };
        assert_eq!(line(now.clone()), line(before.clone()));
        let d = CapRefusedData::of_refusal(&before).expect("a cap refusal");
        assert_eq!(
            (d.reason, d.limit),
            (CapReason::TooManyConnections, limit as u64)
        );
    }
    // The direct stream's refusal as the daemon passes it on.
    let e = RpcError::internal("x").with_data(serde_json::json!({
        "reason": "too_many_connections", "limit": 56, "session": "3c5e", "holder": "h3c5"
    }));
    let d = CapRefusedData::of_refusal(&e).expect("a cap refusal");
    assert_eq!(
        (d.session.as_deref(), d.holder.as_deref()),
        (Some("3c5e"), Some("h3c5"))
    );
    assert_eq!(serde_json::to_value(&d).ok(), e.data);
    // Another reason, or no data, is not one.
    let other = RpcError::internal("x")
        .with_data(serde_json::json!({"reason": "too_many_cooks", "limit": 1}));
    assert_eq!(CapRefusedData::of_refusal(&other), None);
    assert_eq!(
        other.data_as::<CapRefusedData>().map(|d| d.reason),
        Some(CapReason::Other("too_many_cooks".into()))
    );
    assert_eq!(CapRefusedData::of_refusal(&RpcError::internal("x")), None);
}
