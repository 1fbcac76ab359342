//! A program under a PTY the bench owns, read with timeouts; a background
//! collector for floods; the shared measurement loops (flood through a PTY
//! client, keystroke echo).

use super::child::echo_reply;
use anyhow::Context;
use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ROWS: u16 = 40;
pub const COLS: u16 = 120;

pub type Env = Vec<(String, String)>;

/// A process under a PTY of ours.
pub struct PtyProc {
    _master: Box<dyn MasterPty + Send>,
    child: Box<dyn Child + Send + Sync>,
    /// Held, never used: dropping it would send EOF to the slave.
    _writer: Box<dyn Write + Send>,
    fd: Arc<OwnedFd>,
    pub pid: u32,
}

impl PtyProc {
    pub fn spawn(prog: &Path, args: &[String], env: &Env) -> anyhow::Result<Self> {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| anyhow::anyhow!("openpty: {e}"))?;
        let mut cmd = CommandBuilder::new(prog);
        cmd.args(args);
        cmd.env_remove("XDG_RUNTIME_DIR");
        cmd.env_remove("TMUX");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.env("TERM", "xterm-256color");
        if let Some((_, home)) = env.iter().find(|(k, _)| k == "HOME") {
            cmd.cwd(home);
        }
        let child = pty
            .slave
            .spawn_command(cmd)
            .map_err(|e| anyhow::anyhow!("spawn {}: {e}", prog.display()))?;
        drop(pty.slave);
        let fd = ccd_holder::spawn::master_fd(&*pty.master).context("master fd")?;
        let writer = pty
            .master
            .take_writer()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let pid = child.process_id().unwrap_or(0);
        Ok(Self {
            _master: pty.master,
            child,
            _writer: writer,
            fd: Arc::new(fd),
            pid,
        })
    }

    /// One read, waiting at most `timeout`: `None` on timeout, `Some(0)`
    /// at end of stream (EOF or EIO once the slave side is gone).
    pub fn read_timeout(&self, buf: &mut [u8], timeout: Duration) -> Option<usize> {
        read_timeout(&self.fd, buf, timeout)
    }

    /// Reads in a thread until stopped or end of stream.
    pub fn collector(&self, keep: bool) -> Collector {
        Collector::start(self.fd.clone(), keep)
    }

    /// Waits at most `limit` for the process to end by itself; true if it did.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGHUP, then SIGKILL if still there after `grace`.
    pub fn kill(&mut self, grace: Duration) {
        let _ = self.child.kill();
        if self.wait_exit(grace) {
            return;
        }
        if self.pid > 0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
    }
}

impl Drop for PtyProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill(Duration::from_millis(500));
        }
    }
}

pub fn read_timeout(fd: &OwnedFd, buf: &mut [u8], timeout: Duration) -> Option<usize> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    match poll(
        &mut fds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    ) {
        Ok(0) => return None,
        Ok(_) => {}
        Err(nix::errno::Errno::EINTR) => return None,
        Err(_) => return Some(0),
    }
    match nix::unistd::read(fd, buf) {
        Ok(n) => Some(n),
        Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => None,
        Err(_) => Some(0),
    }
}

#[derive(Default)]
struct Collected {
    data: Vec<u8>,
    bytes: u64,
    last: Option<Instant>,
    eof: bool,
}

