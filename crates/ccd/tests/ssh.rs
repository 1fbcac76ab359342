//! `--host ssh://…`: the same commands and the same API on another machine
//! over a real `sshd` on 127.0.0.1 (a throwaway user whose home is a temp
//! dir, the fake claude as its `claude`; see `common/sshd.rs`).

mod common;

use common::sshd::{sshd_or_skip, SshHost};
use common::{wait_for, Sandbox};
use serde_json::Value;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn json_rows(out: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
        .as_array()
        .cloned()
        .unwrap()
}

/// `ccd --host <host> new --detach --cwd <dir there>`; the session id.
fn remote_new(host: &SshHost, sb: &Sandbox, name: &str) -> String {
    let dir = host.project(name);
    let url = host.url();
    let o = sb.run(&[
        "--host",
        &url,
        "new",
        "--detach",
        "--cwd",
        dir.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "remote new failed: {}\nsshd log:\n{}",
        String::from_utf8_lossy(&o.stderr),
        host.sshd_log()
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn new_ls_send_and_screen_on_another_machine() {
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let label = url.trim_start_matches("ssh://").to_string();
    let here = sb.new_session("here");
    let there = remote_new(&host, &sb, "there");
    assert_eq!(there.len(), 36, "{there}");

    // The remote session lives under the throwaway user's own ~/.claude.
    wait_for(T, "the remote registry entry", || {
        std::fs::read_dir(host.claude_dir().join("sessions"))
            .ok()?
            .next()
            .map(|_| ())
    });
    assert!(
        !sb.config.join("sessions").exists()
            || std::fs::read_dir(sb.config.join("sessions"))
                .unwrap()
                .flatten()
                .all(|e| !std::fs::read_to_string(e.path())
                    .unwrap_or_default()
                    .contains(&there))
    );

    // One host: every row says which.
    let rows = json_rows(&sb.ok(&["--host", &url, "ls", "--json"]));
    assert!(
        rows.iter().any(|r| r["session_id"] == there.as_str()),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r["host"] == label.as_str()), "{rows:?}");
    assert!(!rows.iter().any(|r| r["session_id"] == here.as_str()));

    // Merged with this machine's.
    let rows = json_rows(&sb.ok(&["--host", "local", "--host", &url, "ls", "--json"]));
    let row = |sid: &str| rows.iter().find(|r| r["session_id"] == sid).cloned();
    assert_eq!(row(&here).expect("local row")["host"], "local");
    let r = row(&there).expect("remote row");
    assert_eq!(r["host"], label.as_str());
    assert!(r["ccd"]["holder"].is_string(), "held there: {r}");
    // Local-only listing: `host` is there too.
    let rows = json_rows(&sb.ok(&["ls", "--json"]));
    assert!(rows.iter().all(|r| r["host"] == "local"), "{rows:?}");
    // The table has a HOST column.
    let table = sb.ok(&["--host", "local", "--host", &url, "ls"]);
    assert!(table.starts_with("HOST"), "{table}");
    assert!(
        table.contains(&label) && table.contains(&there[..8]),
        "{table}"
    );

    // send and screen.
    let o = sb.run(&["--host", &url, "send", &there, "hello from afar"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait_for(T, "the echo on the remote screen", || {
        let s = sb.ok(&["--host", &url, "screen", &there[..8]]);
        s.contains("echo: hello from afar").then_some(())
    });
    // The same id is not known here.
    let o = sb.run(&["screen", &there]);
    assert!(!o.status.success());

    // An unreachable host is reported and does not hide the others.
    let o = sb.run(&[
        "--host",
        "local",
        "--host",
        &url,
        "--host",
        "ssh://nobody@127.0.0.1:1",
        "ls",
        "--json",
    ]);
    assert!(!o.status.success());
    let rows = json_rows(&String::from_utf8_lossy(&o.stdout));
    assert!(rows.iter().any(|r| r["session_id"] == here.as_str()));
    assert!(rows.iter().any(|r| r["session_id"] == there.as_str()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("host nobody@127.0.0.1:1"), "{err}");

    // Named hosts from the config file, and $CCD_HOST.
    std::fs::write(
        sb.tmp.path().join("ccd.toml"),
        format!("[hosts]\nbox = \"{url}\"\n"),
    )
    .unwrap();
    let rows = json_rows(&sb.ok(&["--host", "box", "ls", "--json"]));
    assert!(rows.iter().all(|r| r["host"] == "box"), "{rows:?}");
    let o = sb
        .cmd(&["screen", &there])
        .env("CCD_HOST", "box")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = sb.run(&["--host", "nosuch", "ls"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown host \"nosuch\""));

    // Stopping the remote daemon works through --host too.
    let o = sb.run(&["--host", &url, "daemon", "stop", "--kill-sessions"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_remote_without_ccd_is_one_clear_message() {
    let Some(host) = sshd_or_skip() else { return };
    let sb = host.sandbox();
    let url = host.url();
    let o = sb.run(&["--host", &url, "--remote-ccd", "ccd-not-installed", "ls"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`ccd-not-installed` was not found on the remote machine"),
        "{err}"
    );
    assert!(err.contains("--remote-ccd"), "{err}");
    let o = sb.run(&[
        "--host",
        &url,
        "--remote-ccd",
        "ccd-not-installed",
        "screen",
        "x",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was not found on the remote machine"), "{err}");
    // With the right path in the config it works.
    std::fs::write(
        sb.tmp.path().join("ccd.toml"),
        format!("remote_ccd = \"{}/bin/ccd\"\n", host.home.display()),
    )
    .unwrap();
    let o = sb.run(&["--host", &url, "ls", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
