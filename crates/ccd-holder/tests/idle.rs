//! An idle session costs no wakeups: once ready, with a client attached and
//! nothing on screen changing, no holder thread wakes on a timer (the
//! lifecycle driver, the parser, the client's output pump and the accept
//! loop all wait for work or a stop). Users keep sessions open for hours.
//!
//! Alone in its test binary: it counts this process's threads' context
//! switches. Linux only: it reads them in `/proc`.
#![cfg(target_os = "linux")]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use ccd_holder::{AttachMode, HolderClient, KillSignal, State, StreamEvent};
use common::{start, thread_switches, wait_info, Env};

const T: Duration = Duration::from_secs(20);
/// How long the session is watched while idle.
const WATCH: Duration = Duration::from_secs(2);
/// Switches allowed per thread in that time (a tick-driven thread makes
/// 4–20 of them: 100–500 ms periods).
const MOST: u64 = 2;

/// Context switches of this process's `holder-*` threads, by thread id.
fn holder_switches() -> HashMap<String, (String, u64)> {
    thread_switches(|name| name.starts_with("holder-"))
}

#[test]
fn an_idle_ready_session_wakes_no_holder_thread() {
    let env = Env::new();
    let (serve, mut c) = start(env.fake(&[]));
    wait_info(&mut c, T, "ready", |i| i.state == State::Ready);
    let mut client = HolderClient::connect(&env.socket()).unwrap();
    client.attach(AttachMode::Interactive).unwrap();
    assert!(matches!(
        client.next_event(T).unwrap(),
        StreamEvent::Resync(_)
    ));
    // Let the last screen updates and replies settle.
    std::thread::sleep(Duration::from_millis(500));

    let before = holder_switches();
    let names: Vec<&str> = before.values().map(|(n, _)| n.as_str()).collect();
    // `comm` keeps 15 characters of a thread name.
    for want in [
        "holder-lifecycl",
        "holder-parser",
        "holder-pump",
        "holder-serve",
    ] {
        assert!(names.contains(&want), "no {want} thread among {names:?}");
    }
    std::thread::sleep(WATCH);
    let after = holder_switches();
    let woke: Vec<(String, u64)> = after
        .iter()
        .filter_map(|(tid, (name, n))| {
            let was = before.get(tid).map_or(0, |(_, b)| *b);
            (n - was > MOST).then(|| (name.clone(), n - was))
        })
        .collect();
    assert!(woke.is_empty(), "threads woke while idle: {woke:?}");

    // Still alive and responsive: a stop wakes what sleeps.
    assert!(c.kill(KillSignal::Term, None).unwrap());
    assert!(c.collect(T).unwrap().collected);
    let outcome = serve.join().unwrap().unwrap();
    assert_eq!(outcome.state, State::Exited);
}