/// A thread draining a PTY master, keeping (or only counting) the bytes.
pub struct Collector {
    state: Arc<Mutex<Collected>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Collector {
    fn start(fd: Arc<OwnedFd>, keep: bool) -> Self {
        let state = Arc::new(Mutex::new(Collected::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (state.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 256 * 1024];
            while !st.load(Ordering::Relaxed) {
                match read_timeout(&fd, &mut buf, Duration::from_millis(50)) {
                    None => continue,
                    Some(0) => {
                        s.lock().unwrap().eof = true;
                        break;
                    }
                    Some(n) => {
                        let now = Instant::now();
                        let mut g = s.lock().unwrap();
                        if keep {
                            g.data.extend_from_slice(&buf[..n]);
                        }
                        g.bytes += n as u64;
                        g.last = Some(now);
                    }
                }
            }
        });
        Self {
            state,
            stop,
            thread: Some(thread),
        }
    }

    pub fn bytes(&self) -> u64 {
        self.state.lock().unwrap().bytes
    }

    pub fn last(&self) -> Option<Instant> {
        self.state.lock().unwrap().last
    }

    pub fn eof(&self) -> bool {
        self.state.lock().unwrap().eof
    }

    /// Waits until nothing arrived for `quiet` (or end of stream), at most `limit`.
    pub fn settle(&self, quiet: Duration, limit: Duration) {
        let deadline = Instant::now() + limit;
        let start = Instant::now();
        while Instant::now() < deadline {
            let (last, eof) = {
                let g = self.state.lock().unwrap();
                (g.last, g.eof)
            };
            if eof || last.unwrap_or(start).elapsed() >= quiet {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the thread; returns the bytes kept and the last byte's time.
    pub fn finish(mut self) -> (Vec<u8>, Option<Instant>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut g = self.state.lock().unwrap();
        (std::mem::take(&mut g.data), g.last)
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Creates `p` (atomically).
pub fn touch(p: &Path) -> std::io::Result<()> {
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, b"")?;
    std::fs::rename(&tmp, p)
}

pub fn wait_file(p: &Path, limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !p.exists() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "timed out waiting for {}",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// What a flood through a PTY client delivered.
pub struct PtyFlood {
    /// Everything the client's PTY delivered (preamble included).
    pub data: Vec<u8>,
    /// Bytes delivered before the go signal (the client's first draw).
    pub preamble: usize,
    /// Go → last byte.
    pub elapsed: Duration,
    pub timed_out: bool,
}

/// The common flood protocol for a PTY client: wait for the emitter to be
/// ready and the client's first draw to settle, give the go, read until
/// the emitter is done and the client has been quiet for `quiet`.
pub fn flood_through(
    client: &PtyProc,
    ready: &Path,
    go: &Path,
    done: &Path,
    limit: Duration,
) -> anyhow::Result<PtyFlood> {
    let quiet = Duration::from_millis(700);
    let col = client.collector(true);
    wait_file(ready, Duration::from_secs(60))?;
    col.settle(Duration::from_millis(300), Duration::from_secs(10));
    let preamble = col.bytes() as usize;
    let t0 = Instant::now();
    touch(go)?;
    let deadline = t0 + limit;
    let mut timed_out = false;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if Instant::now() > deadline {
            timed_out = true;
            break;
        }
        if col.eof() {
            break;
        }
        if done.exists() && col.last().is_some_and(|l| l.elapsed() >= quiet && l > t0) {
            break;
        }
    }
    let (data, last) = col.finish();
    let elapsed = last
        .map(|l| l.saturating_duration_since(t0))
        .unwrap_or_default();
    Ok(PtyFlood {
        data,
        preamble,
        elapsed,
        timed_out,
    })
}

/// Keystroke → echo round trips.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Latency {
    pub samples: usize,
    pub timeouts: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Every sample, sorted (for pooling rounds; not reported).
    #[serde(skip)]
    pub all: Vec<Duration>,
}

impl Latency {
    pub fn from(mut d: Vec<Duration>, timeouts: usize) -> Self {
        d.sort();
        if d.is_empty() {
            return Self {
                timeouts,
                ..Self::default()
            };
        }
        let ms = |x: Duration| x.as_secs_f64() * 1e3;
        let q = |f: f64| ms(crate::stats::nearest_rank(&d, f));
        Self {
            samples: d.len(),
            timeouts,
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p99_ms: q(0.99),
            max_ms: ms(d[d.len() - 1]),
            all: d,
        }
    }

    /// The figures of every sample of `parts` together.
    pub fn pooled<'a>(parts: impl IntoIterator<Item = &'a Latency>) -> Self {
        let (mut all, mut timeouts) = (Vec::new(), 0);
        for p in parts {
            all.extend_from_slice(&p.all);
            timeouts += p.timeouts;
        }
        Self::from(all, timeouts)
    }
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `n` samples (after 20 warm-ups): send one byte, wait for its echo.
/// `send` writes the byte; `recv` appends whatever arrives within the
/// timeout (returns false on end of stream).
pub fn echo_loop(
    n: usize,
    send: &mut dyn FnMut(u8) -> anyhow::Result<()>,
    recv: &mut dyn FnMut(&mut Vec<u8>, Duration) -> bool,
) -> anyhow::Result<Latency> {
    let mut lat = Vec::with_capacity(n);
    let mut timeouts = 0;
    let mut buf = Vec::with_capacity(4096);
    // Drain whatever is pending.
    while recv(&mut buf, Duration::from_millis(100)) && !buf.is_empty() {
        buf.clear();
    }
    for i in 0..n + 20 {
        let b = b'a' + (i % 26) as u8;
        let want = &echo_reply(b)[..2];
        buf.clear();
        let t0 = Instant::now();
        send(b)?;
        let deadline = t0 + Duration::from_secs(2);
        let mut ok = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let from = buf.len().saturating_sub(1);
            if !recv(&mut buf, deadline - now) {
                break;
            }
            if contains(&buf[from..], want) {
                ok = true;
                break;
            }
        }
        let took = t0.elapsed();
        ECHO_TRACE.record(t0, took, None);
        if i >= 20 {
            if ok {
                lat.push(took);
            } else {
                timeouts += 1;
            }
        }
        anyhow::ensure!(timeouts < 20, "echo: {timeouts} timeouts");
        // Keystrokes are not back to back: leave a typing gap, draining.
        let gap = Instant::now() + Duration::from_millis(2);
        while Instant::now() < gap {
            let left = gap.saturating_duration_since(Instant::now());
            buf.clear();
            if !recv(&mut buf, left) {
                break;
            }
        }
    }
    Ok(Latency::from(lat, timeouts))
}

/// Where every timed sample of one kind is appended, once `start`ed
/// (`--echo-trace`, `--attach-trace`): one line each, its start on
/// CLOCK_MONOTONIC in seconds, its latency in ms and, for attach, its
/// contender.
pub struct SampleTrace(std::sync::OnceLock<TraceFile>);

struct TraceFile {
    file: Mutex<std::fs::File>,
    /// An instant and the CLOCK_MONOTONIC reading taken with it, to place
    /// each sample's `Instant` on that clock.
    base: Instant,
    base_secs: f64,
}

pub static ECHO_TRACE: SampleTrace = SampleTrace(std::sync::OnceLock::new());
pub static ATTACH_TRACE: SampleTrace = SampleTrace(std::sync::OnceLock::new());

impl SampleTrace {
    /// Append to `path` from now on; a second call keeps the first file.
    pub fn start(&self, path: &Path) -> anyhow::Result<()> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("open {}", path.display()))?;
        let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)?;
        let _ = self.0.set(TraceFile {
            file: Mutex::new(f),
            base: Instant::now(),
            base_secs: now.tv_sec() as f64 + now.tv_nsec() as f64 / 1e9,
        });
        Ok(())
    }

