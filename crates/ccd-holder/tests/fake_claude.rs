//! Holder lifecycle against the fake `claude`: both trust-dialog variants
//! reach `ready` through the verified trust step; manual trust and the API
//! key dialog need attention.

mod common;

use std::time::Duration;

use ccd_holder::{AttentionReason, KillSignal, State};
use common::{start, wait_info, wait_screen, Env};

const T: Duration = Duration::from_secs(20);

fn reaches_ready(variant: &str) {
    let env = Env::new();
    let (serve, mut c) = start(env.fake(&[("FAKE_CLAUDE_TRUST_VARIANT", variant)]));
    let info = wait_info(&mut c, T, "ready", |i| i.state == State::Ready);
    let sid = info
        .session_id
        .clone()
        .expect("session id learned from the registry");
    assert!(info.needs_attention.is_none(), "{info:#?}");
    let states: Vec<&str> = info.transitions.iter().map(|t| t.state.as_str()).collect();
    assert_eq!(states, vec!["starting", "trust", "ready"], "{info:#?}");
    // The trust transition saved the dialog's screen.
    assert!(info.transitions[1].screen.contains("trust this folder"));
    // Trust was recorded by the CLI (the "Yes" option was chosen).
    let state = std::fs::read_to_string(env.config.join(".claude.json")).unwrap();
    assert!(state.contains("hasTrustDialogAccepted"), "{state}");
    // Status is read from the registry on request.
    let status = info.status.expect("registry status");
    assert_eq!(status.session_id, sid);
    assert_eq!(status.status.as_deref(), Some("idle"));

    // A turn goes through.
    c.input(b"hello holder").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    c.input(b"\r").unwrap();
    wait_screen(&mut c, T, "echo: hello holder");

    // SIGTERM: the CLI exits 143.
    assert!(c.kill(KillSignal::Term, None).unwrap());
    let r = c.collect(T).unwrap();
    assert!(r.collected);
    assert_eq!(r.exit.as_ref().and_then(|e| e.code), Some(143), "{r:#?}");
    assert_eq!(r.state, State::Exited);
    let outcome = serve.join().unwrap().unwrap();
    assert_eq!(outcome.state, State::Exited);
}

#[test]
fn trust_variant_2_1_173_reaches_ready() {
    reaches_ready("2.1.173");
}

#[test]
fn trust_variant_2_1_332_reaches_ready() {
    reaches_ready("2.1.332");
}

#[test]
fn no_auto_trust_needs_attention_and_nothing_is_pressed() {
    let env = Env::new();
    let mut cfg = env.fake(&[("FAKE_CLAUDE_TRUST_VARIANT", "2.1.332")]);
    cfg.auto_trust = false;
    let (serve, mut c) = start(cfg);
    let info = wait_info(&mut c, T, "needs_attention", |i| {
        i.needs_attention.is_some()
    });
    assert_eq!(info.state, State::Trust);
    let att = info.needs_attention.unwrap();
    assert_eq!(att.reason, AttentionReason::TrustDialog);
    assert!(att.screen.contains("trust this folder"), "{}", att.screen);
    // Still there a while later: nothing was answered.
    std::thread::sleep(Duration::from_millis(1500));
    let info = c.info().unwrap();
    assert_eq!(info.state, State::Trust);
    assert!(info.exit.is_none());
    // The user answers by hand (Down, Enter): ready follows.
    c.input(b"\x1b[B").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    c.input(b"\r").unwrap();
    let info = wait_info(&mut c, T, "ready", |i| i.state == State::Ready);
    assert!(info.needs_attention.is_none());
    c.kill(KillSignal::Hup, None).unwrap();
    let r = c.collect(T).unwrap();
    assert_eq!(r.exit.and_then(|e| e.code), Some(129));
    serve.join().unwrap().unwrap();
}

#[test]
fn api_key_dialog_needs_attention_and_is_not_answered() {
    let env = Env::new();
    let (serve, mut c) = start(env.fake(&[
        ("FAKE_CLAUDE_API_KEY_DIALOG", "1"),
        ("ANTHROPIC_API_KEY", "sk-ant-dummy-0123456789abcdefghij"),
    ]));
    let info = wait_info(&mut c, T, "api key attention", |i| {
        matches!(
            i.needs_attention.as_ref().map(|a| &a.reason),
            Some(AttentionReason::ApiKeyDialog)
        )
    });
    assert!(
        info.needs_attention
            .unwrap()
            .screen
            .to_lowercase()
            .contains("api key"),
        "attention screen names the dialog"
    );
    std::thread::sleep(Duration::from_millis(1000));
    let info = c.info().unwrap();
    assert!(matches!(
        info.needs_attention.as_ref().map(|a| &a.reason),
        Some(AttentionReason::ApiKeyDialog)
    ));
    assert!(info.exit.is_none());
    c.kill(KillSignal::Term, Some(Duration::from_millis(2000)))
        .unwrap();
    let r = c.collect(T).unwrap();
    assert!(r.collected);
    serve.join().unwrap().unwrap();
}

#[test]
fn lost_navigation_key_is_retried_before_enter() {
    // The dialog ignores keys for 900 ms, longer than the 300 ms stability
    // wait: the first Down is lost, the step notices (no screen change) and
    // sends it again; Enter only once the pointer is seen on the trust option.
    let env = Env::new();
    let (serve, mut c) = start(env.fake(&[
        ("FAKE_CLAUDE_TRUST_VARIANT", "2.1.332"),
        ("FAKE_CLAUDE_INPUT_DELAY_MS", "900"),
    ]));
    let info = wait_info(&mut c, T, "ready", |i| i.state == State::Ready);
    assert!(info.needs_attention.is_none());
    c.kill(KillSignal::Term, None).unwrap();
    let r = c.collect(T).unwrap();
    assert_eq!(r.exit.and_then(|e| e.code), Some(143));
    serve.join().unwrap().unwrap();
}
