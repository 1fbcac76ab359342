//! `ccd notify` against a real desktop: its own `dbus-daemon` session bus
//! (an address in a temp dir: the machine's bus is never touched), a real
//! notification server (dunst under Xvfb) and the fake claude's permission
//! dialog. The notification arrives with its text and its actions (dunst
//! lists them in its context menu, driven by `dunstctl context` through a
//! `dmenu` script that picks one), Approve on it approves the prompt it
//! names, and an Approve on a prompt answered meanwhile is refused, which
//! a follow-up notification says; a prompt answered elsewhere (`ccd
//! approve`), and one whose session ended, is taken off the desktop
//! (`CloseNotification`), here and from another machine. The desktop and
//! `ccd notify` on it are `common/desk.rs`'s.
//!
//! Without dunst, Xvfb or dbus-daemon the tests fail when `$CI` is set
//! (`.ci/run` installs them) and are skipped, saying so, otherwise.

mod common;

use common::desk::{desk_or_skip, notifier, notifier_with, sandbox};
use common::{wait_for, Sandbox};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn wait_screen(sb: &Sandbox, sid: &str, needle: &str) {
    wait_for(T, &format!("{needle:?} on the screen"), || {
        sb.ok(&["screen", sid]).contains(needle).then_some(())
    });
}

/// Writes `text` as the sandbox's config file (`CCD_CONFIG`).
fn write_config(sb: &Sandbox, text: &str) {
    let (_, config) = sb
        .env
        .iter()
        .find(|(k, _)| k == "CCD_CONFIG")
        .expect("the sandbox names its config file");
    std::fs::write(config, text).unwrap();
}

#[test]
fn a_prompt_is_notified_with_its_command_and_approved_from_the_notification() {
    let Some(desk) = desk_or_skip() else { return };
    let sb = sandbox(&desk);
    let sid = sb.new_session("notified");
    let n = notifier(&sb, &desk);
    assert!(n.stderr().contains("with actions"), "{}", n.stderr());

    sb.ok(&["send", &sid, "perm touch approved.txt"]);
    let line = desk.wait_shown(&["notified asks for permission", "touch approved.txt"]);
    assert!(
        line.contains("notified on "),
        "the folder and machine: {line}"
    );

    desk.invoke("Approve");
    let menu = desk.menu();
    for action in ["#Approve ", "#Deny ", "#Open "] {
        assert!(menu.contains(action), "{action} offered: {menu}");
    }
    wait_screen(&sb, &sid, "echo: perm touch approved.txt");
    assert!(
        !desk.shown().contains("not approved"),
        "no refusal: {}",
        desk.shown()
    );
    drop(n);
}

