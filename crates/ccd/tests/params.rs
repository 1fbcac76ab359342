//! Params are named only (docs/protocol.md, Messages): positional (array)
//! params are refused with invalid_params, not matched to fields by order.

mod common;

use common::Sandbox;
use serde_json::json;

#[test]
fn array_params_are_refused_with_invalid_params() {
    let sb = Sandbox::new();
    let sid = sb.new_session("params");
    let mut c = sb.client();
    // Named: fine.
    let v = c
        .call_value("sessions.get", json!({"session": sid}))
        .unwrap();
    assert_eq!(v["session_id"], sid.as_str(), "{v}");
    // Positional: serde would have read `[sid]` as `{session: sid}`.
    match c.call_value("sessions.get", json!([sid])) {
        Err(ccd_client::ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32602, "{e:?}");
            assert!(
                e.message.contains("named params") && e.message.contains("array"),
                "{}",
                e.message
            );
        }
        other => panic!("expected invalid_params, got {other:?}"),
    }
    // The connection goes on.
    c.call_value("sessions.get", json!({"session": sid}))
        .unwrap();
}

#[test]
fn an_empty_detach_prefix_is_refused_not_matched_to_any_attachment() {
    let sb = Sandbox::new();
    let sid = sb.new_session("detach");
    let mut c = sb.client();
    c.call_value("session.attach", json!({"session": sid, "mode": "observe"}))
        .unwrap();
    // An empty prefix would match every attachment of the connection.
    match c.call_value("session.detach", json!({"session": ""})) {
        Err(ccd_client::ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32602, "{e:?}");
            assert!(e.message.contains("empty"), "{}", e.message);
        }
        other => panic!("expected invalid_params, got {other:?}"),
    }
    // The attachment is still there: detaching it by name finds it.
    let v = c
        .call_value("session.detach", json!({"session": sid}))
        .unwrap();
    assert_eq!(v["detached"], true, "{v}");
}
