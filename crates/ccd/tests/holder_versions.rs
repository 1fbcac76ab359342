//! Holder protocol versions: a holder started by a ccd from before
//! `holder.hello` (it answers `method_not_found`, version 0) is adopted
//! after an upgrade, listed, and served with what it supports: no direct
//! stream (attached through the daemon, its version said in the reply),
//! and the attach's size applied by a resize it understands.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Mutex};

const SID: &str = "0ddc0ffe-0000-4000-8000-000000000001";

/// What the fake old holder was asked, in order.
type Asked = Arc<Mutex<Vec<String>>>;

/// A holder as an older ccd built it: `holder.*` methods, no
/// `holder.hello`, no direct-stream names.
fn old_holder(socket: &std::path::Path, pid: u32, cwd: &str, asked: Asked) {
    let listener = UnixListener::bind(socket).unwrap();
    let cwd = cwd.to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (asked, cwd) = (asked.clone(), cwd.clone());
            std::thread::spawn(move || serve(conn, pid, &cwd, &asked));
        }
    });
}

fn serve(conn: UnixStream, pid: u32, cwd: &str, asked: &Asked) {
    let mut out = conn.try_clone().unwrap();
    for line in BufReader::new(conn).lines() {
        let Ok(line) = line else { return };
        let Ok(req) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = req["method"].as_str().unwrap_or("").to_string();
        asked.lock().unwrap().push(method.clone());
        if req.get("id").is_none() {
            continue;
        }
        let result = match method.as_str() {
            "holder.info" => json!({
                "holder_pid": pid, "child_pid": pid, "session_id": SID, "cwd": cwd,
                "argv": ["claude"], "state": "ready", "failure": null,
                "needs_attention": null, "status": null, "exit": null,
                "started_at": 0, "size": {"rows": 40, "cols": 120},
                "clients": [], "transitions": [], "output_bytes": 0
            }),
            "holder.attach" => json!({"client_id": 1, "seq": 0, "size": {"rows": 40, "cols": 120}}),
            "holder.resize" | "holder.input" | "holder.detach" => json!({"ok": true}),
            "holder.kill" => json!({"sent": false}),
            _ => {
                let reply = json!({"jsonrpc": "2.0", "id": req["id"],
                    "error": {"code": -32601, "message": format!("method not found: {method}")}});
                let _ = out.write_all(format!("{reply}\n").as_bytes());
                continue;
            }
        };
        let reply = json!({"jsonrpc": "2.0", "id": req["id"], "result": result});
        if out.write_all(format!("{reply}\n").as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn a_pre_versioning_holder_is_adopted_listed_and_served_without_a_direct_stream() {
    let sb = Sandbox::new();
    let holders = sb.sock.join("holders");
    std::fs::create_dir_all(&holders).unwrap();
    for d in [&sb.sock, &holders] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    // Its "process": something alive to point at, ended by this test.
    let mut stand_in = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let cwd = sb.project("old");
    let asked: Asked = Arc::default();
    old_holder(
        &holders.join("oldholder.sock"),
        stand_in.id(),
        cwd.to_str().unwrap(),
        asked.clone(),
    );

    // Adopted at start and listed.
    let mut c = sb.client_or_start();
    let listed = c
        .call_value("sessions.list", json!({"held_only": true}))
        .unwrap();
    let row = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == SID)
        .cloned()
        .unwrap_or_else(|| panic!("not listed: {listed}\n{}", sb.logs()));
    assert_eq!(row["ccd"]["holder"], "oldholder", "{row}");
    assert!(
        asked.lock().unwrap().iter().any(|m| m == "holder.hello"),
        "the daemon said hello"
    );

    // A direct stream is asked for; the holder cannot serve one: attached
    // through the daemon, the reply says so and names the holder's version.
    let r = c
        .call_value(
            "session.attach",
            json!({"session": SID, "direct": true, "size": {"cols": 100, "rows": 30}}),
        )
        .unwrap_or_else(|e| panic!("attach: {e}\n{}", sb.logs()));
    assert_eq!(r["direct"], Value::Null, "no direct stream: {r}");
    assert_eq!(r["holder_protocol"], 0, "{r}");
    assert_eq!(r["size"], json!({"cols": 100, "rows": 30}), "{r}");
    let asked_now = asked.lock().unwrap().clone();
    assert!(
        !asked_now.iter().any(|m| m == "session.attach"),
        "never given the direct names: {asked_now:?}"
    );
    // A version-0 holder may ignore the attach's size: it was resized.
    assert!(
        asked_now.iter().any(|m| m == "holder.resize"),
        "{asked_now:?}"
    );
    let logs = sb.logs_with(&[
        "oldholder speaks holder protocol 0",
        "cannot serve a direct stream",
    ]);
    assert!(
        logs.contains("oldholder speaks holder protocol 0")
            && logs.contains("cannot serve a direct stream"),
        "the log says which holder, its version and what it lacks:\n{logs}"
    );
    drop(c);
    drop(sb);
    let _ = stand_in.kill();
    let _ = stand_in.wait();
}
