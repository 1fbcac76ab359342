//! A flood wakes no connection thread: the thread that serves an attached
//! client's requests sleeps until the client sends something. A blocking
//! read on a Unix stream socket also wakes each time the peer takes data
//! sent on the socket, because reads and write space share the socket's
//! wait queue. In a flood that was about 4,000 useless wakeups a second,
//! each one preempting the parser (`ccd_holder::rpc::conn`'s `PollFirst`).
//!
//! Alone in its test binary: it counts this process's threads' context
//! switches. Linux only: it reads them in `/proc`.
#![cfg(target_os = "linux")]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use ccd_holder::{AttachMode, HolderClient, StreamEvent};
use common::{start, thread_switches, Env};

const T: Duration = Duration::from_secs(60);
/// Bytes of output in the flood.
const FLOOD: u64 = 8_000_000;
/// Switches allowed for all connection threads together during the flood
/// (the reading client takes it in thousands of reads).
const MOST: u64 = 50;

/// Context switches of this process's `holder-conn` threads, by thread id.
fn conn_switches() -> HashMap<String, (String, u64)> {
    thread_switches(|name| name == "holder-conn")
}

#[test]
fn a_flood_to_a_reading_client_wakes_no_connection_thread() {
    let env = Env::new();
    // Waits for the go file, floods, then stays (the screen stays up).
    let go = env.proj.join("go");
    let script = format!(
        "while [ ! -e {go} ]; do sleep 0.05; done; head -c {FLOOD} /dev/zero | tr '\\0' x; sleep 60",
        go = go.display()
    );
    let (_serve, _c) = start(env.sh(&script));
    let mut client = HolderClient::connect(&env.socket()).unwrap();
    client.attach(AttachMode::Interactive).unwrap();
    let mut seen = match client.next_event(T).unwrap() {
        StreamEvent::Resync(r) => r.seq,
        other => panic!("{other:?}"),
    };
    let start_seq = seen;
    // Let the attach's replies and the spare threads settle.
    std::thread::sleep(Duration::from_millis(300));

    let before = conn_switches();
    std::fs::write(&go, b"").unwrap();
    let mut reads = 0u64;
    while seen < start_seq + FLOOD {
        match client.next_event(T).unwrap() {
            StreamEvent::Output(o) => {
                assert_eq!(o.seq, seen, "a gap in the stream");
                seen += o.data.len() as u64;
                reads += 1;
            }
            StreamEvent::Resync(r) => panic!("a reading client was resynced at {}", r.seq),
            other => panic!("{other:?}"),
        }
    }
    let after = conn_switches();
    let woke: u64 = after
        .iter()
        .map(|(tid, (_, n))| n - before.get(tid).map_or(0, |(_, b)| *b))
        .sum();
    eprintln!("{FLOOD} bytes in {reads} output lines; connection threads switched {woke} times");
    assert!(
        woke <= MOST,
        "connection threads woke {woke} times during the flood (at most {MOST})"
    );
}
