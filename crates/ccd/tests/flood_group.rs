//! A flooding holder weighs its scheduling group down, and back up once the
//! flood is parsed (`ccd_sched::FloodGroup`, owned by the holder's parser).
//!
//! The holder leads its own session, so with autogroups its threads are a
//! scheduling group of their own, and its nice value reads in
//! `/proc/<pid>/autogroup`. A kernel without autogroups has no such file:
//! the test then checks that the flood still goes through.
//! Linux only: autogroups and `/proc` are Linux's.
#![cfg(target_os = "linux")]

mod common;

use common::{holder_info, wait_for, Sandbox};
use std::time::{Duration, Instant};

/// The group's nice value, if the kernel has autogroups.
fn group_nice(pid: u32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?;
    ccd_sched::group::parse_nice(&text)
}

#[test]
fn a_flooding_session_weighs_its_holder_group_down_until_the_flood_is_parsed() {
    const FLOOD: u64 = 16_000_000;
    let sb = Sandbox::new();
    let sid = sb.new_session("flood-group");
    let holder = sb.holder_pids()[0];
    let base = group_nice(holder);
    if let Some(base) = base {
        assert!(base < ccd_sched::group::BULK_NICE, "a new group: {base}");
    }
    let holder_sock = sb.holder_socket(&sid);
    let info = || holder_info(&holder_sock);
    let start = info().output_bytes;
    sb.type_flood(&sid, FLOOD);

    // No client reads: the backlog fills, the PTY is paced, and the parser
    // parses from a backlog well past the flood threshold.
    let t0 = Instant::now();
    let mut seen_bulk = false;
    while info().output_bytes < start + FLOOD {
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "the flood did not finish"
        );
        seen_bulk |= group_nice(holder) == Some(ccd_sched::group::BULK_NICE);
        std::thread::sleep(Duration::from_millis(10));
    }
    let Some(base) = base else {
        eprintln!("no /proc/<pid>/autogroup on this kernel: checked the flood only");
        return;
    };
    assert!(
        seen_bulk,
        "the holder's group was never weighed down during the flood"
    );
    // Once the parser has caught up, the group is back where it was (a
    // change the kernel defers is retried every 100 ms).
    wait_for(
        Duration::from_secs(60),
        "the holder's group back to its nice value",
        || (group_nice(holder) == Some(base)).then_some(()),
    );
    // And the model has all of it: the prompt after the flood.
    sb.wait_for_row(&sid, "echo: flood");
}
