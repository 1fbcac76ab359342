//! Bad input on the holder socket gets JSON-RPC error replies; the holder
//! keeps serving that connection and others.

mod common;

use std::time::Duration;

use ccd_holder::{ClientError, HolderClient, KillSignal};
use ccd_protocol::Id;
use common::{start, wait_screen, Env};

const T: Duration = Duration::from_secs(10);

fn expect_error(c: &mut HolderClient, code: i64) {
    match c.wait_response(&Id::Number(-1)) {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, code, "{e}"),
        other => panic!("expected error {code}, got {other:?}"),
    }
}

#[test]
fn bad_lines_get_errors_and_serving_continues() {
    let env = Env::new();
    let (serve, mut c) = start(env.sh("echo up; read x"));
    wait_screen(&mut c, T, "up");

    let mut bad = HolderClient::connect(&env.socket()).unwrap();
    bad.send_raw(b"this is not json\n").unwrap();
    expect_error(&mut bad, -32700);

    // 10 MiB without a newline, then the newline.
    let big = vec![b'x'; 10 << 20];
    bad.send_raw(&big).unwrap();
    bad.send_raw(b"\n").unwrap();
    expect_error(&mut bad, -32000);

    bad.send_raw(b"[1,2]\n").unwrap();
    expect_error(&mut bad, -32600);

    match bad.call_value("holder.nope", None) {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32601),
        other => panic!("{other:?}"),
    }
    match bad.call_value("holder.resize", Some(serde_json::json!({"rows": "x"}))) {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("{other:?}"),
    }
    match bad.call_value(
        "holder.input",
        Some(serde_json::json!({"data": "!!not base64"})),
    ) {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("{other:?}"),
    }
    // Invalid UTF-8.
    bad.send_raw(b"\xff\xfe\n").unwrap();
    expect_error(&mut bad, -32700);

    // The same connection still works, and so does another.
    assert_eq!(bad.info().unwrap().child_pid, c.info().unwrap().child_pid);
    let mut other = HolderClient::connect(&env.socket()).unwrap();
    other.info().unwrap();

    // A client that vanishes mid-line does no harm.
    {
        let mut gone = HolderClient::connect(&env.socket()).unwrap();
        gone.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"meth")
            .unwrap();
    }
    other.info().unwrap();

    c.kill(KillSignal::Kill, None).unwrap();
    assert!(c.collect(T).unwrap().collected);
    serve.join().unwrap().unwrap();
}
