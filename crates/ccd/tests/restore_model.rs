//! A model switched inside the TUI (`/model <name>`) is the one a restore
//! brings back (issue 54 item 3: "model … as it was at the moment of
//! loss"). Fake sessions started with `--model`, switched with `/model`
//! (one then answered a turn, one then ran `/clear`), a simulated reboot
//! (every process of the sandbox SIGKILLed by pid, the socket dir
//! removed, a new boot id), `ccd restore`: each restored process's argv
//! carries `--model <switched>` and not the start one.

mod common;
use common::*;
use serde_json::Value;
use std::time::Duration;

/// The recorded model of each held session in `held.json`.
fn recorded_model(sb: &Sandbox, sid: &str) -> Option<String> {
    let text = std::fs::read_to_string(sb.state.join("held.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["held"]
        .as_array()?
        .iter()
        .find(|e| e["session"] == sid)
        .and_then(|e| e["model"].as_str().map(String::from))
}

fn argv_of(sb: &Sandbox, sid: &str) -> Vec<String> {
    let r = wait_for(Duration::from_secs(30), "the restored session live", || {
        let r = row(sb, sid);
        (r["state"] == "live" && r["pid"].is_u64()).then_some(r)
    });
    let pid = r["pid"].as_u64().expect("a pid") as u32;
    ccd_testkit::procs::cmdline(pid)
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

#[test]
fn a_model_switched_with_slash_model_is_the_one_restored() {
    let mut sb = Sandbox::new();
    sb.set_env("CCD_TEST_BOOT_ID", "boot-1");
    let start = |name: &str| {
        let dir = sb.project(name);
        let sid = sb
            .ok(&[
                "new",
                "--detach",
                "--cwd",
                dir.to_str().expect("utf-8"),
                "--",
                "--model",
                "claude-started",
                "--add-dir",
                "/tmp",
            ])
            .trim()
            .to_string();
        sb.ok(&["send", &sid, "make a transcript"]);
        sb.wait_for_row(&sid, "echo: make a transcript");
        sid
    };
    let answered = start("answered");
    let cleared = start("cleared");
    for sid in [&answered, &cleared] {
        wait_for(Duration::from_secs(20), "the start model recorded", || {
            (recorded_model(&sb, sid).as_deref() == Some("claude-started")).then_some(())
        });
    }

    // One switches and answers a turn with the new model.
    sb.type_keys(&answered, b"/model claude-switched-a\r");
    sb.wait_for_row(&answered, "Set model to");
    sb.ok(&["send", &answered, "after the switch"]);
    sb.wait_for_row(&answered, "echo: after the switch");
    // The other switches, then starts a new conversation (/clear): the
    // process keeps the model, the record follows the new id.
    sb.type_keys(&cleared, b"/model claude-switched-b\r");
    sb.wait_for_row(&cleared, "Set model to");
    let old_cleared = cleared.clone();
    sb.type_keys(&cleared, b"/clear\r");
    let cleared = wait_for(Duration::from_secs(20), "the new id after /clear", || {
        ls_json(&sb)
            .into_iter()
            .filter_map(|r| r["session_id"].as_str().map(String::from))
            .find(|s| *s != old_cleared && *s != answered)
    });
    let recorded = || {
        recorded_model(&sb, &answered).as_deref() == Some("claude-switched-a")
            && recorded_model(&sb, &cleared).as_deref() == Some("claude-switched-b")
    };
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while !recorded() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        recorded(),
        "the switches recorded: {}\n{}",
        std::fs::read_to_string(sb.state.join("held.json")).unwrap_or_default(),
        sb.logs()
    );
    // A conversation needs a transcript with a turn to be resumed.
    sb.ok(&["send", &cleared, "on the new conversation"]);
    sb.wait_for_row(&cleared, "echo: on the new conversation");

    sb.simulate_reboot(&[], "boot-2");
    let _ = sb.client_or_start();
    let out = sb.run(&["restore", "--json"]);
    assert!(
        out.status.success(),
        "ccd restore: {}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        sb.logs()
    );
    for (sid, model) in [
        (&answered, "claude-switched-a"),
        (&cleared, "claude-switched-b"),
    ] {
        let argv = argv_of(&sb, sid);
        let has = |a: &str, b: &str| argv.windows(2).any(|w| w[0] == a && w[1] == b);
        assert!(
            has("--resume", sid) && has("--model", model) && has("--add-dir", "/tmp"),
            "{sid} wants --model {model}: {argv:?}"
        );
        assert!(
            !argv.iter().any(|a| a == "claude-started"),
            "the start model replaced: {argv:?}"
        );
    }
}
