//! A flooding holder weighs its scheduling group down while another session
//! of the daemon is typed into, and back up once the flood is parsed
//! (`ccd_sched::FloodGroup`, owned by the holder's parser; the typing mark
//! the holders share, `ccd_sched::typing`); with nobody typing elsewhere it
//! keeps its weight (the weight would only slow its own relay).
//!
//! The holder leads its own session, so with autogroups its threads are a
//! scheduling group of their own, and its nice value reads in
//! `/proc/<pid>/autogroup`. A kernel without autogroups has no such file:
//! the tests then check that the flood still goes through.
//! Linux only: autogroups and `/proc` are Linux's.
#![cfg(target_os = "linux")]

mod common;

use common::{holder_info, wait_for, Sandbox};
use std::time::{Duration, Instant};

/// Bytes of each flood: well past the parser's flood threshold.
const FLOOD: u64 = 16_000_000;

/// The group's nice value, if the kernel has autogroups.
fn group_nice(pid: u32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?;
    ccd_sched::group::parse_nice(&text)
}

/// A key typed into `sid` (a space: the fake claude's prompt takes it as
/// text).
fn type_key(sb: &Sandbox, sid: &str) {
    sb.type_keys(sid, b" ");
}

/// Flood `sid` (no client reads: the backlog fills, the PTY is paced, and
/// the parser parses from a backlog well past the flood threshold), calling
/// `meanwhile` every 10 ms; whether its holder's group was ever seen
/// weighed down, and the group's nice value before.
fn flood(sb: &Sandbox, sid: &str, mut meanwhile: impl FnMut()) -> (bool, Option<i32>) {
    let holder_sock = sb.holder_socket(sid);
    let info = || holder_info(&holder_sock);
    let holder = info().holder_pid;
    let base = group_nice(holder);
    if let Some(base) = base {
        assert!(base < ccd_sched::group::BULK_NICE, "a new group: {base}");
    }
    let start = info().output_bytes;
    sb.type_flood(sid, FLOOD);
    let t0 = Instant::now();
    let mut seen_bulk = false;
    while info().output_bytes < start + FLOOD {
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "the flood did not finish"
        );
        seen_bulk |= group_nice(holder) == Some(ccd_sched::group::BULK_NICE);
        meanwhile();
        std::thread::sleep(Duration::from_millis(10));
    }
    (seen_bulk, base)
}

#[test]
fn a_flooding_session_weighs_its_holder_group_down_while_another_is_typed_into() {
    let sb = Sandbox::new();
    let sid = sb.new_session("flood-group");
    let other = sb.new_session("typed-into");
    let holder = holder_info(&sb.holder_socket(&sid)).holder_pid;
    // Somebody types into the other session now and then all along.
    type_key(&sb, &other);
    let mut last = Instant::now();
    let (seen_bulk, base) = flood(&sb, &sid, || {
        if last.elapsed() > Duration::from_secs(2) {
            type_key(&sb, &other);
            last = Instant::now();
        }
    });
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

#[test]
fn a_flood_with_nobody_typing_elsewhere_keeps_its_groups_weight() {
    let sb = Sandbox::new();
    let sid = sb.new_session("flood-alone");
    // Typing into the flooding session itself is not another's typing (the
    // flood is started by typing into it).
    type_key(&sb, &sid);
    let (seen_bulk, base) = flood(&sb, &sid, || {});
    if base.is_none() {
        eprintln!("no /proc/<pid>/autogroup on this kernel: checked the flood only");
    }
    assert!(
        !seen_bulk,
        "the holder's group was weighed down with nobody typing elsewhere"
    );
    sb.wait_for_row(&sid, "echo: flood");
}
