//! Connection threads wait for the next connection once theirs ended
//! (`ccd_holder::rpc::server::SPARES` of them at most), so a new
//! connection — an attach — is served without starting a thread; a stop
//! ends them.
//!
//! Alone in its test binary: it counts this process's `holder-conn`
//! threads. Linux only: it reads them (and their system calls) in `/proc`.
#![cfg(target_os = "linux")]

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ccd_holder::rpc::server::SPARES;
use ccd_holder::{HolderClient, KillSignal};
use common::{start, Env};

const T: Duration = Duration::from_secs(20);

/// The ids of this process's connection threads.
fn conn_threads() -> HashSet<String> {
    let mut out = HashSet::new();
    for task in std::fs::read_dir("/proc/self/task").expect("tasks") {
        let dir = task.expect("task").path();
        let Ok(name) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if name.trim() == "holder-conn" {
            out.insert(dir.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    out
}

/// How many of `threads` are blocked in `futex`: a spare waiting for a
/// connection (a serving thread is in `recv`, one finishing runs). The
/// thread count alone does not tell a spare from a thread still finishing
/// its connection, and on a loaded machine the next connection can come
/// before that thread has started to wait (then a new thread serves it).
fn futex_waiters(threads: &HashSet<String>) -> usize {
    threads
        .iter()
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).is_ok_and(|s| {
                s.split_whitespace().next() == Some(libc::SYS_futex.to_string().as_str())
            })
        })
        .count()
}

/// Waits (at most 5 s, far less than the spares' idle check) until
/// `done` holds on the connection threads; the last count seen.
fn wait_threads(done: impl Fn(usize) -> bool) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = conn_threads().len();
        if done(n) || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ended_connections_leave_spares_that_serve_the_next_and_a_stop_ends_them() {
    let env = Env::new();
    let (serve, mut kept) = start(env.sh("sleep 60"));
    kept.info().unwrap();
    // `kept`'s thread, and whatever `start` left waiting.
    let base = wait_threads(|n| n <= 1 + SPARES);
    assert!(base <= 1 + SPARES, "{base} connection threads at the start");

    // One connection after another, each served and closed: the threads
    // that serve them are the spares, not a new thread each.
    let mut serving = HashSet::new();
    for _ in 0..20 {
        let mut c = HolderClient::connect(&env.socket()).unwrap();
        c.info().unwrap();
        serving.extend(conn_threads());
        drop(c);
        wait_threads(|n| n <= 1 + SPARES);
        // ... and until the one that served it waits as a spare.
        let deadline = Instant::now() + Duration::from_secs(5);
        while futex_waiters(&conn_threads()) < SPARES && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    assert!(
        serving.len() <= 1 + 2 * SPARES,
        "20 connections in a row were served by {} threads",
        serving.len()
    );
    // The last one's thread waits for the next: exactly the spares.
    let n = wait_threads(|n| n == 1 + SPARES);
    assert_eq!(n, 1 + SPARES, "connection threads once all but one ended");

    // A stop ends every connection thread, waiting ones included.
    assert!(kept.kill(KillSignal::Kill, None).unwrap());
    assert!(kept.collect(T).unwrap().collected);
    serve.join().unwrap().unwrap();
    drop(kept);
    let n = wait_threads(|n| n == 0);
    assert_eq!(n, 0, "connection threads left after the stop");
}
