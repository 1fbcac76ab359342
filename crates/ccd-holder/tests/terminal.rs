//! `holder.terminal`: a client hands its terminal to the holder, which
//! reads the keys and writes the output itself, and lets the terminal go
//! on the detach key or when the client hangs up. The "terminal" here is
//! a PTY pair: the test types into and reads from its master, as a
//! terminal emulator would; its slave is what `ccd attach` would hand over.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use ccd_holder::HolderClient;
use ccd_protocol::holder::TerminalParams;
use common::{start, wait_info, wait_screen, Env};
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(10);

/// A terminal: the master (the test's side) and the slave (the client's),
/// the slave in raw mode as `ccd attach` leaves it.
struct Term {
    master: std::fs::File,
    slave: OwnedFd,
}

impl Term {
    fn open() -> Term {
        let p = nix::pty::openpty(None, None).unwrap();
        let mut t = nix::sys::termios::tcgetattr(&p.slave).unwrap();
        nix::sys::termios::cfmakeraw(&mut t);
        nix::sys::termios::tcsetattr(&p.slave, nix::sys::termios::SetArg::TCSANOW, &t).unwrap();
        Term {
            master: p.master.into(),
            slave: p.slave,
        }
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
    }

    /// Reads the master until `needle` shows up; everything read.
    fn wait_output(&mut self, needle: &str) -> String {
        let end = Instant::now() + T;
        let mut seen = Vec::new();
        while Instant::now() < end {
            if readable(self.master.as_fd(), Duration::from_millis(100)) {
                let mut buf = [0u8; 65536];
                let n = self.master.read(&mut buf).unwrap();
                seen.extend_from_slice(&buf[..n]);
                if String::from_utf8_lossy(&seen).contains(needle) {
                    return String::from_utf8_lossy(&seen).into_owned();
                }
            }
        }
        panic!(
            "{needle:?} never reached the terminal; it got {:?}",
            String::from_utf8_lossy(&seen)
        );
    }

    /// What waits unread on the slave within `wait` (keys nobody took).
    fn unread_keys(&self, wait: Duration) -> Vec<u8> {
        let mut out = Vec::new();
        let end = Instant::now() + wait;
        while Instant::now() < end {
            if readable(self.slave.as_fd(), Duration::from_millis(50)) {
                let mut buf = [0u8; 256];
                let n = nix::unistd::read(&self.slave, &mut buf).unwrap();
                out.extend_from_slice(&buf[..n]);
            }
        }
        out
    }
}

fn readable(fd: std::os::fd::BorrowedFd<'_>, wait: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    poll(&mut [PollFd::new(fd, PollFlags::POLLIN)], timeout).is_ok_and(|n| n > 0)
}

/// A raw connection speaking the holder protocol line by line.
struct Conn {
    w: UnixStream,
    r: BufReader<UnixStream>,
}

impl Conn {
    fn connect(env: &Env) -> Conn {
        let s = UnixStream::connect(env.socket()).unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        Conn {
            w: s.try_clone().unwrap(),
            r: BufReader::new(s),
        }
    }

    fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.w.write_all(&line).unwrap();
    }

    /// Sends `v` with `fds` passed along (`SCM_RIGHTS`).
    fn send_passing(&mut self, v: Value, fds: &[std::os::fd::BorrowedFd<'_>]) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        let n = ccd_os::fdpass::send_with_fds(self.w.as_fd(), &line, fds).unwrap();
        self.w.write_all(&line[n..]).unwrap();
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.r.read_line(&mut line).unwrap() > 0, "connection ended");
        serde_json::from_str(&line).unwrap()
    }

    /// The reply with `id`, skipping the stream's notifications.
    fn reply(&mut self, id: i64) -> Value {
        loop {
            let v = self.next();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Attaches interactively; the stream offset of the first redraw.
    fn attach(&mut self) -> u64 {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "holder.attach",
            "params": {"mode": "interactive"}}));
        let r = self.reply(1);
        let resync = self.next();
        assert_eq!(resync["method"], "session.resync", "{resync}");
        assert_eq!(resync["params"]["seq"], r["result"]["seq"]);
        r["result"]["seq"].as_u64().unwrap()
    }

    fn hand_over(&mut self, term: &Term, drawn: u64) -> Value {
        self.hand_over_with(term, drawn, false)
    }

    /// [`Conn::hand_over`], asking for focus reports (`focus`).
    fn hand_over_with(&mut self, term: &Term, drawn: u64, focus: bool) -> Value {
        let params = TerminalParams {
            drawn,
            detach_key: 0x1c,
            focus,
        };
        self.send_passing(
            json!({"jsonrpc": "2.0", "id": 2, "method": "holder.terminal", "params": params}),
            &[term.slave.as_fd(), term.slave.as_fd()],
        );
        self.reply(2)
    }
}

