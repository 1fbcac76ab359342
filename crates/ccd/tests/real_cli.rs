//! End to end against the REAL Claude Code CLI, offline (DESIGN.md §4):
//! each pinned version (`tests/real-cli/versions`) is installed into a cache
//! outside the repo by `tests/real-cli/install.sh`, talks to `ccd-mock-api`
//! on loopback, and runs under ccd in a sandbox (temp HOME, config dir,
//! TMPDIR). Versions run side by side, one thread each.
//!
//! When the CLI cannot be installed: with `$CI` set the test fails; else it
//! prints "SKIPPED: …" and passes.

mod common;

use common::real::{self, MockApi, MockUsage};
use common::{ls_json, wait_for, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(60);

/// What a failure should show: ccd's logs, the session's screen, and the
/// requests the mock saw.
fn evidence(sb: &Sandbox, mock: &MockApi, sid: Option<&str>) -> String {
    let screen = sid
        .map(|s| {
            let o = sb.run(&["screen", s]);
            String::from_utf8_lossy(&o.stdout).into_owned()
        })
        .unwrap_or_default();
    format!(
        "--- screen:\n{screen}\n--- mock requests:\n{}\n--- ccd logs:\n{}",
        mock.summary(),
        sb.logs()
    )
}

fn assistant_usage(transcript: &std::path::Path) -> Option<(Value, String)> {
    let text = std::fs::read_to_string(transcript).ok()?;
    let r = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "assistant")?;
    let words: String = r["message"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    Some((r["message"]["usage"].clone(), words))
}

fn one_version(version: &str) {
    let Some(claude) = real::claude_or_skip(version) else {
        return;
    };
    let started = Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix("ccd-mock")
        .tempdir()
        .unwrap();
    let usage = MockUsage {
        input: 1234,
        cache_creation: 2345,
        cache_read: 3456,
        output: 77,
    };
    let mock = MockApi::start(scratch.path(), usage);
    let sb = real::sandbox(&mock, &claude, version);
    let proj = sb.project("untrusted-proj");

    // New session in an untrusted folder: ccd must pass the trust dialog,
    // whichever option is the default in this version.
    let out = sb.run(&["new", "--detach", "--cwd", proj.to_str().unwrap()]);
    let sid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && sid.len() >= 8,
        "[{version}] ccd new failed: {}\nstdout: {sid}\n{}",
        String::from_utf8_lossy(&out.stderr),
        evidence(&sb, &mock, None)
    );
    let entry = wait_for(T, "the registry entry", || {
        real::registry_entries(&sb)
            .into_iter()
            .find(|e| e["sessionId"] == sid.as_str())
    });
    let pid = entry["pid"].as_u64().expect("pid in the registry entry");
    assert_eq!(entry["version"], version, "[{version}] {entry}");
    let claude_json: Value =
        serde_json::from_slice(&std::fs::read(sb.config.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(
        claude_json["projects"][proj.to_str().unwrap()]["hasTrustDialogAccepted"],
        true,
        "[{version}] trust not recorded"
    );

    // A turn, sent with `ccd send` the moment `ccd new` has returned: ccd
    // reports ready only once the prompt takes a submitted line (on
    // 2.1.332 under load, a line typed as soon as the registry entry
    // appears is taken as text: docs/claude-cli-compat.md).
    let sent = sb.run(&["send", &sid, "hello real cli"]);
    assert!(
        sent.status.success(),
        "[{version}] ccd send failed: {}\n{}",
        String::from_utf8_lossy(&sent.stderr),
        evidence(&sb, &mock, Some(&sid))
    );
    let deadline = Instant::now() + T;
    let (got_usage, words) = loop {
        let transcript =
            ccd_claude::transcript::find_by_session_id(&sb.config.join("projects"), &sid);
        if let Some(u) = transcript.as_deref().and_then(assistant_usage) {
            break u;
        }
        assert!(
            Instant::now() < deadline,
            "[{version}] no assistant record in the transcript ({transcript:?})\n{}",
            evidence(&sb, &mock, Some(&sid))
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(words, "ACK: hello real cli", "[{version}]");
    assert_eq!(got_usage["input_tokens"], usage.input, "[{version}]");
    assert_eq!(
        got_usage["cache_creation_input_tokens"], usage.cache_creation,
        "[{version}]"
    );
    assert_eq!(
        got_usage["cache_read_input_tokens"], usage.cache_read,
        "[{version}]"
    );
    let screen = String::from_utf8_lossy(&sb.run(&["screen", &sid]).stdout).into_owned();
    assert!(
        screen.contains("ACK: hello real cli"),
        "[{version}] reply not on screen:\n{screen}"
    );

    // ccd ls: live, with the context in use from the last assistant record.
    let deadline = Instant::now() + T;
    loop {
        let rows = ls_json(&sb);
        let row = rows.iter().find(|r| r["session_id"] == sid.as_str());
        if let Some(r) = row {
            if r["state"] == "live" && r["context_tokens"] == usage.context_tokens() {
                assert_eq!(r["pid"], pid, "[{version}] {r}");
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "[{version}] ls never showed the session live with context_tokens {}: {row:#?}",
            usage.context_tokens()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // ccd kill: the process ends and removes its registry entry.
    sb.ok(&["kill", &sid]);
    wait_for(T, "the registry entry to go", || {
        (!sb.config
            .join("sessions")
            .join(format!("{pid}.json"))
            .exists())
        .then_some(())
    });
    wait_for(T, "the process to end", || {
        (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    });
    let rows = ls_json(&sb);
    assert!(
        rows.iter()
            .all(|r| r["session_id"] != sid.as_str() || r["state"] != "live"),
        "[{version}] still live after kill: {rows:#?}"
    );

    let reqs = mock.requests();
    assert!(
        reqs.iter().any(|r| r["kind"] == "messages-stream"),
        "[{version}] no streamed message request:\n{}",
        mock.summary()
    );
    assert!(
        reqs.iter().all(|r| r["kind"] != "bad-json"),
        "[{version}] the mock refused a request:\n{}",
        mock.summary()
    );
    eprintln!(
        "[{version}] ok in {:.1}s; requests seen by the mock:\n{}",
        started.elapsed().as_secs_f64(),
        mock.summary()
    );
}

#[test]
fn real_cli_new_send_ls_kill_for_each_pinned_version() {
    each_version();
}

fn each_version() {
    let versions = real::versions();
    assert!(
        versions.len() >= 2 || std::env::var_os("CCD_REAL_CLI_VERSIONS").is_some(),
        "pin at least two versions"
    );
    let handles: Vec<_> = versions
        .into_iter()
        .map(|v| {
            std::thread::Builder::new()
                .name(format!("real-cli-{v}"))
                .spawn(move || one_version(&v))
                .unwrap()
        })
        .collect();
    let failed: Vec<String> = handles
        .into_iter()
        .filter_map(|h| {
            let name = h.thread().name().unwrap_or("?").to_string();
            h.join().err().map(|_| name)
        })
        .collect();
    assert!(
        failed.is_empty(),
        "failed: {failed:?} (see the panics above)"
    );
}
