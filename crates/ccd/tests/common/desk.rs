//! The desktop of the `ccd notify` tests (`notify_desktop.rs`,
//! `notify_ssh.rs`): Xvfb, a `dbus-daemon` session bus at an address in a
//! temp dir (the machine's bus is never touched) and dunst, each started
//! here and ended by pid on drop; dunst's shown notifications logged by a
//! script and its context menu driven by `dunstctl context` through a
//! `dmenu` script that picks one action, as a person would. `ccd notify`
//! itself runs on that bus with its stderr in a file.
//!
//! Without dunst, Xvfb or dbus-daemon the tests fail when `$CI` is set
//! (`.ci/run` installs them) and are skipped, saying so, otherwise.

use super::{wait_for, Sandbox};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// Xvfb, a session bus and dunst, each started here (ended by pid on
/// drop).
pub struct Desk {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub display: String,
    pub bus: String,
    children: Vec<Child>,
}

impl Drop for Desk {
    fn drop(&mut self) {
        for c in self.children.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// The desktop, or `None` (skipped, said) when a program is missing
/// outside CI.
pub fn desk_or_skip() -> Option<Desk> {
    let missing: Vec<&str> = [
        "Xvfb",
        "dbus-daemon",
        "dunst",
        "dunstctl",
        "dbus-send",
        "dbus-monitor",
    ]
    .into_iter()
    .filter(|p| !on_path(p))
    .collect();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs {missing:?} for the desktop notification tests (Debian: dbus, dunst, xvfb)"
        );
        eprintln!("SKIPPED: no {missing:?} (Debian packages dbus, dunst, xvfb)");
        return None;
    }
    let tmp = tempfile::Builder::new()
        .prefix("ccd-desk")
        .tempdir()
        .unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let mut desk = Desk {
        _tmp: tmp,
        dir: dir.clone(),
        display: String::new(),
        bus: format!("unix:path={}", dir.join("bus").display()),
        children: Vec::new(),
    };
    // Xvfb picks a free display and writes its number on stdout.
    let mut xvfb = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-nolisten",
            "tcp",
            "-screen",
            "0",
            "800x600x24",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = xvfb.stdout.take().unwrap();
    desk.children.push(xvfb);
    let mut number = String::new();
    {
        use std::io::Read;
        let mut b = [0u8; 1];
        while out.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
            number.push(b[0] as char);
        }
    }
    assert!(!number.trim().is_empty(), "Xvfb gave no display");
    desk.display = format!(":{}", number.trim());
    let bus = Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--nopidfile"])
        .arg(format!("--address={}", desk.bus))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    desk.children.push(bus);
    wait_for(T, "the session bus", || {
        dir.join("bus").exists().then_some(())
    });

    // dunst: notifications stay until closed; each shown one is logged by
    // a script; its context menu goes to a "dmenu" that picks the line
    // holding the word in `pick` (and keeps what it was offered).
    let script = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&p, perm).unwrap();
        p
    };
    let shown = script(
        "shown.sh",
        &format!(
            "printf '%s|%s|%s\\n' \"$DUNST_ID\" \"$DUNST_SUMMARY\" \"$(printf %s \"$DUNST_BODY\" | tr '\\n' ' ')\" >> {}",
            dir.join("shown.log").display()
        ),
    );
    let pick = script(
        "pick.sh",
        &format!(
            "cat >> {menu}\ngrep -m1 \"^#$(cat {pick}) \" {menu} || true",
            menu = dir.join("menu.log").display(),
            pick = dir.join("pick").display()
        ),
    );
    std::fs::write(
        dir.join("dunstrc"),
        format!(
            "[global]\n    dmenu = {}\n[urgency_low]\n    timeout = 0\n[urgency_normal]\n    timeout = 0\n[urgency_critical]\n    timeout = 0\n[log]\n    appname = *\n    script = {}\n",
            pick.display(),
            shown.display()
        ),
    )
    .unwrap();
    let dunst = Command::new("dunst")
        .arg("-config")
        .arg(dir.join("dunstrc"))
        .env("DISPLAY", &desk.display)
        .env("DBUS_SESSION_BUS_ADDRESS", &desk.bus)
        .env("HOME", &dir)
        .env("XDG_CONFIG_HOME", &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    desk.children.push(dunst);
    wait_for(T, "dunst on the bus", || {
        desk.dunstctl(&["count"]).then_some(())
    });
    Some(desk)
}

impl Desk {
    pub fn dunstctl(&self, args: &[&str]) -> bool {
        Command::new("dunstctl")
            .args(args)
            .env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// `dunstctl count <which>` (`displayed`, `history`, `waiting`).
    pub fn count(&self, which: &str) -> Option<u32> {
        let out = Command::new("dunstctl")
            .args(["count", which])
            .env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }

    /// Waits until dunst displays `n` notifications.
    pub fn wait_displayed(&self, n: u32) {
        wait_for(T, &format!("{n} notification(s) displayed"), || {
            (self.count("displayed") == Some(n)).then_some(())
        });
    }

    pub fn shown(&self) -> String {
        std::fs::read_to_string(self.dir.join("shown.log")).unwrap_or_default()
    }

    pub fn menu(&self) -> String {
        std::fs::read_to_string(self.dir.join("menu.log")).unwrap_or_default()
    }

    /// Picks the action labelled `label` from dunst's context menu, as a
    /// person would.
    pub fn invoke(&self, label: &str) {
        std::fs::write(self.dir.join("menu.log"), "").unwrap();
        std::fs::write(self.dir.join("pick"), label).unwrap();
        assert!(self.dunstctl(&["context"]), "dunstctl context failed");
        // dunst runs its menu on a thread of its own: wait for it.
        wait_for(T, "dunst's context menu", || {
            (!self.menu().is_empty()).then_some(())
        });
    }

    /// Waits for a shown notification whose line holds every `needle`.
    pub fn wait_shown(&self, needles: &[&str]) -> String {
        wait_for(T, &format!("a notification with {needles:?}"), || {
            self.shown()
                .lines()
                .find(|l| needles.iter().all(|n| l.contains(n)))
                .map(str::to_string)
        })
    }
}

/// `ccd notify` for `sb`'s machine on `desk`'s bus, its stderr in a file.
pub struct Notifier {
    pub child: Child,
    err: PathBuf,
}

impl Drop for Notifier {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn notifier(sb: &Sandbox, desk: &Desk) -> Notifier {
    notifier_with(sb, desk, &[("TERMINAL", "")], &[])
}

/// [`notifier`] with more environment and arguments.
pub fn notifier_with(sb: &Sandbox, desk: &Desk, env: &[(&str, &str)], args: &[&str]) -> Notifier {
    let err = desk.dir.join("notify.err");
    let mut argv = args.to_vec();
    argv.push("notify");
    let mut cmd = sb.cmd(&argv);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .env("DBUS_SESSION_BUS_ADDRESS", &desk.bus)
        .env("DISPLAY", &desk.display)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let n = Notifier { child, err };
    wait_for(T, "ccd notify connected", || {
        n.stderr().contains(": connected").then_some(())
    });
    n
}

impl Notifier {
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }
}

/// A sandbox whose daemon reaches no session bus (its own desktop sink,
/// if any, stays off this test's bus).
pub fn sandbox(desk: &Desk) -> Sandbox {
    let none = format!("unix:path={}", desk.dir.join("no-bus").display());
    Sandbox::with_env(&[("DBUS_SESSION_BUS_ADDRESS", none.as_str())])
}
