//! The programs the contenders run: `ccd-bench __emit` (writes a stream to
//! its tty as fast as the tty takes it) and `ccd-bench __echo` (echoes each
//! byte it reads). Both put their tty in raw mode first, so the bytes on the
//! other side are exactly the bytes written (no `\n` → `\r\n`).
//!
//! Coordination is through files, the same for every contender: the
//! emitter touches `--ready-file` once its stream is generated, waits for
//! `--go-file`, writes, touches `--done-file`, then lingers (its screen
//! stays up) until killed or `--linger-secs` pass.

use super::stream::{generate, Kind};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug, Clone)]
pub struct EmitArgs {
    #[arg(long, value_enum)]
    pub kind: Kind,
    #[arg(long)]
    pub bytes: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 40)]
    pub rows: u16,
    #[arg(long, default_value_t = 120)]
    pub cols: u16,
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// Wait for this file before writing (at most 120 s).
    #[arg(long)]
    pub go_file: Option<PathBuf>,
    #[arg(long)]
    pub done_file: Option<PathBuf>,
    /// Write the stream again and again until this file exists (or
    /// `--loop-secs` pass): a sibling flood.
    #[arg(long)]
    pub stop_file: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub loop_secs: u64,
    /// Stay alive this long after writing (the screen stays up).
    #[arg(long, default_value_t = 0)]
    pub linger_secs: u64,
    /// Ignored arguments (e.g. what a wrapper passes along).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct EchoArgs {
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// Exit after this long (a bound in case nobody kills us).
    #[arg(long, default_value_t = 600)]
    pub max_secs: u64,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

fn raw_mode() {
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let stdin = std::io::stdin();
    if let Ok(mut t) = tcgetattr(stdin.as_fd()) {
        cfmakeraw(&mut t);
        let _ = tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &t);
    }
}

fn touch(p: &Option<PathBuf>) {
    if let Some(p) = p {
        let tmp = p.with_extension("tmp");
        let _ = std::fs::write(&tmp, b"");
        let _ = std::fs::rename(&tmp, p);
    }
}

fn wait_file(p: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !p.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(250));
    }
    true
}

/// Stdout, unbuffered: a duplicate of fd 1 (the same open file
/// description), closed on drop.
fn stdout_file() -> std::io::Result<std::fs::File> {
    Ok(std::fs::File::from(
        std::io::stdout().as_fd().try_clone_to_owned()?,
    ))
}

pub fn emit(a: &EmitArgs) -> anyhow::Result<()> {
    raw_mode();
    let data = generate(a.kind, a.bytes, a.seed, a.rows, a.cols);
    touch(&a.ready_file);
    if let Some(go) = &a.go_file {
        anyhow::ensure!(wait_file(go, Duration::from_secs(120)), "no go signal");
    }
    let mut out = stdout_file()?;
    let t0 = Instant::now();
    loop {
        for chunk in data.chunks(64 * 1024) {
            out.write_all(chunk)?;
        }
        let more = a.stop_file.as_ref().is_some_and(|s| !s.exists())
            && t0.elapsed() < Duration::from_secs(a.loop_secs);
        if !more {
            break;
        }
    }
    touch(&a.done_file);
    if a.linger_secs > 0 {
        let deadline = Instant::now() + Duration::from_secs(a.linger_secs);
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            if a.stop_file.as_ref().is_some_and(|s| s.exists()) {
                break;
            }
        }
    }
    Ok(())
}

/// Byte `b` comes back as a two-byte UTF-8 letter (U+00C0 + b % 32) and a
/// carriage return: unmistakable in any terminal output (no escape
/// sequence contains it), and it never scrolls the screen.
pub fn echo_reply(b: u8) -> [u8; 3] {
    [0xc3, 0x80 + (b % 32), b'\r']
}

pub fn echo(a: &EchoArgs) -> anyhow::Result<()> {
    raw_mode();
    touch(&a.ready_file);
    let deadline = Instant::now() + Duration::from_secs(a.max_secs);
    let mut input = std::io::stdin().lock();
    let mut out = stdout_file()?;
    let mut b = [0u8; 1];
    while Instant::now() < deadline {
        match input.read(&mut b) {
            Ok(1) => out.write_all(&echo_reply(b[0]))?,
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    Ok(())
}