/// A shell that says `ready`, then echoes each line it reads as `got:`.
fn echo_shell(env: &Env) -> ccd_holder::HolderConfig {
    env.sh("printf ready; while IFS= read -r x; do echo \"got:$x\"; done")
}

type Serve = std::thread::JoinHandle<anyhow::Result<ccd_holder::Outcome>>;

/// A holder running `cfg` (which prints `ready`), a terminal, and a
/// connection attached interactively; the first redraw's stream offset.
fn attached(env: &Env, cfg: ccd_holder::HolderConfig) -> (Serve, HolderClient, Term, Conn, u64) {
    let (serve, mut c) = start(cfg);
    wait_screen(&mut c, T, "ready");
    let term = Term::open();
    let mut conn = Conn::connect(env);
    let seq = conn.attach();
    (serve, c, term, conn, seq)
}

#[test]
fn a_handed_terminal_gets_the_output_and_gives_the_keys_until_the_detach_key() {
    let env = Env::new();
    let (_serve, mut c, mut term, mut conn, seq) = attached(&env, echo_shell(&env));
    let r = conn.hand_over(&term, seq);
    assert_eq!(r["result"]["redraw"], false, "{r}");

    // Keys typed into the terminal reach the child; its output comes back
    // to the terminal, not to the socket.
    term.type_keys(b"abc\r");
    term.wait_output("got:abc");
    wait_screen(&mut c, T, "got:abc");

    // The detach key (once, then nothing for the double-press time): the
    // holder lets the terminal go and says so.
    term.type_keys(b"\x1c");
    let released = conn.next();
    assert_eq!(released["method"], "holder.released", "{released}");
    assert_eq!(released["params"]["reason"], "detach_key");
    // Keys typed now stay in the terminal for whoever reads it next.
    term.type_keys(b"after");
    assert_eq!(term.unread_keys(Duration::from_millis(500)), b"after");
    // And the session is still served.
    let screen = c.screen(ccd_holder::ScreenFormat::Text).unwrap().text;
    assert!(!screen.contains("after"), "{screen}");
}

/// The next `holder.focus` on `conn` (skipping other lines): `focused`.
fn next_focus(conn: &mut Conn) -> bool {
    loop {
        let v = conn.next();
        if v["method"] == "holder.focus" {
            return v["params"]["focused"].as_bool().unwrap();
        }
    }
}

#[test]
fn focus_reports_are_told_to_the_client_and_reach_the_program_only_when_it_asked() {
    let env = Env::new();
    // A program that did not turn focus reporting on: a report, split
    // across two reads, is told to the client and is no key for it.
    let (_serve, _c, mut term, mut conn, seq) = attached(&env, echo_shell(&env));
    conn.hand_over_with(&term, seq, true);
    term.type_keys(b"a\x1b[");
    std::thread::sleep(Duration::from_millis(5));
    term.type_keys(b"Ib\r");
    assert!(next_focus(&mut conn));
    term.wait_output("got:ab\r");
    // Inside a bracketed paste it is pasted text, not a report.
    term.type_keys(b"\x1b[200~p\x1b[Oq\x1b[201~\r");
    term.wait_output("q\x1b[201~");
    term.type_keys(b"\x1b[O");
    assert!(!next_focus(&mut conn), "the paste's report was told");

    // A program that turned it on (`?1004h`) gets the reports as keys,
    // and the client is told all the same.
    let env = Env::new();
    let cfg = env
        .sh("printf '\\033[?1004h'; printf ready; while IFS= read -r x; do echo \"got:$x\"; done");
    let (_serve, _c, mut term, mut conn, seq) = attached(&env, cfg);
    conn.hand_over_with(&term, seq, true);
    term.type_keys(b"x\x1b[Oy\r");
    assert!(!next_focus(&mut conn));
    term.wait_output("got:x\x1b[Oy");

    // A client that did not ask: reports are keys, nothing is told.
    let env = Env::new();
    let (_serve, _c, mut term, mut conn, seq) = attached(&env, echo_shell(&env));
    conn.hand_over(&term, seq);
    term.type_keys(b"m\x1b[In\r");
    term.wait_output("got:m\x1b[In");
}

#[test]
fn a_client_that_hangs_up_gets_its_terminal_back_before_its_connection_ends() {
    let env = Env::new();
    let (_serve, mut c, mut term, mut conn, seq) = attached(&env, echo_shell(&env));
    conn.hand_over(&term, seq);
    term.type_keys(b"one\r");
    term.wait_output("got:one");

    // What `ccd attach` does on leaving: close its sending side and wait
    // for the end of the connection, which comes once the terminal is free.
    conn.w.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    conn.r.read_to_end(&mut rest).unwrap();
    term.type_keys(b"two");
    assert_eq!(term.unread_keys(Duration::from_millis(500)), b"two");
    wait_info(&mut c, T, "the client gone", |i| i.clients.is_empty());
}

