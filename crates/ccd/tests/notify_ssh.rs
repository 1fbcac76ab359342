//! `ccd notify --host ssh://…` over the real `sshd` of the `--host` tests
//! (`common/sshd.rs`: a throwaway user whose home is a temp dir, the fake
//! claude as its `claude`) on this machine's desktop (`common/desk.rs`:
//! its own `dbus-daemon` session bus and dunst under Xvfb): the held
//! session there asks for permission, the notification here names it, its
//! machine and the command, and Approve from dunst's context menu answers
//! it on that machine.
//!
//! Needs root and `openssh-server`, and dbus-daemon, dunst and Xvfb: a
//! missing one skips the test, saying so, or fails it under `$CI`.

mod common;

use common::desk::{desk_or_skip, notifier_with};
use common::sshd::sshd_or_skip;
use common::{wait_for, Sandbox};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

#[test]
fn a_prompt_on_a_machine_behind_a_real_sshd_is_notified_here_and_approved_there() {
    let Some(desk) = desk_or_skip() else { return };
    let Some(host) = sshd_or_skip() else { return };
    let url = host.url();
    // This machine's ccd reaches the host through the real ssh; its own
    // daemon reaches no session bus (its desktop sink stays off the test's).
    let none = format!("unix:path={}", desk.dir.join("no-bus").display());
    let sb = Sandbox::with_env(&[
        ("CCD_SSH_COMMAND", host.ssh_command().as_str()),
        ("DBUS_SESSION_BUS_ADDRESS", none.as_str()),
    ]);
    let dir = host.project("notifythere");
    let o = sb.run(&[
        "--host",
        &url,
        "new",
        "--detach",
        "--cwd",
        dir.to_str().expect("UTF-8"),
    ]);
    assert!(
        o.status.success(),
        "remote new failed: {}\nsshd log:\n{}",
        String::from_utf8_lossy(&o.stderr),
        host.sshd_log()
    );
    let there = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let screen = || sb.ok(&["--host", &url, "screen", &there]);

    let n = notifier_with(&sb, &desk, &[("TERMINAL", "")], &["--host", &url]);
    let err = n.stderr();
    assert!(err.contains("with actions"), "{err}");

    sb.ok(&["--host", &url, "send", &there, "perm touch remote.txt"]);
    let line = desk.wait_shown(&["notifythere asks for permission", "touch remote.txt"]);
    let label = url.trim_start_matches("ssh://");
    assert!(
        line.contains(&format!(" on {label}")),
        "the machine named: {line}"
    );
    assert!(
        !screen().contains("echo: perm touch remote.txt"),
        "not answered before the action"
    );

    desk.invoke("Approve");
    let menu = desk.menu();
    for action in ["#Approve ", "#Deny ", "#Open "] {
        assert!(menu.contains(action), "{action} offered: {menu}");
    }
    wait_for(T, "the approved turn there", || {
        screen()
            .contains("echo: perm touch remote.txt")
            .then_some(())
    });
    assert!(
        !desk.shown().contains("not approved"),
        "no refusal: {}\n{}",
        desk.shown(),
        n.stderr()
    );
    drop(n);
}
