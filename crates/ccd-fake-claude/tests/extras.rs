//! Less central behaviours: PTY hang-up, crash, the API key dialog, paste and flood.

mod common;

use std::num::NonZeroU16;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, Fake};

/// Kills the child if the test fails before it exits.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0 as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[test]
fn closing_the_pty_exits_0_and_cleans_up() {
    let env = Env::new();
    env.trust(&env.proj);
    let ws = nix::pty::Winsize {
        ws_row: common::ROWS,
        ws_col: common::COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(&ws, None).unwrap();
    let slave = pty.slave;
    // The child must not inherit the master, or closing ours would not hang up its terminal.
    nix::fcntl::fcntl(
        &pty.master,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-claude"));
    cmd.current_dir(&env.proj)
        .env_clear()
        .env("TERM", "xterm-256color")
        .env("HOME", &env.home)
        .env("CLAUDE_CONFIG_DIR", &env.config)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave.try_clone().unwrap()));
    #[allow(unsafe_code)]
    // reason: the child needs the PTY as its controlling terminal (setsid, TIOCSCTTY); std has no such spawn
    // SAFETY: only async-signal-safe calls between fork and exec (setsid,
    // ioctl: system calls without locks or allocation), on fd 0, the
    // slave the child was given.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let _guard = KillOnDrop(child.id());
    drop(slave);
    let mut parser = vt100::Parser::new(
        NonZeroU16::new(common::ROWS).unwrap(),
        NonZeroU16::new(common::COLS).unwrap(),
        0,
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 65536];
    while !parser.screen().contents().contains("auto mode on") {
        assert!(Instant::now() < deadline, "no prompt");
        let mut fds = [nix::poll::PollFd::new(
            pty.master.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(50u16)).unwrap();
        if let Ok(n) = nix::unistd::read(pty.master.as_fd(), &mut buf) {
            parser.process(&buf[..n]);
        }
    }
    let pid = child.id();
    assert!(env.registry_file(pid).exists());
    drop(pty.master);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!env.registry_file(pid).exists());
}

#[test]
fn crash_leaves_registry_behind() {
    let env = Env::new();
    env.trust(&env.proj);
    let vars = [("FAKE_CLAUDE_CRASH_AFTER_MS", "300")];
    let mut fake = Fake::spawn(&env, &env.proj, &[], &vars);
    fake.wait_prompt();
    assert_eq!(fake.wait_exit().exit_code(), 3);
    assert!(env.registry_file(fake.pid).exists());
}

#[test]
fn api_key_dialog_after_trust() {
    let env = Env::new();
    let vars = [
        ("FAKE_CLAUDE_API_KEY_DIALOG", "1"),
        ("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdefghijklmnop"),
    ];
    let mut fake = Fake::spawn(&env, &env.proj, &[], &vars);
    fake.wait_text("❯ No, exit");
    fake.press_until(b"\x1b[B", "❯ Yes, I trust this folder");
    fake.send(b"\r");
    let s = fake.wait_text("Detected a custom API key in your environment");
    assert!(s.contains("Do you want to use this API key?"));
    assert!(s.contains("1. Yes"));
    assert!(s.contains("❯ 2. No (recommended)"));
    // Registered right after trust, before this dialog is answered.
    assert!(env.registry_file(fake.pid).exists());
    fake.press_until(b"\r", "auto mode on");
    fake.wait_prompt();
}

#[test]
fn paste_is_inserted_and_backspace_edits() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    fake.send(b"\x1b[200~pasted text\x1b[201~!x");
    fake.wait_text("❯ pasted text!x");
    fake.send(b"\x7f");
    fake.wait_for("backspace", |s| {
        s.contains("❯ pasted text!") && !s.contains("text!x")
    });
    fake.send(b"\r");
    fake.wait_text("echo: pasted text!");
}

#[test]
fn flood_prints_bytes_then_replies() {
    let env = Env::new();
    env.trust(&env.proj);
    let mut fake = Fake::spawn(&env, &env.proj, &[], &[]);
    fake.wait_prompt();
    fake.send(b"flood 200000\r");
    fake.wait_text("echo: flood 200000");
    fake.wait_prompt();
}