#[test]
fn output_the_client_had_not_drawn_is_replaced_by_a_redraw() {
    let env = Env::new();
    let (_serve, _c, mut term, mut conn, seq) = attached(&env, echo_shell(&env));
    // The client says it drew less than the holder sent.
    let r = conn.hand_over(&term, seq.saturating_sub(1));
    assert_eq!(r["result"]["redraw"], true, "{r}");
    let out = term.wait_output("ready");
    assert!(out.starts_with("\x1b[H\x1b[2J"), "{out:?}");
}

#[test]
fn a_bad_hand_over_is_refused_and_the_connection_keeps_serving() {
    let env = Env::new();
    let (_serve, mut c) = start(echo_shell(&env));
    wait_screen(&mut c, T, "ready");
    let term = Term::open();
    let mut conn = Conn::connect(&env);
    let params = json!({"drawn": 0, "detach_key": 28});
    // Not attached yet.
    conn.send_passing(
        json!({"jsonrpc": "2.0", "id": 5, "method": "holder.terminal", "params": params}),
        &[term.slave.as_fd(), term.slave.as_fd()],
    );
    let r = conn.reply(5);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("attach"),
        "{r}"
    );
    let seq = conn.attach();
    // No descriptors with it.
    conn.send(json!({"jsonrpc": "2.0", "id": 6, "method": "holder.terminal", "params": params}));
    let r = conn.reply(6);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("descriptors"),
        "{r}"
    );
    // Descriptors that are no terminal.
    let (pr, pw) = nix::unistd::pipe().unwrap();
    conn.send_passing(
        json!({"jsonrpc": "2.0", "id": 7, "method": "holder.terminal", "params": params}),
        &[pr.as_fd(), pw.as_fd()],
    );
    let r = conn.reply(7);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("terminal"),
        "{r}"
    );
    // A detach key that is no control character.
    conn.send_passing(
        json!({"jsonrpc": "2.0", "id": 8, "method": "holder.terminal",
            "params": {"drawn": seq, "detach_key": 65}}),
        &[term.slave.as_fd(), term.slave.as_fd()],
    );
    let r = conn.reply(8);
    assert!(
        r["error"]["message"].as_str().unwrap().contains("control"),
        "{r}"
    );
    // The connection still works, and so does the session.
    conn.send(json!({"jsonrpc": "2.0", "id": 9, "method": "holder.input",
        "params": {"data": "eHl6DQ=="}}));
    assert_eq!(conn.reply(9)["result"]["ok"], true);
    wait_screen(&mut c, T, "got:xyz");
}

#[test]
fn a_terminal_that_does_not_drain_does_not_hold_the_release() {
    let env = Env::new();
    // A child that floods once it reads a line.
    let (_serve, mut c, mut term, mut conn, seq) = attached(
        &env,
        env.sh(
            "printf ready; read x; while :; do echo 0123456789012345678901234567890123456789; done",
        ),
    );
    conn.hand_over(&term, seq);
    term.type_keys(b"go\r");
    // Nobody reads the master: the terminal fills and the holder's writer
    // waits on it. The client leaves; its terminal comes back anyway.
    std::thread::sleep(Duration::from_millis(500));
    let left = Instant::now();
    conn.w.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    let _ = conn.r.read_to_end(&mut rest);
    assert!(
        left.elapsed() < Duration::from_secs(3),
        "the release waited {:?} on a stuck terminal",
        left.elapsed()
    );
    wait_info(&mut c, T, "the client gone", |i| i.clients.is_empty());
    // Keys typed now are not taken by the holder.
    term.type_keys(b"k");
    assert_eq!(term.unread_keys(Duration::from_millis(300)), b"k");
    let _ = c.kill(ccd_holder::KillSignal::Kill, None);
}

/// This process's open descriptors (`/dev/fd`: Linux and macOS both).
fn open_fds() -> usize {
    std::fs::read_dir("/dev/fd").unwrap().count()
}

#[test]
fn descriptors_passed_without_a_hand_over_are_bounded() {
    let env = Env::new();
    let (_serve, mut c) = start(echo_shell(&env));
    wait_screen(&mut c, T, "ready");
    let mut conn = Conn::connect(&env);
    let (pr, pw) = nix::unistd::pipe().unwrap();
    conn.send(json!({"jsonrpc": "2.0", "id": 0, "method": "holder.info"}));
    conn.reply(0);
    let before = open_fds();
    // Three descriptors with each of 20 requests that claim none: the
    // holder keeps the newest two (the kernel drops a message's third).
    for id in 1..=20 {
        conn.send_passing(
            json!({"jsonrpc": "2.0", "id": id, "method": "holder.info"}),
            &[pr.as_fd(), pw.as_fd(), pr.as_fd()],
        );
        assert!(conn.reply(id)["result"]["holder_pid"].is_number());
    }
    let grown = open_fds().saturating_sub(before);
    assert!(grown <= 2, "the holder keeps {grown} passed descriptors");
}