    /// One sample, if this kind is traced.
    pub fn record(&self, t0: Instant, took: Duration, label: Option<&str>) {
        if let Some(t) = self.0.get() {
            let start = t.base_secs + t0.saturating_duration_since(t.base).as_secs_f64();
            let ms = took.as_secs_f64() * 1e3;
            let mut f = t.file.lock().unwrap_or_else(|p| p.into_inner());
            let _ = match label {
                Some(l) => writeln!(f, "{start:.6} {ms:.6} {l}"),
                None => writeln!(f, "{start:.6} {ms:.6}"),
            };
        }
    }
}

/// Echo latency through a PTY client (raw, tmux, dtach, `ccd attach`).
pub fn echo_pty(p: &mut PtyProc, n: usize) -> anyhow::Result<Latency> {
    let fd = p.fd.clone();
    let wfd = p.fd.clone();
    let mut send = |b: u8| -> anyhow::Result<()> {
        let k = nix::unistd::write(wfd.as_fd(), &[b])?;
        anyhow::ensure!(k == 1, "short write");
        Ok(())
    };
    let mut tmp = vec![0u8; 64 * 1024];
    let mut recv = |buf: &mut Vec<u8>, t: Duration| -> bool {
        match read_timeout(&fd, &mut tmp, t) {
            None => true,
            Some(0) => false,
            Some(k) => {
                buf.extend_from_slice(&tmp[..k]);
                true
            }
        }
    };
    echo_loop(n, &mut send, &mut recv)
}

/// Reads until `screen`'s contents equal `want` (or `limit`); returns when.
pub fn until_screen(
    p: &PtyProc,
    screen: &mut ccd_screen::Screen,
    want: &str,
    limit: Duration,
) -> Option<Instant> {
    let deadline = Instant::now() + limit;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        match p.read_timeout(&mut buf, deadline - now) {
            None => continue,
            Some(0) => return None,
            Some(n) => {
                screen.process(&buf[..n]);
                if screen.contents() == want {
                    return Some(Instant::now());
                }
            }
        }
    }
}
