//! `session.respond`, `ccd approve` and `ccd deny` against the fake claude's
//! permission dialog: the attention event names the prompt, an answer
//! naming another prompt (or none on screen) types nothing, approve and
//! deny pick the option by label, and the message of a deny is sent as the
//! next prompt.

mod common;

use ccd_protocol::methods::session::{RespondChoice, RespondParams, SessionRespond};
use ccd_protocol::ErrorCode;
use common::{next_event, wait_for, Sandbox};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(20);

/// Waits for a permission `session.attention` of `sid`; the event.
fn attention(c: &mut ccd_client::Client, sid: &str) -> Value {
    let deadline = Instant::now() + T;
    loop {
        assert!(
            Instant::now() < deadline,
            "no permission attention for {sid}"
        );
        let Some(e) = next_event(c, Duration::from_millis(200)) else {
            continue;
        };
        if e["type"] == "session.attention" && e["session"] == sid && e["reason"] == "permission" {
            return e;
        }
    }
}

fn screen(sb: &Sandbox, sid: &str) -> String {
    sb.ok(&["screen", sid])
}

fn respond(
    c: &mut ccd_client::Client,
    sid: &str,
    choice: RespondChoice,
    prompt: Option<&str>,
) -> Result<ccd_protocol::methods::session::RespondResult, ccd_client::ClientError> {
    c.call::<SessionRespond>(&RespondParams {
        session: sid.to_string(),
        choice,
        message: None,
        prompt: prompt.map(String::from),
    })
}

/// Connections the holder of `sid` accepted so far (the asking one
/// counted: a difference of two readings, less one, is what came between).
fn holder_connections(sb: &Sandbox, sid: &str) -> u64 {
    common::holder_info(&sb.holder_socket(sid))
        .connections
        .expect("a current holder counts its connections")
}

#[test]
fn approve_and_deny_answer_the_prompt_that_was_seen_and_only_it() {
    // A current holder walks the prompt itself: one call, one connection.
    answers_prompts(&Sandbox::new(), Walker::Holder);
}

#[test]
fn a_holder_of_the_older_protocol_is_walked_by_the_daemon_the_same_way() {
    // A holder that agrees to protocol 2 only (as one started by the ccd
    // before holder.respond): the daemon walks it over holder.screen and
    // holder.input, with every check the same.
    answers_prompts(
        &Sandbox::with_env(&[("CCD_HOLDER_PROTOCOL_MAX", "2")]),
        Walker::Daemon,
    );
}

/// Who walks the dialog in [`answers_prompts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walker {
    Holder,
    Daemon,
}

