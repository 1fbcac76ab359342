//! `ccd web`'s actions against the fake claude, over plain HTTP and the
//! WebSocket: a permission prompt pushed to an open page without a reload
//! and in `/api/sessions`, approved through `/respond` (a second approve
//! with the old prompt id is 409 with the daemon's words), denied with a
//! message; `/send` and `/keys` reaching the session; the watched
//! session's screen (a full frame, then changed rows); a dead session's
//! tail.

mod http;

use http::{wait_for, Sandbox, Web, T};
use serde_json::{json, Value};

/// The session `sid` in a list message (or `/api/sessions`).
fn row<'a>(list: &'a Value, sid: &str) -> Option<&'a Value> {
    list["sessions"].as_array()?.iter().find(|s| s["id"] == sid)
}

fn screen_has(sb: &Sandbox, sid: &str, text: &str) -> Option<()> {
    sb.screen(sid).contains(text).then_some(())
}

#[test]
fn a_prompt_is_pushed_approved_once_and_denied_with_a_message() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let mut ws = web.ws(&cookie);
    let first = ws.next();
    assert_eq!(first["t"], "sessions", "{first}");

    // A new session appears on the open page (pushed, no reload).
    let sid = sb.new_session("asks");
    ws.until("the new session listed", |m| {
        m["t"] == "sessions" && row(m, &sid).is_some_and(|r| r["held"] == true)
    });

    // A prompt: pushed with its tool, detail and options.
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/send"),
        &json!({"text": "perm touch approved.txt"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["ok"], true);
    let m = ws.until("the permission prompt pushed", |m| {
        m["t"] == "sessions"
            && row(m, &sid).is_some_and(|r| r["prompt"]["detail"] == "touch approved.txt")
    });
    let s = row(&m, &sid).unwrap();
    assert_eq!(s["needs"], "permission", "{s}");
    assert_eq!(m["sessions"][0]["id"], sid.as_str(), "needs-you first: {m}");
    let prompt = s["prompt"]["id"].as_str().unwrap().to_string();
    assert_eq!(prompt.len(), 16, "{s}");
    let keys: Vec<&str> = s["prompt"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.first(), Some(&"yes"), "{s}");
    assert_eq!(keys.last(), Some(&"no"), "{s}");
    // The same in /api/sessions.
    let list = web.sessions(&cookie);
    assert_eq!(row(&list, &sid).unwrap()["prompt"]["id"], prompt.as_str());

    // A wrong choice and an empty prompt id are refused before the daemon.
    let respond = format!("/api/session/{sid}/respond");
    let r = web.post(
        &cookie,
        &respond,
        &json!({"prompt_id": prompt, "choice": "maybe"}).to_string(),
    );
    assert_eq!(r.status, 400, "{r:?}");
    let r = web.post(
        &cookie,
        &respond,
        &json!({"prompt_id": "", "choice": "yes"}).to_string(),
    );
    assert_eq!(r.status, 400, "{r:?}");

    // Approve: once.
    let r = web.post(
        &cookie,
        &respond,
        &json!({"prompt_id": prompt, "choice": "yes"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["option"], "Yes", "{r:?}");
    wait_for(T, "the approved turn", || {
        screen_has(&sb, &sid, "echo: perm touch approved.txt")
    });
    let r = web.post(
        &cookie,
        &respond,
        &json!({"prompt_id": prompt, "choice": "yes"}).to_string(),
    );
    assert_eq!(r.status, 409, "{r:?}");
    let e = r.json();
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("was answered or went"),
        "the daemon's words: {e}"
    );
    assert_eq!(e["code"], -32013, "{e}");
    ws.until("the prompt gone from the list", |m| {
        m["t"] == "sessions" && row(m, &sid).is_some_and(|r| r["prompt"].is_null())
    });

    // The next prompt, denied with a message.
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/send"),
        &json!({"text": "perm rm -rf build"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let m = ws.until("the second prompt", |m| {
        m["t"] == "sessions"
            && row(m, &sid).is_some_and(|r| r["prompt"]["detail"] == "rm -rf build")
    });
    let second = row(&m, &sid).unwrap()["prompt"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(second, prompt);
    // The old id does not answer the new prompt.
    let r = web.post(
        &cookie,
        &respond,
        &json!({"prompt_id": prompt, "choice": "no"}).to_string(),
    );
    assert_eq!(r.status, 409, "{r:?}");
    let r = web.post(
        &cookie,
        &respond,
        &json!({"prompt_id": second, "choice": "no", "message": "list the files instead"})
            .to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the refusal and the message's turn", || {
        let s = sb.screen(&sid);
        (s.contains("User rejected the command") && s.contains("echo: list the files instead"))
            .then_some(())
    });
}

#[test]
fn send_keys_and_the_watched_screen() {
    let sb = Sandbox::new();
    let sid = sb.new_session("typed");
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let mut ws = web.ws(&cookie);
    ws.send(&json!({"t": "watch", "session": sid}));
    let full = ws.until("a full screen frame", |m| m["t"] == "screen");
    assert_eq!(full["session"], sid.as_str());
    assert_eq!(full["full"], true, "{full}");
    let rows = full["rows"].as_u64().unwrap();
    assert!(rows > 0 && full["cols"].as_u64().unwrap() > 0, "{full}");
    assert_eq!(
        full["lines"].as_object().unwrap().len() as u64,
        rows,
        "every row"
    );
    assert!(full["cursor"]["visible"].is_boolean(), "{full}");

    // Text typed through /keys is a paste: it shows, nothing submitted.
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/keys"),
        &json!({"text": "typed from a phone"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let m = ws.until("the typed text in a frame", |m| {
        m["t"] == "screen" && m.to_string().contains("typed from a phone")
    });
    assert_eq!(m["full"], false, "only changed rows: {m}");
    assert!(
        (m["lines"].as_object().unwrap().len() as u64) < rows,
        "not every row: {m}"
    );
    // Enter submits it.
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/keys"),
        &json!({"keys": ["enter"]}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the submitted paste's turn", || {
        screen_has(&sb, &sid, "echo: typed from a phone")
    });
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/keys"),
        &json!({"keys": ["esc", "rm -rf"]}).to_string(),
    );
    assert_eq!(r.status, 400, "unknown key names: {r:?}");

    // /send submits a prompt.
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/send"),
        &json!({"text": "hello from the web"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the sent prompt's turn", || {
        screen_has(&sb, &sid, "echo: hello from the web")
    });
    ws.until("the reply on the watched screen", |m| {
        m["t"] == "screen" && m.to_string().contains("echo: hello from the web")
    });
    // A leading `!` is refused by the daemon's rule, with its words.
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/send"),
        &json!({"text": "!rm -rf /"}).to_string(),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.json()["error"].is_string());

    // Killed (the page asked first): dead, its tail is what a watch gets.
    let r = web.post(&cookie, &format!("/api/session/{sid}/kill"), "{}");
    assert_eq!(r.status, 200, "{r:?}");
    ws.until("the session listed dead", |m| {
        m["t"] == "sessions" && row(m, &sid).is_some_and(|r| r["state"] == "dead")
    });
    ws.send(&json!({"t": "watch", "session": sid}));
    let tail = ws.until("the tail", |m| m["t"] == "tail");
    let items = tail["items"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["text"]
            .as_str()
            .is_some_and(|t| t.contains("hello from the web"))),
        "{tail}"
    );
    // Unknown messages get an error, the socket stays.
    ws.send(&json!({"t": "exec", "cmd": "id"}));
    let e = ws.until("an error", |m| m["t"] == "error");
    assert_eq!(e["message"], "unknown message");
}

#[test]
fn new_in_a_completed_folder_fork_kill_and_resume() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let dir = sb.work.join("newproj");
    std::fs::create_dir_all(&dir).unwrap();
    // The folder field's completion (the daemon's dirs.complete).
    let typed = format!("{}/newp", sb.work.display());
    let r = web.get(&cookie, &format!("/api/complete?prefix={typed}"));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["input"], format!("{}/", dir.display()), "{r:?}");

    // New: a held session there, ready.
    let r = web.post(&cookie, "/api/new", &json!({"cwd": dir}).to_string());
    assert_eq!(r.status, 200, "{r:?}");
    let sid = r.json()["session"].as_str().unwrap().to_string();
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/send"),
        &json!({"text": "a turn to fork"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the turn", || {
        screen_has(&sb, &sid, "echo: a turn to fork")
    });
    let r = web.post(
        &cookie,
        "/api/new",
        &json!({"cwd": "relative/dir"}).to_string(),
    );
    assert_eq!(r.status, 400, "a relative folder: {r:?}");

    // Fork: another held session.
    let r = web.post(&cookie, &format!("/api/session/{sid}/fork"), "{}");
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the fork listed", || {
        let list = web.sessions(&cookie);
        (list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["held"] == true)
            .count()
            >= 2)
            .then_some(())
    });

    // Kill, then resume: held again.
    let r = web.post(&cookie, &format!("/api/session/{sid}/kill"), "{}");
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "dead", || {
        (row(&web.sessions(&cookie), &sid)?["state"] == "dead").then_some(())
    });
    let r = web.post(&cookie, &format!("/api/session/{sid}/resume"), "{}");
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "held again", || {
        (row(&web.sessions(&cookie), &sid)?["held"] == true).then_some(())
    });
    // The resume's attachment ended with its connection: nobody attached.
    let info = wait_for(T, "the attachment gone", || {
        let o = sb.run(&["ls", "--json"]);
        let rows: Value = serde_json::from_slice(&o.stdout).ok()?;
        let r = rows
            .as_array()?
            .iter()
            .find(|r| r["session_id"] == sid.as_str())?
            .clone();
        (r["ccd"]["attached"] == 0).then_some(r)
    });
    assert_eq!(info["state"], "live", "{info}");
}
