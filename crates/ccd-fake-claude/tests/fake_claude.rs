//! Drives the built `fake-claude` under a real PTY, never touching the real ~/.claude.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::{records, starttime, Env, Fake};
use nix::sys::signal::Signal;

const DOWN: &[u8] = b"\x1b[B";
const ENTER: &[u8] = b"\r";

fn is_uuid(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

fn type_line(fake: &mut Fake, text: &str) {
    fake.send(text.as_bytes());
    fake.wait_text(&format!("❯ {text}"));
    fake.send(ENTER);
}

/// Checks the registry entry against the live process; returns its session id.
fn check_registry(env: &Env, fake: &Fake) -> String {
    let reg = env.registry(fake.pid);
    assert_eq!(reg["pid"], fake.pid);
    assert_eq!(reg["procStart"], starttime(fake.pid));
    assert_eq!(reg["cwd"], env.proj.to_string_lossy().as_ref());
    assert_eq!(reg["kind"], "interactive");
    assert_eq!(reg["entrypoint"], "cli");
    assert_eq!(reg["peerProtocol"], 1);
    assert_eq!(reg["status"], "idle");
    assert_eq!(reg["nameSource"], "derived");
    assert!(reg["name"].as_str().unwrap().starts_with("proj-"));
    assert!(reg["pidDomain"].as_str().unwrap().starts_with("linux:"));
    assert!(reg["pidDomain"].as_str().unwrap().contains(":pid:["));
    assert!(reg["startedAt"].as_u64().unwrap() > 1_600_000_000_000);
    let keys = env.key_files(fake.pid);
    assert_eq!(keys.len(), 1);
    let mode = std::fs::metadata(&keys[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let sid = reg["sessionId"].as_str().unwrap().to_string();
    assert!(is_uuid(&sid), "{sid}");
    sid
}

fn trusted(env: &Env) -> bool {
    let Ok(text) = std::fs::read_to_string(env.state_file()) else {
        return false;
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["projects"][env.proj.to_string_lossy().as_ref()]["hasTrustDialogAccepted"] == true
}

#[test]
fn trust_2_1_332_down_enter_then_exit_command() {
    let env = Env::new();
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    let s = fake.wait_text("❯ No, exit");
    assert!(s.contains("Accessing workspace:"));
    assert!(s.contains("Yes, I trust this folder"));
    assert!(s.contains("Do you trust") || s.contains("Quick safety check"));
    // Not registered before the dialog is passed.
    assert!(!env.registry_file(fake.pid).exists());
    fake.press_until(DOWN, "❯ Yes, I trust this folder");
    fake.send(ENTER);
    fake.wait_prompt();
    assert!(trusted(&env));
    check_registry(&env, &fake);
    type_line(&mut fake, "/exit");
    assert_eq!(fake.wait_exit().exit_code(), 0);
    assert!(!env.registry_file(fake.pid).exists());
    assert!(env.key_files(fake.pid).is_empty());
}

#[test]
fn trust_2_1_173_enter_then_ctrl_c() {
    let env = Env::new();
    let vars = [("FAKE_CLAUDE_TRUST_VARIANT", "2.1.173")];
    let mut fake = Fake::spawn(&env, &env.proj, &[], &vars);
    let s = fake.wait_text("❯ 1. Yes, I trust this folder");
    assert!(s.contains("2. No, exit"));
    // Enter may be lost while the dialog is not live yet: retry until it is gone.
    fake.press_until(ENTER, "? for shortcuts");
    fake.wait_prompt();
    check_registry(&env, &fake);
    // A subfolder of a trusted folder is trusted: no dialog there.
    let sub = env.proj.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut inner = Fake::spawn(&env, &sub, &[], &vars);
    inner.wait_prompt();
    assert!(!inner.screen().contains("Accessing workspace"));
    inner.send(b"\x03");
    assert_eq!(inner.wait_exit().exit_code(), 0);
    fake.send(b"\x03");
    assert_eq!(fake.wait_exit().exit_code(), 0);
    assert!(!env.registry_file(fake.pid).exists());
}

#[test]
fn keys_sent_too_early_are_dropped() {
    let env = Env::new();
    let vars = [("FAKE_CLAUDE_INPUT_DELAY_MS", "500")];
    let mut fake = Fake::spawn(&env, &env.proj, &[], &vars);
    fake.wait_text("❯ No, exit");
    let sent = Instant::now();
    fake.send(DOWN);
    // Well past the input delay: the early Down must not have moved the selection.
    std::thread::sleep(Duration::from_millis(600).saturating_sub(sent.elapsed()));
    let s = fake.screen();
    assert!(s.contains("❯ No, exit"), "{s}");
    fake.send(DOWN);
    fake.wait_text("❯ Yes, I trust this folder");
    fake.send(ENTER);
    fake.wait_prompt();
}

#[test]
fn no_exit_exits_1_without_registering() {
    let env = Env::new();
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_text("❯ No, exit");
    std::thread::sleep(Duration::from_millis(250));
    fake.send(ENTER);
    assert_eq!(fake.wait_exit().exit_code(), 1);
    fake.wait_text("Claude Code didn't start because this folder isn't trusted.");
    assert!(!env.registry_file(fake.pid).exists());
    assert!(!trusted(&env));
}

#[test]
fn turn_writes_transcript_and_status() {
    let env = Env::new();
    env.trust(&env.proj);
    let vars = [
        ("FAKE_CLAUDE_TURN_MS", "500"),
        ("FAKE_CLAUDE_USAGE_INPUT", "777"),
    ];
    let mut fake = Fake::spawn(&env, &env.proj, &[], &vars);
    fake.wait_prompt();
    let sid = check_registry(&env, &fake);
    assert!(
        env.transcript(&sid).is_none(),
        "created before the first turn"
    );
    type_line(&mut fake, "hello there");
    let deadline = Instant::now() + Duration::from_secs(3);
    while env.registry(fake.pid)["status"] != "busy" {
        assert!(Instant::now() < deadline, "never busy");
        std::thread::sleep(Duration::from_millis(10));
    }
    fake.wait_text("echo: hello there");
    assert_eq!(env.registry(fake.pid)["status"], "idle");
    type_line(&mut fake, "second");
    fake.wait_text("echo: second");

    let path = env.transcript(&sid).unwrap();
    let slug: String = env
        .proj
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    assert_eq!(
        path.parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy(),
        slug
    );
    let recs = records(&path);
    let types: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    for t in [
        "mode",
        "permission-mode",
        "file-history-snapshot",
        "user",
        "assistant",
        "last-prompt",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert!(recs[0].get("cwd").is_none());
    let user = recs.iter().find(|r| r["type"] == "user").unwrap();
    assert_eq!(user["message"]["content"], "hello there");
    assert_eq!(user["cwd"], env.proj.to_string_lossy().as_ref());
    assert_eq!(user["sessionId"], sid.as_str());
    assert!(user["timestamp"].as_str().unwrap().ends_with('Z'));
    let assistants: Vec<_> = recs.iter().filter(|r| r["type"] == "assistant").collect();
    assert_eq!(assistants.len(), 2);
    let total = |r: &serde_json::Value| {
        let u = &r["message"]["usage"];
        assert_eq!(u["input_tokens"], 777);
        u["input_tokens"].as_u64().unwrap()
            + u["cache_creation_input_tokens"].as_u64().unwrap()
            + u["cache_read_input_tokens"].as_u64().unwrap()
    };
    assert!(total(assistants[1]) > total(assistants[0]));
    assert_eq!(
        assistants[0]["message"]["content"][0]["text"],
        "echo: hello there"
    );
    assert_eq!(assistants[0]["message"]["model"], "claude-opus-5-5");
    let last = recs
        .iter()
        .rev()
        .find(|r| r["type"] == "last-prompt")
        .unwrap();
    assert_eq!(last["lastPrompt"], "second");
}

#[test]
fn permission_prompt_sets_waiting() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    type_line(&mut fake, "perm rm -rf x");
    let s = fake.wait_text("Do you want to proceed?");
    assert!(s.contains("Bash command"));
    assert!(s.contains("❯ 1. Yes"));
    let reg = env.registry(fake.pid);
    assert_eq!(reg["status"], "waiting");
    assert_eq!(reg["waitingFor"], "permission prompt");
    fake.send(ENTER);
    fake.wait_text("echo: perm rm -rf x");
    let reg = env.registry(fake.pid);
    assert_eq!(reg["status"], "idle");
    assert!(reg.get("waitingFor").is_none());
}

#[test]
fn sigterm_cleans_up_with_143() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    assert!(env.registry_file(fake.pid).exists());
    fake.signal(Signal::SIGTERM);
    assert_eq!(fake.wait_exit().exit_code(), 143);
    assert!(!env.registry_file(fake.pid).exists());
    assert!(env.key_files(fake.pid).is_empty());
}

#[test]
fn sighup_cleans_up_with_129() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    fake.signal(Signal::SIGHUP);
    assert_eq!(fake.wait_exit().exit_code(), 129);
    assert!(!env.registry_file(fake.pid).exists());
}

#[test]
fn sigkill_leaves_registry_behind() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    fake.signal(Signal::SIGKILL);
    let st = fake.wait_exit();
    assert!(st.signal().is_some(), "{st:?}");
    assert!(env.registry_file(fake.pid).exists());
    assert_eq!(env.key_files(fake.pid).len(), 1);
}

#[test]
fn resume_of_unknown_id_exits_1() {
    let env = Env::new();
    env.trust(&env.proj);
    let sid = "0b6c5c1e-1111-4222-8333-944455556666";
    let mut fake = Fake::spawn(&env, &env.proj, &["--resume", sid], &[]);
    assert_eq!(fake.wait_exit().exit_code(), 1);
    fake.wait_text(&format!("No conversation found with session ID: {sid}"));
    assert!(!env.registry_file(fake.pid).exists());
}

#[test]
fn session_id_flag_and_reuse() {
    let env = Env::new();
    env.trust(&env.proj);
    let sid = "11111111-2222-4333-8444-555555555555";
    let mut fake = Fake::spawn(&env, &env.proj, &["--session-id", sid], &[]);
    fake.wait_prompt();
    assert_eq!(env.registry(fake.pid)["sessionId"], sid);
    type_line(&mut fake, "hi");
    fake.wait_text("echo: hi");
    type_line(&mut fake, "/exit");
    assert_eq!(fake.wait_exit().exit_code(), 0);
    let mut again = Fake::spawn(&env, &env.proj, &["--session-id", sid], &[]);
    assert_eq!(again.wait_exit().exit_code(), 1);
    again.wait_text(&format!("Session ID {sid} is already in use."));
}

/// One session with a turn, ended with /exit; returns its id and transcript bytes.
fn session_with_turn(env: &Env) -> (String, std::path::PathBuf) {
    let mut fake = Fake::spawn(env, &env.proj, &[], &[]);
    fake.wait_prompt();
    let sid = env.registry(fake.pid)["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    type_line(&mut fake, "first prompt");
    fake.wait_text("echo: first prompt");
    type_line(&mut fake, "/exit");
    assert_eq!(fake.wait_exit().exit_code(), 0);
    let path = env.transcript(&sid).unwrap();
    (sid, path)
}

#[test]
fn fork_gets_new_id_and_leaves_original_untouched() {
    let env = Env::new();
    env.trust(&env.proj);
    let (sid, original) = session_with_turn(&env);
    let before = std::fs::read(&original).unwrap();

    let mut fork = Fake::spawn(&env, &env.proj, &["--resume", &sid, "--fork-session"], &[]);
    fork.wait_prompt();
    fork.wait_text("echo: first prompt");
    let new_id = env.registry(fork.pid)["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new_id, sid);
    assert!(is_uuid(&new_id));
    assert!(
        env.transcript(&new_id).is_none(),
        "fork file before its first turn"
    );
    type_line(&mut fork, "forked prompt");
    fork.wait_text("echo: forked prompt");
    type_line(&mut fork, "/exit");
    assert_eq!(fork.wait_exit().exit_code(), 0);

    assert_eq!(std::fs::read(&original).unwrap(), before);
    let forked = env.transcript(&new_id).unwrap();
    let text = std::fs::read_to_string(&forked).unwrap();
    assert!(!text.contains(&sid));
    let recs = records(&forked);
    let users: Vec<_> = recs
        .iter()
        .filter(|r| r["type"] == "user")
        .map(|r| r["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first prompt", "forked prompt"]);
    assert!(recs
        .iter()
        .filter_map(|r| r.get("sessionId"))
        .all(|s| s == new_id.as_str()));
}

#[test]
fn resume_keeps_id_and_appends() {
    let env = Env::new();
    env.trust(&env.proj);
    let (sid, original) = session_with_turn(&env);
    let before = std::fs::read(&original).unwrap();
    let mut fake = Fake::spawn(&env, &env.proj, &["--resume", &sid], &[]);
    fake.wait_text("echo: first prompt");
    assert_eq!(env.registry(fake.pid)["sessionId"], sid.as_str());
    type_line(&mut fake, "resumed prompt");
    fake.wait_text("echo: resumed prompt");
    let after = std::fs::read(&original).unwrap();
    assert!(after.starts_with(&before) && after.len() > before.len());
}

#[test]
fn resume_cwd_rule_per_version() {
    let env = Env::new();
    env.trust(env.proj.parent().unwrap());
    let (sid, original) = session_with_turn(&env);
    let other = env.proj.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    let rule = [("FAKE_CLAUDE_RESUME_CWD_RULE", "2.1.173")];
    let mut old = Fake::spawn(&env, &other, &["--resume", &sid], &rule);
    assert_eq!(old.wait_exit().exit_code(), 1);
    old.wait_text("No conversation found with session ID");

    let mut new = Fake::spawn(&env, &other, &["--resume", &sid], &[]);
    new.wait_prompt();
    type_line(&mut new, "from elsewhere");
    new.wait_text("echo: from elsewhere");
    let recs = records(&original);
    let last_user = recs.iter().rev().find(|r| r["type"] == "user").unwrap();
    assert_eq!(last_user["cwd"], other.to_string_lossy().as_ref());
}

/// The `.jsonl` files under `projects/`, sorted.
fn transcript_files(env: &Env) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(env.config.join("projects"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

fn registry_sid(env: &Env, fake: &Fake) -> String {
    env.registry(fake.pid)["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn clear_switches_registry_at_once_and_next_turn_goes_to_new_file() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    let sid = check_registry(&env, &fake);
    let started = env.registry(fake.pid)["startedAt"].clone();
    type_line(&mut fake, "before clear");
    fake.wait_text("echo: before clear");
    let old = env.transcript(&sid).unwrap();
    let old_bytes = std::fs::read(&old).unwrap();

    type_line(&mut fake, "/clear");
    // The registry takes the new id at once, before any turn.
    let deadline = Instant::now() + Duration::from_secs(5);
    while registry_sid(&env, &fake) == sid {
        assert!(Instant::now() < deadline, "registry kept {sid}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let new_id = check_registry(&env, &fake);
    assert_ne!(new_id, sid);
    assert_eq!(env.registry(fake.pid)["startedAt"], started);
    // The screen is a fresh session: the old conversation is gone.
    let s = fake.wait_for("a cleared screen", |s| !s.contains("before clear"));
    assert!(s.contains("/clear"), "{s}");
    // As the real CLI: the new file holds the /clear command's records, no turn yet.
    let new_file = env.transcript(&new_id).unwrap();
    assert_eq!(new_file.parent(), old.parent());
    let recs = records(&new_file);
    assert!(recs.iter().all(|r| r["type"] != "assistant"));
    assert!(recs
        .iter()
        .any(|r| r["type"] == "system" && r["subtype"] == "local_command"));

    type_line(&mut fake, "after clear");
    fake.wait_text("echo: after clear");
    assert_eq!(registry_sid(&env, &fake), new_id);
    assert_eq!(
        std::fs::read(&old).unwrap(),
        old_bytes,
        "old transcript written"
    );
    let recs = records(&new_file);
    let users: Vec<_> = recs
        .iter()
        .filter(|r| r["type"] == "user" && r.get("isMeta").is_none())
        .map(|r| r["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 2);
    assert!(users[0].starts_with("<command-name>/clear</command-name>"));
    assert_eq!(users[1], "after clear");
    assert!(recs
        .iter()
        .filter_map(|r| r.get("sessionId"))
        .all(|s| s == new_id.as_str()));
    assert_eq!(transcript_files(&env).len(), 2);
}

#[test]
fn resume_command_switches_to_existing_conversation_and_appends() {
    let env = Env::new();
    env.trust(&env.proj);
    let (a, a_file) = session_with_turn(&env);
    let a_before = std::fs::read(&a_file).unwrap();

    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    let b = check_registry(&env, &fake);
    type_line(&mut fake, "in b");
    fake.wait_text("echo: in b");
    let b_file = env.transcript(&b).unwrap();
    let b_before = std::fs::read(&b_file).unwrap();

    type_line(&mut fake, &format!("/resume {a}"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while registry_sid(&env, &fake) != a {
        assert!(Instant::now() < deadline, "registry never switched to {a}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Same pid, same procStart, still idle.
    check_registry(&env, &fake);
    let s = fake.wait_for("A's conversation", |s| {
        s.contains("echo: first prompt") && !s.contains("echo: in b")
    });
    assert!(!s.contains("/resume"), "{s}");

    type_line(&mut fake, "after resume");
    fake.wait_text("echo: after resume");
    assert_eq!(registry_sid(&env, &fake), a);
    let a_after = std::fs::read(&a_file).unwrap();
    assert!(a_after.starts_with(&a_before) && a_after.len() > a_before.len());
    let last_user = records(&a_file)
        .into_iter()
        .rev()
        .find(|r| r["type"] == "user")
        .unwrap();
    assert_eq!(last_user["message"]["content"], "after resume");
    assert_eq!(last_user["sessionId"], a.as_str());
    assert_eq!(
        std::fs::read(&b_file).unwrap(),
        b_before,
        "B's file written"
    );
    assert_eq!(transcript_files(&env).len(), 2);
}

#[test]
fn resume_command_with_unknown_id_changes_nothing() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    let sid = check_registry(&env, &fake);
    type_line(&mut fake, "kept");
    fake.wait_text("echo: kept");
    let file = env.transcript(&sid).unwrap();
    let before = std::fs::read(&file).unwrap();
    let reg_before = std::fs::read(env.registry_file(fake.pid)).unwrap();

    let unknown = "6f1f2d3c-0000-4000-8000-000000000000";
    type_line(&mut fake, &format!("/resume {unknown}"));
    let s = fake.wait_text(&format!("Session {unknown} was not found."));
    assert!(s.contains("echo: kept"), "{s}");
    assert_eq!(
        std::fs::read(env.registry_file(fake.pid)).unwrap(),
        reg_before
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(transcript_files(&env), vec![file]);

    // Still the same conversation.
    type_line(&mut fake, "still here");
    fake.wait_text("echo: still here");
    assert_eq!(registry_sid(&env, &fake), sid);
}

#[test]
fn resume_picker_lists_other_conversations_and_enter_switches() {
    let env = Env::new();
    env.trust(&env.proj);
    let (a, a_file) = session_with_turn(&env);
    let a_before = std::fs::read(&a_file).unwrap();
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    let b = check_registry(&env, &fake);
    type_line(&mut fake, "in b");
    fake.wait_text("echo: in b");

    // Esc closes the picker and changes nothing.
    type_line(&mut fake, "/resume");
    let s = fake.wait_text("Resume session");
    assert!(s.contains("❯ first prompt"), "{s}");
    assert!(
        !s.contains("❯ in b"),
        "the current conversation is not listed: {s}"
    );
    fake.send(b"\x1b");
    fake.wait_for("the picker closed", |s| !s.contains("Resume session"));
    assert_eq!(registry_sid(&env, &fake), b);

    type_line(&mut fake, "/resume");
    fake.wait_text("Resume session");
    fake.send(ENTER);
    fake.wait_for("A's conversation", |s| {
        s.contains("echo: first prompt") && !s.contains("echo: in b")
    });
    assert_eq!(registry_sid(&env, &fake), a);
    type_line(&mut fake, "picked");
    fake.wait_text("echo: picked");
    let a_after = std::fs::read(&a_file).unwrap();
    assert!(a_after.starts_with(&a_before) && a_after.len() > a_before.len());
}

#[test]
fn version_flag() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fake-claude"))
        .arg("--version")
        .env("FAKE_CLAUDE_VERSION", "2.1.173")
        .env_remove("HOME")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "2.1.173 (Claude Code)"
    );
}