#[test]
fn an_action_on_a_prompt_answered_meanwhile_is_refused_and_says_so() {
    let Some(desk) = desk_or_skip() else { return };
    let sb = sandbox(&desk);
    let sid = sb.new_session("stale");
    let n = notifier(&sb, &desk);

    sb.ok(&["send", &sid, "perm touch first.txt"]);
    desk.wait_shown(&["stale asks for permission", "touch first.txt"]);
    // Answered elsewhere (the terminal), then a second dialog shows: the
    // notification's prompt id is no longer the one on the screen. `ccd
    // notify` is stopped meanwhile, so the first notification is not
    // taken back before the person picks Approve on it (the race a
    // withdrawal cannot close: an action already on its way).
    let notify_pid = nix::unistd::Pid::from_raw(i32::try_from(n.child.id()).unwrap());
    nix::sys::signal::kill(notify_pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    sb.ok_stderr(&["deny", &sid]);
    wait_screen(&sb, &sid, "User rejected");
    sb.ok(&["send", &sid, "perm touch second.txt"]);
    wait_screen(&sb, &sid, "Do you want");
    wait_screen(&sb, &sid, "touch second.txt");
    let before = sb.ok(&["screen", &sid]);

    // Approve on the first notification: refused, nothing typed.
    std::fs::write(desk.dir.join("menu.log"), "").unwrap();
    std::fs::write(desk.dir.join("pick"), "Approve").unwrap();
    // The first notification's line in the menu names its summary and
    // dunst id; pick exactly it.
    let first_id = desk
        .shown()
        .lines()
        .find(|l| l.contains("touch first.txt"))
        .and_then(|l| l.split('|').next().map(str::to_string))
        .unwrap();
    std::fs::write(
        desk.dir.join("pick.sh"),
        format!(
            "#!/bin/sh\ncat >> {menu}\ngrep -m1 \"^#Approve .*\\[{first_id},approve\\]\" {menu} || true\n",
            menu = desk.dir.join("menu.log").display()
        ),
    )
    .unwrap();
    // dunst's ActionInvoked is on its way to the stopped `ccd notify`
    // (seen on the bus) before it runs again.
    let seen = desk.dir.join("signals.log");
    let mut monitor = std::process::Command::new("dbus-monitor")
        .args([
            "--address",
            &desk.bus,
            "type='signal',member='ActionInvoked'",
        ])
        .stdout(std::fs::File::create(&seen).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for(T, "dbus-monitor listening", || {
        std::fs::read_to_string(&seen)
            .ok()
            .filter(|s| s.contains("NameAcquired"))
    });
    assert!(desk.dunstctl(&["context"]));
    wait_for(T, "dunst's ActionInvoked", || {
        std::fs::read_to_string(&seen)
            .ok()
            .filter(|s| s.contains("member=ActionInvoked"))
    });
    let _ = monitor.kill();
    let _ = monitor.wait();
    nix::sys::signal::kill(notify_pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let refusal = desk.wait_shown(&["stale: not approved"]);
    assert!(
        refusal.contains("answered meanwhile") && refusal.contains("nothing was typed"),
        "says why: {refusal}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        sb.ok(&["screen", &sid]),
        before,
        "a refused answer typed nothing"
    );
    assert!(!sb
        .ok(&["screen", &sid])
        .contains("echo: perm touch first.txt"));
    desk.wait_shown(&["stale asks for permission", "touch second.txt"]);
    drop(n);
}

#[test]
fn a_prompt_answered_elsewhere_or_whose_session_ended_is_taken_off_the_desktop() {
    let Some(desk) = desk_or_skip() else { return };
    let sb = sandbox(&desk);
    write_config(
        &sb,
        "[notify]\nreasons = [\"permission\", \"question\"]\nquiet_secs = 0\n",
    );
    let sid = sb.new_session("withdrawn");
    let n = notifier(&sb, &desk);
    sb.ok(&["send", &sid, "perm touch answered.txt"]);
    desk.wait_shown(&["withdrawn asks for permission", "touch answered.txt"]);
    desk.wait_displayed(1);
    // Answered with `ccd approve` (session.respond): off the screen, into
    // dunst's history (closed, not lost).
    sb.ok(&["approve", &sid]);
    wait_screen(&sb, &sid, "echo: perm touch answered.txt");
    desk.wait_displayed(0);
    assert_eq!(desk.count("history"), Some(1));
    // The session ends with its dialog open: taken back too.
    sb.ok(&["send", &sid, "perm touch ended.txt"]);
    desk.wait_shown(&["withdrawn asks for permission", "touch ended.txt"]);
    desk.wait_displayed(1);
    sb.ok(&["kill", &sid]);
    desk.wait_displayed(0);
    assert_eq!(desk.count("history"), Some(2));
    drop(n);
}

#[test]
fn open_runs_attach_in_the_terminal() {
    let Some(desk) = desk_or_skip() else { return };
    let sb = sandbox(&desk);
    let sid = sb.new_session("opened");
    // A "terminal" that records what it was asked to run.
    let args = desk.dir.join("terminal.args");
    let term = desk.dir.join("term.sh");
    std::fs::write(
        &term,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n", args.display()),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&term).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&term, perm).unwrap();
    let n = notifier_with(&sb, &desk, &[("TERMINAL", term.to_str().unwrap())], &[]);
    sb.ok(&["send", &sid, "perm touch opened.txt"]);
    desk.wait_shown(&["opened asks for permission"]);
    desk.invoke("Open");
    let got = wait_for(T, "the terminal started", || {
        std::fs::read_to_string(&args)
            .ok()
            .filter(|s| !s.is_empty())
    });
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(got[0], "-e", "{got:?}");
    assert!(got[1].ends_with("ccd"), "{got:?}");
    assert_eq!(&got[got.len() - 2..], ["attach", sid.as_str()], "{got:?}");
    drop(n);
}

#[test]
fn a_prompt_on_another_machine_is_notified_and_answered_there_and_a_cut_link_comes_back() {
    let Some(desk) = desk_or_skip() else { return };
    let near = sandbox(&desk);
    let far = sandbox(&desk);
    let sid = far.new_session("faraway");
    let ssh = near.stand_in_ssh_to(&far);
    let n = notifier_with(
        &near,
        &desk,
        &[("CCD_SSH_COMMAND", ssh.to_str().unwrap())],
        &["--host", "local", "--host", "ssh://far"],
    );
    let deadline = std::time::Instant::now() + T;
    while n.stderr().matches(": connected").count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "both machines connected: {}",
            n.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    far.ok(&["send", &sid, "perm touch far.txt"]);
    let line = desk.wait_shown(&["faraway asks for permission", "touch far.txt"]);
    assert!(line.contains(" on far"), "the machine named: {line}");
    desk.invoke("Approve");
    wait_screen(&far, &sid, "echo: perm touch far.txt");

    // The link cut (its ssh killed): said once, connected again, and a
    // new prompt there notified.
    let dial: Vec<u32> = ccd_testkit::procs::children(n.child.id())
        .into_iter()
        .filter(|&(p, _)| {
            String::from_utf8_lossy(&ccd_testkit::procs::cmdline(p)).contains("dial-stdio")
        })
        .map(|(p, _)| p)
        .collect();
    assert_eq!(dial.len(), 1, "one link to far: {dial:?}");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(dial[0]).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_for(T, "far connected again", || {
        (n.stderr().matches("far: connected").count() >= 2).then_some(())
    });
    let err = n.stderr();
    assert_eq!(err.matches("far: connection lost").count(), 1, "{err}");
    far.ok(&["send", &sid, "perm touch again.txt"]);
    let deadline = std::time::Instant::now() + T;
    while !desk.shown().contains("touch again.txt") {
        assert!(
            std::time::Instant::now() < deadline,
            "the prompt after the cut notified: {}\n{}",
            desk.shown(),
            n.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Answered on that machine: taken off this desktop.
    desk.wait_displayed(1);
    far.ok(&["approve", &sid]);
    desk.wait_displayed(0);
    drop(n);
}

/// The real CLI (both pinned versions, offline against `ccd-mock-api`):
/// its Bash permission prompt is notified with the command, and Approve
/// on the notification runs it.
#[test]
fn real_cli_a_bash_prompt_is_notified_with_its_command_and_approved_from_the_notification() {
    use common::real::{self, MockUsage};
    let Some(desk) = desk_or_skip() else { return };
    for version in real::versions() {
        let Some((_mock, mut sb)) = real::setup(&version, MockUsage::SMALL) else {
            continue;
        };
        // Its daemon reaches no session bus (set before it starts).
        let none = format!("unix:path={}", desk.dir.join("no-bus").display());
        sb.env.push(("DBUS_SESSION_BUS_ADDRESS".into(), none));
        let dir = sb.project("asked");
        let mut args = vec!["new", "--detach", "--cwd", dir.to_str().unwrap(), "--"];
        if !version.starts_with("2.1.1") {
            args.extend(["--permission-mode", "manual"]);
        }
        let sid = sb.ok(&args).trim().to_string();
        let n = notifier(&sb, &desk);
        sb.ok(&["send", &sid, "TOOL:echo approved > approved.txt"]);
        let line = desk.wait_shown(&["asked asks for permission", "echo approved > approved.txt"]);
        assert!(line.contains("Bash"), "[{version}] the tool: {line}");
        desk.invoke("Approve");
        let made = dir.join("approved.txt");
        wait_for(Duration::from_secs(60), "approved.txt", || {
            std::fs::read_to_string(&made)
                .ok()
                .filter(|t| t.trim() == "approved")
        });
        drop(n);
        assert!(desk.dunstctl(&["close-all"]));
        std::fs::write(desk.dir.join("shown.log"), "").unwrap();
        eprintln!("[{version}] a real prompt approved from its notification");
    }
}

#[test]
fn without_a_session_bus_ccd_notify_says_so_and_exits() {
    // No desktop needed: the bus named is a path where nothing listens.
    let sb = Sandbox::new();
    let none = format!("unix:path={}", sb.tmp.path().join("no-bus").display());
    let started = std::time::Instant::now();
    let out = sb
        .cmd(&["notify"])
        .env("DBUS_SESSION_BUS_ADDRESS", &none)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no desktop to notify on") && err.contains("no D-Bus session bus"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "said at once");
}

#[test]
fn the_notify_table_of_the_config_decides_what_is_shown() {
    let Some(desk) = desk_or_skip() else { return };
    let sb = sandbox(&desk);
    // Exits only, at once (no quiet delay).
    write_config(&sb, "[notify]\nreasons = [\"exited\"]\nquiet_secs = 0\n");
    let sid = sb.new_session("configured");
    let n = notifier(&sb, &desk);
    sb.ok(&["send", &sid, "perm touch never.txt"]);
    wait_screen(&sb, &sid, "touch never.txt");
    sb.ok(&["kill", &sid]);
    desk.wait_shown(&["configured exited"]);
    assert!(
        !desk.shown().contains("asks for permission"),
        "permission is not among the reasons: {}",
        desk.shown()
    );
    drop(n);
}
