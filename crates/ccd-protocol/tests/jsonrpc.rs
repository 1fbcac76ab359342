//! Parsing incoming lines, error codes, typed params, negotiation and the
//! output stream encoding.

use ccd_protocol::methods::attach::{AttachMode, AttachParams, InputParams, SessionInput};
use ccd_protocol::methods::daemon::{Hello, HelloParams, HelloResult};
use ccd_protocol::methods::session::{KillParams, KillSignal, ListParams, SessionState};
use ccd_protocol::methods::{is_known_method, Empty, Method, ALL_METHODS};
use ccd_protocol::stream::{encode_output_line, SeqCheck, SeqTracker};
use ccd_protocol::{
    encode, negotiate, parse_incoming, parse_params, ErrorCode, Id, Incoming, OutputChunk,
    ProtocolRange, Request, Response, RpcError, PROTOCOL_VERSION,
};
use serde_json::{json, Value};

fn reject(line: &str) -> (Option<Id>, i64) {
    match parse_incoming(line) {
        Ok(m) => panic!("accepted {line}: {m:?}"),
        Err(e) => (e.id, e.error.code),
    }
}

#[test]
fn invalid_json_is_parse_error_with_null_id() {
    for line in [
        "{",
        "not json",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"",
        "{\"id\":7,}",
        "",
    ] {
        assert_eq!(reject(line), (None, -32700), "{line:?}");
    }
    let e = parse_incoming("{").expect_err("rejected");
    let reply = encode(&e.into_response()).expect("encodes");
    let v: Value = serde_json::from_slice(&reply).expect("json");
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], json!(-32700));
    assert_eq!(v["jsonrpc"], json!("2.0"));
}

#[test]
fn valid_json_that_is_not_a_request_is_invalid_request() {
    let cases: &[(&str, Option<Id>)] = &[
        ("[]", None),
        (
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\"}]",
            None,
        ),
        ("42", None),
        ("\"hello\"", None),
        ("null", None),
        ("{}", None),
        ("{\"jsonrpc\":\"2.0\",\"id\":5}", Some(Id::Number(5))),
        (
            "{\"jsonrpc\":\"1.0\",\"id\":6,\"method\":\"hello\"}",
            Some(Id::Number(6)),
        ),
        (
            "{\"id\":\"x\",\"method\":\"hello\"}",
            Some(Id::String("x".into())),
        ),
        (
            "{\"jsonrpc\":2.0,\"id\":8,\"method\":\"hello\"}",
            Some(Id::Number(8)),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":7}",
            Some(Id::Number(9)),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"hello\",\"params\":3}",
            Some(Id::Number(10)),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"hello\"}",
            None,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"hello\"}",
            None,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"hello\"}",
            None,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":11,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
            Some(Id::Number(11)),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":12,\"error\":{\"code\":\"x\"}}",
            Some(Id::Number(12)),
        ),
        ("{\"jsonrpc\":\"2.0\",\"result\":1}", None),
    ];
    for (line, id) in cases {
        assert_eq!(reject(line), (id.clone(), -32600), "{line}");
    }
}