fn answers_prompts(sb: &Sandbox, walker: Walker) {
    let sid = sb.new_session("answered");
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({})).unwrap();

    // No dialog: refused, nothing typed.
    let out = sb.run(&["approve", &sid]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shows no permission prompt"), "{err}");
    assert!(err.contains("nothing was typed"), "{err}");
    let e = respond(&mut c, &sid, RespondChoice::Yes, None).unwrap_err();
    assert_eq!(
        e.rpc().map(|r| r.code),
        Some(ErrorCode::PromptNotShown.code()),
        "{e}"
    );

    // A prompt: the event names it.
    sb.ok(&["send", &sid, "perm touch approved.txt"]);
    let a = attention(&mut c, &sid);
    let prompt = a["prompt"].as_str().unwrap_or_default().to_string();
    assert_eq!(prompt.len(), 16, "{a}");
    assert_eq!(a["detail"], "touch approved.txt", "{a}");
    // `sessions.get` shows the same id.
    let info = c
        .call_value("sessions.get", json!({"session": sid}))
        .unwrap();
    assert_eq!(info["ccd"]["permission_prompt"], prompt.as_str(), "{info}");

    // Another prompt id: refused, the dialog stays, its pointer unmoved.
    let before = screen(sb, &sid);
    let e = respond(&mut c, &sid, RespondChoice::No, Some("0123456789abcdef")).unwrap_err();
    let rpc = e.rpc().cloned().unwrap();
    assert_eq!(rpc.code, ErrorCode::PromptNotShown.code(), "{e}");
    let data = rpc.data.unwrap_or(Value::Null);
    assert_eq!(data["prompt"], prompt.as_str(), "{data}");
    assert_eq!(data["expected"], "0123456789abcdef", "{data}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(screen(sb, &sid), before, "a refused answer typed nothing");

    // Approve the prompt that was seen.
    let out = sb.ok_stderr(&["approve", &sid, "--prompt", &prompt]);
    assert!(out.contains(&format!("approved prompt {prompt}")), "{out}");
    assert!(out.contains(": Yes"), "{out}");
    wait_for(T, "the approved turn's reply", || {
        screen(sb, &sid)
            .contains("echo: perm touch approved.txt")
            .then_some(())
    });
    // Answered: the same id again is refused.
    let e = respond(&mut c, &sid, RespondChoice::Yes, Some(&prompt)).unwrap_err();
    assert_eq!(
        e.rpc().map(|r| r.code),
        Some(ErrorCode::PromptNotShown.code())
    );

    // The next prompt, denied with a message: refused, then the message
    // is the next prompt.
    sb.ok(&["send", &sid, "perm rm -rf build"]);
    let a = attention(&mut c, &sid);
    assert_eq!(a["detail"], "rm -rf build", "{a}");
    assert_ne!(a["prompt"], prompt.as_str(), "another prompt, another id");
    let out = sb.ok_stderr(&["deny", &sid, "--message", "list the files instead"]);
    assert!(out.contains("denied prompt"), "{out}");
    assert!(out.contains(": No"), "{out}");
    wait_for(T, "the refusal and the message's turn", || {
        let s = screen(sb, &sid);
        (s.contains("User rejected the command") && s.contains("echo: list the files instead"))
            .then_some(())
    });
    assert!(!screen(sb, &sid).contains("echo: perm rm -rf build"));

    // "always" takes the "don't ask again" option (the fake's second).
    sb.ok(&["send", &sid, "perm ls"]);
    let a = attention(&mut c, &sid);
    let before = holder_connections(sb, &sid);
    let r = respond(&mut c, &sid, RespondChoice::Always, a["prompt"].as_str()).unwrap();
    let used = holder_connections(sb, &sid) - before - 1;
    assert!(r.option.starts_with("Yes, and don't ask again"), "{r:?}");
    wait_for(T, "the always-approved turn's reply", || {
        screen(sb, &sid).contains("echo: perm ls").then_some(())
    });
    // Who walked it, and what it cost in holder connections (one arrow,
    // one Enter): the holder's walk is one connection (one more allowed
    // for the daemon's own refresh reconnecting meanwhile); the daemon's
    // walk opens one per look and per key.
    match walker {
        Walker::Holder => assert!(used <= 2, "the holder's walk used {used} connections"),
        Walker::Daemon => assert!(used >= 4, "the daemon's walk used only {used} connections"),
    }
    let by = match walker {
        Walker::Holder => "walked_by=\"holder\"",
        Walker::Daemon => "walked_by=\"daemon\"",
    };
    // The log is written by a background worker: wait for the line.
    let line = wait_for(T, "the answer's log line", || {
        sb.logs()
            .lines()
            .rfind(|l| l.contains("session.respond") && l.contains(&sid))
            .map(str::to_string)
    });
    assert!(line.contains(by), "the last answer's log line: {line}");
}

#[test]
fn a_message_goes_only_with_a_refusal_and_sessions_outside_ccd_are_refused() {
    let sb = Sandbox::new();
    let sid = sb.new_session("messaged");
    let mut c = sb.client_or_start();
    let e = c
        .call::<SessionRespond>(&RespondParams {
            session: sid.clone(),
            choice: RespondChoice::Yes,
            message: Some("hi".into()),
            prompt: None,
        })
        .unwrap_err();
    assert_eq!(
        e.rpc().map(|r| r.code),
        Some(ErrorCode::InvalidParams.code())
    );
    let out = sb.run(&["deny", "no-such-session"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no session matches"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The prompts the fake claude recorded for `sid`, in order (user records
/// whose content is a string: not tool results).
fn prompts(sb: &Sandbox, sid: &str) -> Vec<String> {
    let Some(p) = ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), sid)
    else {
        return Vec::new();
    };
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "user")
        .filter_map(|v| v["message"]["content"].as_str().map(String::from))
        .collect()
}

/// Text typed for a client stays text (issue: `ESC[201~` in a send ended
/// the bracketed paste, and what followed was typed as keys: two prompts,
/// a switched permission mode). A send and a deny message holding the
/// paste's end marker, `\r`, ESC and Shift-Tab make one prompt each, with
/// the text and nothing else; text over the bound is refused at once.
#[test]
fn typed_text_never_becomes_keys_and_oversized_text_is_refused_at_once() {
    let sb = Sandbox::new();
    let sid = sb.new_session("typed");
    let mut c = sb.client_or_start();
    c.call_value("events.subscribe", json!({})).unwrap();

    sb.ok(&["send", &sid, "ONE\x1b[201~\rTWO\x1b[Z\x1b"]);
    wait_for(T, "the sent prompt's reply", || {
        (prompts(&sb, &sid).len() == 1 && screen(&sb, &sid).contains("echo: ONE")).then_some(())
    });
    let r = c
        .call_value(
            "session.send",
            json!({"session": sid, "text": "THREE\u{1b}[201~\u{1b}[Z\u{1b}[Z"}),
        )
        .unwrap();
    assert_eq!(r["removed"], 12, "{r}");
    wait_for(T, "the second prompt", || {
        (prompts(&sb, &sid).len() >= 2).then_some(())
    });

    // A deny message, through the CLI.
    sb.ok(&["send", &sid, "perm rm -rf build"]);
    let a = attention(&mut c, &sid);
    let before = screen(&sb, &sid);
    // Over the bound: refused before anything is read or typed.
    let huge = "x".repeat(ccd_protocol::methods::session::MAX_TYPED_TEXT + 1);
    let started = Instant::now();
    let e = c
        .call::<SessionRespond>(&RespondParams {
            session: sid.clone(),
            choice: RespondChoice::No,
            message: Some(huge.clone()),
            prompt: a["prompt"].as_str().map(String::from),
        })
        .unwrap_err();
    let rpc = e.rpc().cloned().unwrap();
    assert_eq!(rpc.code, ErrorCode::InvalidParams.code(), "{e}");
    assert!(rpc.message.contains("262144"), "{}", rpc.message);
    assert_eq!(rpc.data.unwrap_or(Value::Null)["max_bytes"], 262144);
    let e = c
        .call_value("session.send", json!({"session": sid, "text": huge}))
        .unwrap_err();
    assert_eq!(
        e.rpc().map(|r| r.code),
        Some(ErrorCode::InvalidParams.code())
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "refused after {:?}",
        started.elapsed()
    );
    assert_eq!(screen(&sb, &sid), before, "nothing was typed");

    sb.ok_stderr(&["deny", &sid, "--message", "FOUR\x1b[201~\r\x1b[Z\x1b[ZFIVE"]);
    wait_for(T, "the message's turn", || {
        screen(&sb, &sid).contains("echo: FOUR").then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        prompts(&sb, &sid),
        ["ONE\nTWO", "THREE", "perm rm -rf build", "FOUR\nFIVE"],
        "one prompt per send, holding the text and nothing else"
    );
}
