//! What each live session costs (`cost` in `ccd ls`, `sessions.list`,
//! `sessions.get`, `sessions.costs`), and the memory budget that stops the
//! idle sessions freeing the most first. The fake claude grows by N MiB on
//! the prompt `hold N`.

mod common;

use common::external::external;
use common::{ls_json, row, wait_for, Sandbox};
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

const T: Duration = Duration::from_secs(40);
const MIB: u64 = 1 << 20;

fn memory(r: &Value) -> Option<u64> {
    r["cost"]["memory_bytes"].as_u64()
}

/// Sends `hold <mib>` and waits until the turn is over and the session's
/// cost shows the memory.
fn hold(sb: &Sandbox, sid: &str, mib: u64) {
    sb.ok(&["send", sid, &format!("hold {mib}")]);
    wait_for(T, "the held memory to show", || {
        let r = row(sb, sid);
        (r["status"] == "idle" && memory(&r)? >= mib * MIB).then_some(())
    });
}

#[test]
fn every_live_session_shows_what_it_costs() {
    let sb = Sandbox::with_env(&[("CCD_COST_INTERVAL_MS", "300")]);
    let held = sb.new_session("held");
    hold(&sb, &held, 150);
    // A session ccd does not hold counts too.
    let dir = sb.project("outside");
    let mut ext = external(&sb, &dir);
    ext._writer.write_all(b"hold 100\r").unwrap();
    let r = wait_for(T, "the outside session's cost", || {
        let r = row(&sb, &ext.sid);
        (memory(&r)? >= 100 * MIB).then_some(r)
    });
    assert!(r["ccd"].is_null(), "not held: {r}");
    let r = row(&sb, &held);
    let small = memory(&row(&sb, &ext.sid)).unwrap();
    assert!(
        memory(&r).unwrap() > small,
        "150 MiB held is more than 100: {r}"
    );
    #[cfg(target_os = "linux")]
    assert_eq!(r["cost"]["memory_kind"], "pss", "{r}");
    assert!(r["cost"]["processes"].as_u64().unwrap() >= 1, "{r}");
    assert!(r["cost"]["measured_at"].is_string(), "{r}");
    // The CPU share needs two samples: the daemon keeps sampling.
    let r = wait_for(T, "a CPU figure", || {
        let r = row(&sb, &held);
        r["cost"]["cpu_percent"].as_f64().map(|_| r)
    });
    assert!(r["cost"]["cpu_interval_ms"].as_u64().unwrap() >= 300, "{r}");

    // The table has the columns; --no-cost leaves them and the JSON out.
    let table = sb.ok(&["ls"]);
    let header = table.lines().next().unwrap();
    assert!(header.contains("MEM") && header.contains("CPU"), "{table}");
    let line = table.lines().find(|l| l.starts_with(&held[..8])).unwrap();
    assert!(line.contains('M'), "a size in MiB: {line}");
    let bare = sb.ok(&["ls", "--no-cost"]);
    assert!(!bare.lines().next().unwrap().contains("MEM"), "{bare}");
    let out = sb.ok(&["ls", "--json", "--no-cost"]);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert!(rows.iter().all(|r| r.get("cost").is_none()), "{out}");

    // The socket API: list, get, costs.
    let mut c = sb.client();
    let list = c.call_value("sessions.list", json!({})).unwrap();
    let listed = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session_id"] == held)
        .unwrap()
        .clone();
    assert!(memory(&listed).unwrap() >= 150 * MIB, "{listed}");
    let list = c
        .call_value("sessions.list", json!({"no_cost": true}))
        .unwrap();
    assert!(list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("cost").is_none()));
    let got = c
        .call_value("sessions.get", json!({"session": held}))
        .unwrap();
    assert!(memory(&got).unwrap() >= 150 * MIB, "{got}");
    let costs = c.call_value("sessions.costs", json!({})).unwrap();
    let pids: Vec<u64> = costs["costs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pid"].as_u64().unwrap())
        .collect();
    let ext_pid = u64::from(ext.child.process_id().unwrap());
    assert!(pids.contains(&ext_pid), "{costs}");
    assert!(pids.contains(&got["pid"].as_u64().unwrap()), "{costs}");
    // A pid that is not there is left out, and asked for by name works.
    let one = c
        .call_value("sessions.costs", json!({"pids": [ext_pid, 999_999_999u64]}))
        .unwrap();
    assert_eq!(one["costs"].as_array().unwrap().len(), 1, "{one}");
    // Past the bound on named pids: a clear error, and the daemon serves on.
    let many: Vec<u64> = (1..=4097).collect();
    let e = c
        .call_value("sessions.costs", json!({"pids": many}))
        .unwrap_err();
    assert!(e.to_string().contains("at most 4096"), "{e}");
    assert!(c.call_value("sessions.costs", json!({})).is_ok());
    // A dead session has no cost.
    ext.child.kill().unwrap();
    let _ = ext.child.wait();
    wait_for(T, "the outside session dead", || {
        let r = row(&sb, &ext.sid);
        (r["state"] == "dead").then_some(r)
    });
    assert!(row(&sb, &ext.sid).get("cost").is_none());
}