#[test]
fn requests_notifications_and_responses_are_told_apart() {
    match parse_incoming(r#"{"jsonrpc":"2.0","id":"a1","method":"sessions.list","params":{"x":1}}"#)
    {
        Ok(Incoming::Request(r)) => {
            assert_eq!(r.id, Some(Id::String("a1".into())));
            assert_eq!(r.method, "sessions.list");
            assert!(!r.is_notification());
            // Unknown fields are ignored.
            let p: ListParams = r.params_as().expect("params");
            assert_eq!(p, ListParams::default());
        }
        other => panic!("{other:?}"),
    }
    match parse_incoming(r#"{"jsonrpc":"2.0","method":"session.output","params":{}}"#) {
        Ok(Incoming::Notification(n)) => assert_eq!(n.method, "session.output"),
        other => panic!("{other:?}"),
    }
    match parse_incoming(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}"#) {
        Ok(Incoming::Response(r)) => {
            assert_eq!(r.id, None);
            assert_eq!(
                r.outcome.expect_err("error").error_code(),
                Some(ErrorCode::ParseError)
            );
        }
        other => panic!("{other:?}"),
    }
    match parse_incoming(r#"{"jsonrpc":"2.0","id":3,"result":null,"extra":1}"#) {
        Ok(Incoming::Response(r)) => assert_eq!(r.outcome, Ok(Value::Null)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn params_errors_are_invalid_params() {
    let e = parse_params::<KillParams>(Some(json!({"signal": "hup"}))).expect_err("missing");
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("session"), "{}", e.message);
    let e = parse_params::<KillParams>(Some(json!({"session": "a", "signal": "usr1"})))
        .expect_err("bad enum");
    assert_eq!(e.error_code(), Some(ErrorCode::InvalidParams));
    let e = parse_params::<InputParams>(Some(json!({"session": "a", "data": "%%%"})))
        .expect_err("bad base64");
    assert_eq!(e.code, -32602);
    // Absent params decode like {} for methods that take none.
    assert_eq!(parse_params::<Empty>(None), Ok(Empty {}));
    assert_eq!(parse_params::<Empty>(Some(Value::Null)), Ok(Empty {}));
    let k: KillParams = parse_params(Some(json!({"session": "ab"}))).expect("defaults");
    assert_eq!(k.signal, KillSignal::Term);
    let a: AttachParams = parse_params(Some(json!({"session": "ab"}))).expect("defaults");
    assert_eq!(a.mode, AttachMode::Interactive);
    assert!(!a.fresh_on_failure);
}

#[test]
fn unknown_enum_values_from_a_newer_daemon_are_tolerated() {
    let s: SessionState = serde_json::from_value(json!("hibernating")).expect("tolerant");
    assert_eq!(s, SessionState::Other);
    let m: AttachMode = serde_json::from_value(json!("observe")).expect("known");
    assert_eq!(m, AttachMode::Observe);
}

#[test]
fn error_reply_for_unknown_method_keeps_the_id() {
    let req = match parse_incoming(r#"{"jsonrpc":"2.0","id":4,"method":"nope"}"#) {
        Ok(Incoming::Request(r)) => r,
        other => panic!("{other:?}"),
    };
    assert!(!is_known_method(&req.method));
    let resp = Response::error(req.id.clone(), RpcError::method_not_found(&req.method));
    let line = encode(&resp).expect("encodes");
    assert_eq!(
        std::str::from_utf8(&line).expect("utf8"),
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32601,\"message\":\"unknown method: nope\",\"data\":{\"method\":\"nope\"}}}\n"
    );
}

#[test]
fn typed_request_and_response_roundtrip() {
    let params = HelloParams {
        client: "test/1".into(),
        protocol: ProtocolRange::CURRENT,
    };
    let req = Request::typed::<Hello>(1, &params).expect("request");
    let line = encode(&req).expect("encodes");
    let parsed = match parse_incoming(std::str::from_utf8(&line).expect("utf8")) {
        Ok(Incoming::Request(r)) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(parsed.method, Hello::NAME);
    let got: HelloParams = parsed.params_as().expect("params");
    assert_eq!(got, params);

    let result = HelloResult {
        daemon_version: "0.1.0".into(),
        protocol: PROTOCOL_VERSION,
        server: "ccd".into(),
    };
    let resp = Response::typed(Id::Number(1), &result).expect("response");
    let line = encode(&resp).expect("encodes");
    let back = match parse_incoming(std::str::from_utf8(&line).expect("utf8")) {
        Ok(Incoming::Response(r)) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(back.result_as::<HelloResult>(), Ok(result));

    let input = InputParams {
        session: "abc".into(),
        data: b"hi\r".to_vec(),
    };
    let req = Request::typed::<SessionInput>(2, &input).expect("request");
    assert_eq!(req.params, Some(json!({"session": "abc", "data": "aGkN"})));
}

#[test]
fn method_names_are_unique_and_dotted() {
    for (i, a) in ALL_METHODS.iter().enumerate() {
        assert!(!ALL_METHODS[i + 1..].contains(a), "duplicate {a}");
        assert!(*a == "hello" || a.contains('.'), "{a}");
    }
}

#[test]
fn negotiation_cases() {
    assert_eq!(negotiate(1, 1, 1, 1), Ok(1));
    assert_eq!(negotiate(1, 9, 1, 2), Ok(2));
    assert_eq!(negotiate(2, 2, 1, 3), Ok(2));
    let e = negotiate(2, 3, 1, 1).expect_err("client too new");
    assert_eq!(e.code, -32001);
    let e = negotiate(0, 0, 1, 1).expect_err("client too old");
    assert_eq!(e.code, -32001);
    let e = negotiate(2, 1, 1, 1).expect_err("empty range");
    assert_eq!(e.code, -32602);
}

#[test]
fn output_chunk_roundtrip() {
    let data: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let chunks = OutputChunk::split("ff0beea3", 12_345, &data, 0);
    assert_eq!(chunks.len(), 2, "64 KiB per chunk");
    let mut tracker = SeqTracker::new();
    let mut rebuilt = Vec::new();
    for c in &chunks {
        let line = c.encode_line();
        assert_eq!(line, encode_output_line(&c.session, c.seq, &c.data));
        assert!(line.len() < ccd_protocol::MAX_LINE_BYTES);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let n = match parse_incoming(std::str::from_utf8(&line[..line.len() - 1]).expect("utf8")) {
            Ok(Incoming::Notification(n)) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(n.method, "session.output");
        let back = OutputChunk::from_notification(&n).expect("chunk");
        assert_eq!(tracker.on_output(&back), SeqCheck::InOrder);
        assert_eq!(&back, c);
        rebuilt.extend_from_slice(&back.data);
    }
    assert_eq!(rebuilt, data);
    assert_eq!(tracker.expected(), Some(12_345 + 70_000));
}
