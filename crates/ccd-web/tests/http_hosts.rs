//! `ccd web` over several machines (`ui_hosts` in the config, `--host`):
//! one list naming each session's machine, actions and the watched screen
//! reaching the session's own machine, an unreachable machine named with
//! why while the others are listed, a stalled one never holding this
//! machine's list or actions.
//!
//! The other machine is a second sandbox (its own home, Claude config,
//! socket and state directories, daemon); `$CCD_SSH_COMMAND` is a
//! stand-in for ssh that runs that sandbox's `ccd dial-stdio` for the
//! host `far`, fails as ssh does for `nowhere` (exit 255, its words on
//! stderr), and hangs for `stall` (a network that never answers), as
//! crates/ccd/tests/ui_hosts.rs does for the dashboard. Every process is
//! the sandboxes' own (ended by their handles).

mod http;

use http::{stand_in_ssh, wait_for, Sandbox, Web, T};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn row<'a>(list: &'a Value, sid: &str) -> Option<&'a Value> {
    list["sessions"].as_array()?.iter().find(|s| s["id"] == sid)
}

fn machine<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["machines"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)
}

fn names(list: &Value) -> Vec<String> {
    list["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_machine_listed_and_acted_on_an_unreachable_one_named_a_stalled_one_never_waited_for() {
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    stand_in_ssh(&mut near, &far);
    let here = near.new_session("nearproj");
    let there = far.new_session("farproj");
    std::fs::write(
        near.root.join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\", \"ssh://nowhere\", \"ssh://stall\"]\n",
    )
    .unwrap();
    let web = Web::start(&near, &[]);
    let cookie = web.login();

    // Both machines' sessions, each with its machine; the unreachable one
    // named with ssh's words; the stalled one named too, and never waited
    // for past the bound (3 s), even while it is being connected.
    let list = wait_for(T, "both machines' sessions", || {
        let t = Instant::now();
        let l = web.sessions(&cookie);
        assert!(
            t.elapsed() < Duration::from_secs(6),
            "a stalled machine held the list {:?}",
            t.elapsed()
        );
        (row(&l, &here).is_some() && row(&l, &there).is_some()).then_some(l)
    });
    assert_eq!(names(&list), ["local", "far", "nowhere", "stall"], "{list}");
    assert_eq!(row(&list, &here).unwrap()["machine"], "local", "{list}");
    assert_eq!(row(&list, &there).unwrap()["machine"], "far", "{list}");
    assert_eq!(row(&list, &there).unwrap()["held"], true, "{list}");
    assert!(
        machine(&list, "local").unwrap()["error"].is_null(),
        "{list}"
    );
    assert!(machine(&list, "far").unwrap()["error"].is_null(), "{list}");
    let e = machine(&list, "nowhere").unwrap()["error"].to_string();
    assert!(e.contains("Could not resolve hostname nowhere"), "{list}");
    assert!(
        machine(&list, "stall").unwrap()["error"].is_string(),
        "{list}"
    );

    // An action on the other machine's session reaches it.
    let r = web.post(
        &cookie,
        &format!("/api/m/far/session/{there}/send"),
        &json!({"text": "hello far"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the remote turn", || {
        far.screen(&there).contains("echo: hello far").then_some(())
    });
    // The form without a machine is the first machine's (local), as before,
    // and answers at once while a machine stalls.
    let t = Instant::now();
    let r = web.post(
        &cookie,
        &format!("/api/session/{here}/send"),
        &json!({"text": "hello near"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    wait_for(T, "the local turn", || {
        near.screen(&here)
            .contains("echo: hello near")
            .then_some(())
    });
    // A session asked of the wrong machine is that machine's answer (not
    // found); a machine not served is 404; an unreachable one is refused
    // with why.
    let r = web.post(
        &cookie,
        &format!("/api/m/far/session/{here}/interrupt"),
        "{}",
    );
    assert_eq!(r.status, 404, "{r:?}");
    let r = web.post(
        &cookie,
        &format!("/api/m/elsewhere/session/{here}/interrupt"),
        "{}",
    );
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(r.json()["code"], "machine", "{r:?}");
    let r = web.post(
        &cookie,
        &format!("/api/m/nowhere/session/{here}/interrupt"),
        "{}",
    );
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.body.contains("nowhere"), "{r:?}");
    // Completion on the other machine: its folders.
    let r = web.get(
        &cookie,
        &format!(
            "/api/m/far/complete?prefix={}/farp",
            far.work.to_str().unwrap()
        ),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("farproj"), "{r:?}");

    // The page's socket: the list names every machine; watching the
    // remote session gives its screen, from its own machine.
    let mut ws = web.ws(&cookie);
    let first = ws.until("a list", |m| m["t"] == "sessions");
    assert_eq!(names(&first), ["local", "far", "nowhere", "stall"]);
    ws.send(&json!({"t": "watch", "session": there, "machine": "far"}));
    ws.until("the remote screen", |m| {
        m["t"] == "screen" && m["session"] == there.as_str() && m.to_string().contains("hello far")
    });
    ws.send(&json!({"t": "watch", "session": there, "machine": "elsewhere"}));
    ws.until("a machine not served", |m| {
        m["t"] == "error" && m["message"].as_str().unwrap_or("").contains("no machine")
    });
    // A prompt on the other machine is pushed by its events, with its id.
    let r = web.post(
        &cookie,
        &format!("/api/m/far/session/{there}/send"),
        &json!({"text": "perm touch far.txt"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let m = ws.until("the remote prompt pushed", |m| {
        m["t"] == "sessions" && row(m, &there).is_some_and(|r| r["prompt"].is_object())
    });
    let prompt = row(&m, &there).unwrap()["prompt"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = web.post(
        &cookie,
        &format!("/api/m/far/session/{there}/respond"),
        &json!({"prompt_id": prompt, "choice": "yes"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the approved remote turn", || {
        far.screen(&there)
            .contains("echo: perm touch far.txt")
            .then_some(())
    });
}

#[test]
fn host_flags_override_ui_hosts_and_the_first_machine_takes_the_bare_routes() {
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    stand_in_ssh(&mut near, &far);
    let there = far.new_session("farproj");
    std::fs::write(near.root.join("ccd.toml"), "ui_hosts = [\"local\"]\n").unwrap();
    let web = Web::start(&near, &["--host", "ssh://far"]);
    let cookie = web.login();
    let list = wait_for(T, "the remote session", || {
        let l = web.sessions(&cookie);
        row(&l, &there).is_some().then_some(l)
    });
    assert_eq!(names(&list), ["far"], "{list}");
    let r = web.post(
        &cookie,
        &format!("/api/session/{there}/send"),
        &json!({"text": "bare route"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the remote turn", || {
        far.screen(&there)
            .contains("echo: bare route")
            .then_some(())
    });
}