#[test]
fn without_a_daemon_ls_measures_the_memory_itself() {
    let sb = Sandbox::new();
    let dir = sb.project("outside");
    let mut ext = external(&sb, &dir);
    ext._writer.write_all(b"hold 80\r").unwrap();
    let r = wait_for(T, "the memory measured by ls alone", || {
        let r = ls_json(&sb)
            .into_iter()
            .find(|r| r["session_id"] == ext.sid)?;
        (memory(&r)? >= 80 * MIB).then_some(r)
    });
    assert!(sb.daemon_pid().is_none(), "ls started no daemon");
    // One sample has no CPU share.
    assert!(r["cost"].get("cpu_percent").is_none(), "{r}");
}

/// A held session with `mib` MiB, after a turn.
fn session_holding(sb: &Sandbox, name: &str, mib: u64) -> String {
    let sid = sb.new_session(name);
    hold(sb, &sid, mib);
    sid
}

#[test]
fn the_budget_stops_the_biggest_idle_session_first_and_never_one_in_use() {
    let mut sb = Sandbox::with_env(&[
        ("CCD_COST_INTERVAL_MS", "300"),
        ("FAKE_CLAUDE_TURN_MS", "300"),
    ]);
    // Built with no budget, so nothing is stopped while the set grows.
    let small = session_holding(&sb, "small", 40);
    let mid = session_holding(&sb, "mid", 200);
    let big = session_holding(&sb, "big", 300);
    // Bigger than `big`, but not eligible: pinned, attached, background
    // work pending, a draft in its prompt.
    let pinned = session_holding(&sb, "pinned", 420);
    sb.ok(&["pin", &pinned]);
    let attached = session_holding(&sb, "attached", 400);
    let background = session_holding(&sb, "background", 380);
    let path = row(&sb, &background)["transcript"]
        .as_str()
        .unwrap()
        .to_string();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{}", json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_bg","name":"Bash","input":{"command":"sleep 999","run_in_background":true}}]}})).unwrap();
    // Idle at its prompt, but with words typed and not sent: they live only
    // on the screen.
    let draft = session_holding(&sb, "draft", 440);
    let mut c = sb.client();
    c.call_value(
        "session.input",
        json!({"session": draft, "data": "dW5zZW50IHdvcmRz"}), // "unsent words"
    )
    .unwrap();
    wait_for(T, "the draft on screen", || {
        sb.ok(&["screen", &draft])
            .contains("unsent words")
            .then_some(())
    });
    drop(c);
    // A session typed into in the last 5 s is not at rest at all
    // (`reap::INPUT_QUIET`): past it, only the draft keeps this one.
    std::thread::sleep(Duration::from_secs(5));

    // The budget: what all hold now, less what `big` holds, plus a margin
    // smaller than `mid`'s: stopping `big` alone brings the total under.
    let all = [&small, &mid, &big, &pinned, &attached, &background, &draft];
    let total: u64 = all.iter().map(|s| memory(&row(&sb, s)).unwrap()).sum();
    let big_bytes = memory(&row(&sb, &big)).unwrap();
    let budget = total - big_bytes + 30 * MIB;
    sb.ok(&["daemon", "stop"]); // the sessions keep running
    sb.env
        .push(("CCD_MEMORY_BUDGET".into(), format!("{}MiB", budget / MIB)));
    // Idle time counts from the new daemon's first look: 4 s leaves time
    // to attach a client to `attached` first.
    sb.env.push(("CCD_REAP_MIN_IDLE_SECS".into(), "4".into()));
    let mut c = sb.client_or_start();
    c.call_value(
        "session.attach",
        json!({"session": attached, "mode": "observe"}),
    )
    .unwrap();
    let mut events = sb.client();
    events.call_value("events.subscribe", json!({})).unwrap();

    wait_for(T, "the biggest eligible session stopped", || {
        let r = row(&sb, &big);
        (r["state"] == "dead" && r["ccd"]["lifecycle"] == "reaped").then_some(())
    });
    let reaped = wait_for(T, "the session.reaped event", || loop {
        let e = common::next_event(&mut events, Duration::from_millis(200))?;
        if e["type"] == "session.reaped" {
            return Some(e);
        }
    });
    assert_eq!(reaped["session"], big.as_str(), "{reaped}");
    assert_eq!(reaped["reason"], "memory_budget", "{reaped}");
    assert!(
        reaped["freed_bytes"].as_u64().unwrap() >= 300 * MIB,
        "{reaped}"
    );
    // It was enough: nothing else goes, in use or not.
    std::thread::sleep(Duration::from_secs(3));
    for (name, sid) in [
        ("small", &small),
        ("mid", &mid),
        ("pinned", &pinned),
        ("attached", &attached),
        ("background", &background),
        ("draft", &draft),
    ] {
        let r = row(&sb, sid);
        assert_eq!(r["state"], "live", "{name} was stopped: {r}");
    }
    assert!(
        sb.ok(&["screen", &draft]).contains("unsent words"),
        "the draft is kept"
    );
    assert!(
        sb.logs_with(&["idle with a draft in its prompt"])
            .contains("idle with a draft in its prompt"),
        "the draft, not something else, kept it"
    );
    let now: u64 = all.iter().filter_map(|s| memory(&row(&sb, s))).sum();
    assert!(now <= budget, "held {now} over the budget {budget}");
    let why = row(&sb, &big)["ccd"]["attention"].to_string();
    assert!(why.contains("memory budget"), "{why}");
    let logs = sb.logs_with(&[
        "stopping an idle session to keep under the memory budget",
        "freed_bytes",
    ]);
    assert!(
        logs.contains("stopping an idle session to keep under the memory budget")
            && logs.contains("freed_bytes"),
        "the stop is not logged"
    );
    // It stays resumable: attach brings it back in its own folder.
    let cwd = row(&sb, &big)["cwd"].clone();
    let r = c
        .call_value("session.attach", json!({"session": big}))
        .unwrap();
    assert_eq!(r["resumed"], true, "{r}");
    let r = wait_for(T, "the resumed session live", || {
        let r = row(&sb, &big);
        (r["state"] == "live").then_some(r)
    });
    assert_eq!(r["cwd"], cwd);
}

#[test]
fn a_busy_session_is_never_stopped_however_big() {
    let sb = Sandbox::with_env(&[
        ("CCD_COST_INTERVAL_MS", "300"),
        ("CCD_REAP_MIN_IDLE_SECS", "1"),
        ("CCD_MEMORY_BUDGET", "50MiB"),
        // Every turn lasts ten minutes.
        ("FAKE_CLAUDE_TURN_MS", "600000"),
    ]);
    let sid = sb.new_session("busy");
    sb.ok(&["send", &sid, "hold 300"]);
    wait_for(T, "the busy session's memory", || {
        let r = row(&sb, &sid);
        (r["status"] == "busy" && memory(&r)? >= 300 * MIB).then_some(())
    });
    // Several samples over the budget.
    std::thread::sleep(Duration::from_secs(4));
    let r = row(&sb, &sid);
    assert_eq!(r["state"], "live", "{r}");
    assert_eq!(r["status"], "busy", "{r}");
    assert!(
        sb.logs_with(&["over the memory budget and none more can be stopped"])
            .contains("over the memory budget and none more can be stopped"),
        "the daemon says why it does nothing"
    );
}
