//! Terminal sizes are bounded (cols 1..=1000, rows 1..=500): an
//! out-of-range size is refused with invalid_params naming the bound, at
//! the daemon and at a holder reached directly, and never grows the
//! holder's screen model. Linux only: that cost is the holder's RSS, read
//! in `/proc`.
#![cfg(target_os = "linux")]

mod common;

use common::{rss_kb, Sandbox};
use serde_json::json;

/// Cheapest first: before the bound existed the first one was accepted and
/// the test failed there, without ever asking for 65535×65535.
const BAD: [(u16, u16); 4] = [(1001, 24), (80, 501), (0, 24), (65535, 65535)];

fn assert_refused(r: Result<serde_json::Value, ccd_client::ClientError>, what: &str) {
    match r {
        Err(ccd_client::ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32602, "{what}: {e:?}");
            assert!(
                e.message.contains("1..=1000") && e.message.contains("1..=500"),
                "{what}: the message names the bounds: {}",
                e.message
            );
        }
        other => panic!("{what}: expected invalid_params, got {other:?}"),
    }
}

#[test]
fn an_out_of_range_size_is_refused_everywhere_and_costs_the_holder_nothing() {
    let sb = Sandbox::new();
    let sid = sb.new_session("sizes");
    let pid = *sb.holder_pids().first().expect("one holder");
    let before = rss_kb(pid);
    assert!(before > 0);
    let mut c = sb.client();
    let cwd = sb.project("sizes2");
    for (cols, rows) in BAD {
        let what = format!("{cols}x{rows}");
        assert_refused(
            c.call_value(
                "session.resize",
                json!({"session": sid, "cols": cols, "rows": rows}),
            ),
            &format!("session.resize {what}"),
        );
        let size = json!({"cols": cols, "rows": rows});
        assert_refused(
            c.call_value("session.attach", json!({"session": sid, "size": size})),
            &format!("session.attach {what}"),
        );
        assert_refused(
            c.call_value("session.new", json!({"cwd": cwd, "size": size})),
            &format!("session.new {what}"),
        );
        assert_refused(
            c.call_value("session.fork", json!({"session": sid, "size": size})),
            &format!("session.fork {what}"),
        );
    }
    // A direct client talks to the holder without the daemon.
    let sock = sb.holder_socket(&sid);
    let mut h = ccd_holder::HolderClient::connect(&sock).unwrap();
    for (cols, rows) in BAD {
        let what = format!("holder {cols}x{rows}");
        match h.resize(rows, cols) {
            Err(ccd_holder::ClientError::Rpc(e)) => {
                assert_eq!(e.code, -32602, "{what}: {e:?}");
                assert!(e.message.contains("1..=1000"), "{what}: {}", e.message);
            }
            other => panic!("{what}: expected invalid_params, got {other:?}"),
        }
        let r = h.call_value(
            "session.attach",
            Some(json!({"mode": "interactive", "size": {"cols": cols, "rows": rows}})),
        );
        assert!(
            matches!(&r, Err(ccd_holder::ClientError::Rpc(e)) if e.code == -32602),
            "{what} attach: {r:?}"
        );
    }
    let after = rss_kb(pid);
    assert!(
        after < before + 4 * 1024,
        "holder VmRSS grew from {before} kB to {after} kB"
    );
    // Nothing was applied, and the session still works.
    assert_eq!(
        h.info().unwrap().size,
        ccd_holder::Size {
            rows: 40,
            cols: 120
        }
    );
    c.call_value(
        "session.resize",
        json!({"session": sid, "cols": 1000, "rows": 500}),
    )
    .expect("the largest size is allowed");
    assert_eq!(
        h.info().unwrap().size,
        ccd_holder::Size {
            rows: 500,
            cols: 1000
        }
    );
    let at_max = rss_kb(pid);
    eprintln!("holder VmRSS: {before} kB at 120x40, {at_max} kB at 1000x500");
    c.call_value(
        "session.resize",
        json!({"session": sid, "cols": 100, "rows": 30}),
    )
    .unwrap();
    let screen = c
        .call_value("session.screen", json!({"session": sid}))
        .unwrap();
    assert_eq!(screen["size"], json!({"cols": 100, "rows": 30}), "{screen}");
    sb.ok(&["send", &sid, "still here"]);
}
