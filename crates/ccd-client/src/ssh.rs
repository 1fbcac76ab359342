//! A ccd on another machine, reached through the system `ssh`.
//!
//! [`connect`] runs `ssh -T [-p port] [user@]host -- <remote ccd> dial-stdio`
//! with its stdin and stdout on one end of a socket pair; the other end is
//! an ordinary [`Client`] connection, so the same JSON-RPC (`hello`, typed
//! calls, notifications, a stream through the daemon) goes over it. On the
//! remote machine `ccd dial-stdio` bridges those bytes to the remote user's
//! own daemon socket (starting that daemon if needed). Nothing listens
//! anywhere new: ssh authenticates, the remote daemon checks its peer's uid
//! as for any local client.
//!
//! ssh's stderr and the terminal stay the user's: a password, passphrase or
//! host-key question reaches them (`-T` only refuses a remote tty; keys and
//! resizes of an attachment go through the protocol). Because a person may
//! be typing a password, connecting and `hello` may take
//! [`SSH_CONNECT_TIMEOUT`] rather than the local 3 s; once the first bytes
//! of the answer have come (ssh has authenticated), the rest must come
//! within [`HELLO_REST`], and every read of it is bounded by that deadline
//! (a remote trickling a byte a second cannot hold the client). A
//! [`Remote::batch`] connection (the dashboard's: ssh may ask nothing,
//! `-o BatchMode=yes` after the whole ssh command) waits at most
//! [`BATCH_CONNECT_TIMEOUT`]. A remote that ends
//! before answering is explained from ssh's exit status ([`RemoteError`]):
//! 127 is a remote without `ccd` on its PATH, 255 ssh's own failure.
//!
//! The ssh process is owned by the connection: when the connection's reader
//! is dropped, ssh is sent SIGTERM and reaped ([`SshProcess`]).

use crate::client::{Client, ClientError};
use std::ffi::OsString;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Connecting through ssh and `hello`: long enough for a person to answer
/// a password or host-key prompt; ssh's own `ConnectTimeout` may be shorter.
pub const SSH_CONNECT_TIMEOUT: Duration = Duration::from_secs(120);

/// Connecting through ssh in `BatchMode` and `hello` ([`Remote::batch`]):
/// nobody types anything, so only the network and the remote daemon's
/// start are waited for.
pub const BATCH_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Once the first bytes of the answer to `hello` have come through ssh,
/// the rest of it within this (ssh has authenticated: nobody is typing).
pub const HELLO_REST: Duration = crate::deadline::CALL_TIMEOUT;

/// Where a remote ccd is: `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    /// A host name, an address, or an alias of `~/.ssh/config`.
    pub host: String,
    pub port: Option<u16>,
}

/// A host string that is not `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid host {given:?}: {why} (expected ssh://[user@]host[:port])")]
pub struct BadTarget {
    pub given: String,
    pub why: &'static str,
}

impl std::str::FromStr for SshTarget {
    type Err = BadTarget;

    fn from_str(s: &str) -> Result<Self, BadTarget> {
        let bad = |why| BadTarget {
            given: s.to_string(),
            why,
        };
        let rest = s
            .strip_prefix("ssh://")
            .ok_or_else(|| bad("only ssh:// is supported"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (host, port) = match hostport.strip_prefix('[') {
            // [v6]:port
            Some(v6) => {
                let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
                match after.strip_prefix(':') {
                    Some(p) => (h, Some(p)),
                    None if after.is_empty() => (h, None),
                    None => return Err(bad("junk after ]")),
                }
            }
            None => match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            },
        };
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
            ),
            None => None,
        };
        // Neither may be read by ssh as an option, nor hold what a shell
        // or ssh's own parsing would split.
        let safe = |t: &str| {
            !t.is_empty()
                && !t.starts_with('-')
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-:%".contains(c) || !c.is_ascii())
                && !t.chars().any(char::is_control)
        };
        if !safe(host) {
            return Err(bad(
                "the host name is empty or holds characters ssh would misread",
            ));
        }
        if let Some(u) = user {
            if !safe(u) || u.contains(':') {
                return Err(bad(
                    "the user name is empty or holds characters ssh would misread",
                ));
            }
        }
        Ok(Self {
            user: user.map(String::from),
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for SshTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// Where ssh's stderr goes. Its questions (passwords, host keys) go to
/// the terminal itself (`/dev/tty`), whichever this is.
#[derive(Clone, Default)]
pub enum StderrSink {
    /// Straight to this process's stderr.
    #[default]
    Inherit,
    /// Line by line to a function (the CLI makes each line safe to print:
    /// it is the remote's text).
    Lines(LineFn),
}

/// A receiver of ssh's stderr lines.
pub type LineFn = std::sync::Arc<dyn Fn(&[u8]) + Send + Sync>;

impl std::fmt::Debug for StderrSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StderrSink::Inherit => "Inherit",
            StderrSink::Lines(_) => "Lines",
        })
    }
}

/// At most this much of one stderr line is kept (the rest is dropped).
const STDERR_LINE_MAX: usize = 4096;

/// How to reach a remote ccd.
#[derive(Debug, Clone)]
pub struct Remote {
    pub target: SshTarget,
    /// The name shown for it (a configured name, else the target).
    pub label: String,
    /// The ssh program and options before ours (`["ssh"]`, or e.g.
    /// `["ssh", "-F", "/path/config"]`).
    pub ssh: Vec<OsString>,
    /// The remote ccd: a name looked up on the remote PATH, or a path.
    pub remote_ccd: String,
    /// Where ssh's stderr goes.
    pub stderr: StderrSink,
    /// ssh may ask nothing (nobody could answer: the dashboard):
    /// `-o BatchMode=yes` after the whole ssh command
    /// ([`Remote::command_line`]), and `hello` within
    /// [`BATCH_CONNECT_TIMEOUT`].
    pub batch: bool,
}

impl Remote {
    /// The full ssh command line (program first): the ssh command's own
    /// words (all of them: `$CCD_SSH_COMMAND` may be several, or a
    /// wrapper's), then ours, the options first.
    pub fn command_line(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = if self.ssh.is_empty() {
            vec!["ssh".into()]
        } else {
            self.ssh.clone()
        };
        if self.batch {
            v.push("-o".into());
            v.push("BatchMode=yes".into());
        }
        v.push("-T".into());
        if let Some(p) = self.target.port {
            v.push("-p".into());
            v.push(p.to_string().into());
        }
        v.push(match &self.target.user {
            Some(u) => format!("{u}@{}", self.target.host).into(),
            None => self.target.host.clone().into(),
        });
        v.push("--".into());
        // The remote side joins these words and hands them to the user's
        // shell there: quote the path.
        v.push(shell_quote(&self.remote_ccd).into());
        v.push("dial-stdio".into());
        v
    }

    /// How long connecting and `hello` may take before the answer's first
    /// bytes: [`SSH_CONNECT_TIMEOUT`], or [`BATCH_CONNECT_TIMEOUT`] in
    /// `BatchMode`.
    pub fn hello_within(&self) -> Duration {
        if self.batch {
            BATCH_CONNECT_TIMEOUT
        } else {
            SSH_CONNECT_TIMEOUT
        }
    }
}

/// The punctuation a remote ccd's path may hold besides letters, digits
/// and spaces: none of it is syntax to sh, bash, zsh, fish, csh or tcsh
/// inside or outside single quotes.
pub const REMOTE_CCD_PUNCTUATION: &str = "/._-+,=@%:";

/// A `remote_ccd` (`--remote-ccd`, a host entry's or the config's) that a
/// remote login shell could read as more than a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRemoteCcd {
    #[error("the remote ccd is empty")]
    Empty,
    #[error("the remote ccd {value} starts with '-' (it would be read as an option)")]
    Dash { value: String },
    #[error("the remote ccd {value} holds {what} at character {at}: only ASCII letters, digits, spaces, `{REMOTE_CCD_PUNCTUATION}` and a leading `~/` are accepted, since ssh hands the command to the remote login shell (sh, fish, csh…) and each reads other characters as its own syntax")]
    Char {
        /// The value, escaped for a terminal (`{:?}`).
        value: String,
        /// The offending character, escaped (`'$'`, `'\n'`, `U+202E`).
        what: String,
        /// Its position (1-based, in characters).
        at: usize,
    },
}

/// Checks a remote ccd path against the conservative set every login
/// shell reads as plain words ([`REMOTE_CCD_PUNCTUATION`]; the quotes,
/// backslash, `$`, backquote, `;&|<>()`, `*?[]{}`, `!`, `#`, `~` but a
/// leading `~/`, and every control are refused: fish and csh quote and
/// expand unlike POSIX shells, so no quoting of them is safe everywhere).
pub fn check_remote_ccd(s: &str) -> Result<(), BadRemoteCcd> {
    if s.is_empty() {
        return Err(BadRemoteCcd::Empty);
    }
    let value = format!("{s:?}");
    if s.starts_with('-') {
        return Err(BadRemoteCcd::Dash { value });
    }
    let body = s.strip_prefix("~/").unwrap_or(s);
    let skipped = s.len() - body.len();
    for (i, c) in body.chars().enumerate() {
        let ok = c.is_ascii_alphanumeric() || c == ' ' || REMOTE_CCD_PUNCTUATION.contains(c);
        if !ok {
            let what = if c.is_ascii_graphic() || c == ' ' {
                format!("{c:?}")
            } else {
                format!("{c:?} (U+{:04X})", c as u32)
            };
            return Err(BadRemoteCcd::Char {
                value,
                what,
                at: skipped + i + 1,
            });
        }
    }
    Ok(())
}

/// `s` as one word for the remote login shell: unchanged when it holds
/// no space, else in single quotes (a leading `~/` left outside for the
/// shell to expand). For a value [`check_remote_ccd`] accepts, this reads
/// the same in sh, bash, zsh, fish, csh and tcsh (no quote, backslash or
/// `!` can be inside the quotes).
pub fn shell_quote(s: &str) -> String {
    if !s.contains(' ') {
        return s.to_string();
    }
    match s.strip_prefix("~/") {
        Some(rest) => format!("~/'{rest}'"),
        None => format!("'{s}'"),
    }
}

/// Why a remote ccd could not be reached (ssh ended before `hello` was
/// answered).
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The remote shell found no such command (ssh exited 127).
    #[error("{host}: `{remote_ccd}` was not found on the remote machine (ssh exited 127; the remote shell's message is above). Install ccd there, or name its path with --remote-ccd PATH or `remote_ccd` in the config file")]
    NoCcd { host: String, remote_ccd: String },
    /// ssh itself failed: unreachable, refused, authentication (exit 255).
    #[error("{host}: ssh could not connect (exit 255; ssh's message is above)")]
    Ssh { host: String },
    /// ssh could not be run here.
    #[error("{host}: cannot run {program:?}: {source}")]
    Spawn {
        host: String,
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The remote command ended otherwise.
    #[error("{host}: `{command}` ended before answering ({status})")]
    Ended {
        host: String,
        command: String,
        status: String,
    },
    /// The remote ccd's path holds what a remote shell could misread
    /// (nothing was run).
    #[error("{host}: {source}; nothing was run")]
    BadRemoteCcd {
        host: String,
        #[source]
        source: BadRemoteCcd,
    },
    /// The remote ccd speaks no protocol version this one does.
    #[error("{host}: the ccd there speaks another protocol version ({message}): install the same ccd version on both machines")]
    Version { host: String, message: String },
}

/// The ssh process under a connection: SIGTERM and reaped when dropped.
#[derive(Debug)]
pub struct SshProcess {
    child: Mutex<Child>,
    /// The thread passing its stderr on ([`StderrSink::Lines`]).
    stderr: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl SshProcess {
    pub fn pid(&self) -> u32 {
        self.child.lock().map(|c| c.id()).unwrap_or(0)
    }

    /// Its exit status once it has ended, waiting at most `within` (and
    /// for what it wrote on stderr to be passed on, so that it comes
    /// before the caller's own message).
    fn status_within(&self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + within;
        loop {
            if let Ok(Some(s)) = self.child.lock().ok()?.try_wait() {
                let relay = self.stderr.lock().ok().and_then(|mut h| h.take());
                if let Some(h) = relay {
                    while !h.is_finished() && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                return Some(s);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long an ssh ended with SIGTERM has before SIGKILL (a stopped ssh
/// never handles SIGTERM).
const SSH_TERM_GRACE: Duration = Duration::from_millis(500);

impl Drop for SshProcess {
    fn drop(&mut self) {
        let Ok(child) = self.child.get_mut() else {
            return;
        };
        if let Ok(None) = child.try_wait() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            let until = Instant::now() + SSH_TERM_GRACE;
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
        }
        let _ = child.wait();
    }
}

/// Connects to the ccd of `remote` through ssh and says `hello` as
/// `client_name`. Failures before the answer are [`RemoteError`]s inside
/// [`ClientError::Remote`].
pub fn connect(remote: &Remote, client_name: &str) -> Result<Client, ClientError> {
    check_remote_ccd(&remote.remote_ccd).map_err(|source| {
        ClientError::Remote(RemoteError::BadRemoteCcd {
            host: remote.label.clone(),
            source,
        })
    })?;
    let (ours, theirs) = UnixStream::pair()?;
    let line = remote.command_line();
    let program = line[0].clone();
    let mut cmd = Command::new(&program);
    cmd.args(&line[1..])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs.try_clone()?)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(match remote.stderr {
            StderrSink::Inherit => Stdio::inherit(),
            StderrSink::Lines(_) => Stdio::piped(),
        });
    tracing::debug!(host = %remote.label, command = ?line, "connecting through ssh");
    let mut child = cmd.spawn().map_err(|source| {
        ClientError::Remote(RemoteError::Spawn {
            host: remote.label.clone(),
            program: program.to_string_lossy().into_owned(),
            source,
        })
    })?;
    // `cmd` still holds our copies of the child's ends: drop them, so that
    // ssh's exit is seen as the end of the stream.
    drop(cmd);
    let relay = match (&remote.stderr, child.stderr.take()) {
        (StderrSink::Lines(f), Some(err)) => {
            let f = f.clone();
            Some(std::thread::spawn(move || relay_lines(err, &*f)))
        }
        _ => None,
    };
    let ssh = std::sync::Arc::new(SshProcess {
        child: Mutex::new(child),
        stderr: Mutex::new(relay),
    });
    let r = Client::over_ssh(
        ours,
        remote.label.clone(),
        ssh.clone(),
        client_name,
        remote.hello_within(),
    );
    match r {
        Ok(c) => Ok(c),
        Err(ClientError::Rpc(e))
            if e.code == ccd_protocol::ErrorCode::UnsupportedProtocolVersion.code() =>
        {
            Err(ClientError::Remote(RemoteError::Version {
                host: remote.label.clone(),
                message: e.message,
            }))
        }
        Err(e @ (ClientError::Closed | ClientError::Io(_))) => {
            let status = ssh.status_within(Duration::from_secs(3));
            let host = remote.label.clone();
            Err(ClientError::Remote(match status.and_then(|s| s.code()) {
                Some(127) => RemoteError::NoCcd {
                    host,
                    remote_ccd: remote.remote_ccd.clone(),
                },
                Some(255) => RemoteError::Ssh { host },
                _ => RemoteError::Ended {
                    host,
                    command: format!("{} dial-stdio", remote.remote_ccd),
                    status: status
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| e.to_string()),
                },
            }))
        }
        Err(e) => Err(e),
    }
}

/// Hands each line of `from` to `f` (without its newline; a line longer
/// than [`STDERR_LINE_MAX`] is cut there), until end of file.
fn relay_lines(from: impl std::io::Read, f: &dyn Fn(&[u8])) {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut limited = std::io::Read::take(&mut r, STDERR_LINE_MAX as u64);
        match limited.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                } else if line.len() >= STDERR_LINE_MAX {
                    // Skip the rest of an over-long line.
                    let mut rest = Vec::new();
                    let _ = r.read_until(b'\n', &mut rest);
                }
                f(&line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t: SshTarget = "ssh://me@box.example:2222".parse().unwrap();
        assert_eq!(t.user.as_deref(), Some("me"));
        assert_eq!(t.host, "box.example");
        assert_eq!(t.port, Some(2222));
        assert_eq!(t.to_string(), "ssh://me@box.example:2222");
        let t: SshTarget = "ssh://devbox".parse().unwrap();
        assert_eq!((t.user, t.host.as_str(), t.port), (None, "devbox", None));
        let t: SshTarget = "ssh://[::1]:22".parse().unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", Some(22)));
        for bad in [
            "devbox",
            "ssh://",
            "ssh://-oProxyCommand=x",
            "ssh://a b",
            "ssh://h:0",
            "ssh://h:99999",
            "ssh://-u@h",
            "ssh://h;rm",
        ] {
            assert!(bad.parse::<SshTarget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_remote_command_quotes_the_path() {
        let r = Remote {
            target: "ssh://u@h:2200".parse().unwrap(),
            label: "h".into(),
            ssh: vec!["ssh".into(), "-F".into(), "/c".into()],
            remote_ccd: "/opt/my ccd/ccd".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        };
        let line: Vec<String> = r
            .command_line()
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(
            line,
            [
                "ssh",
                "-F",
                "/c",
                "-T",
                "-p",
                "2200",
                "u@h",
                "--",
                "'/opt/my ccd/ccd'",
                "dial-stdio"
            ]
        );
        assert_eq!(shell_quote("ccd"), "ccd");
        assert_eq!(shell_quote("~/bin/ccd"), "~/bin/ccd");
        assert_eq!(shell_quote("~/my bin/ccd"), "~/'my bin/ccd'");
    }

    /// Only what every login shell reads as a plain word is accepted (a
    /// value quoted for POSIX shells ran `touch` under fish).
    #[test]
    fn a_remote_ccd_outside_the_conservative_set_is_refused() {
        for ok in [
            "ccd",
            "/opt/my ccd/ccd",
            "~/.cargo/bin/ccd",
            "~/my bin/ccd-1.2+x,y=z@h%:",
        ] {
            assert_eq!(check_remote_ccd(ok), Ok(()), "{ok}");
        }
        for (bad, ch, at) in [
            ("x\\'; touch /tmp/p; #", "'\\\\'", 2),
            ("x'y", "'\\''", 2),
            ("a$HOME", "'$'", 2),
            ("a`id`", "'`'", 2),
            ("a\nid", "'\\n' (U+000A)", 2),
            ("a;id", "';'", 2),
            ("a&id", "'&'", 2),
            ("a|id", "'|'", 2),
            ("a<b", "'<'", 2),
            ("a>b", "'>'", 2),
            ("a(b)", "'('", 2),
            ("a*", "'*'", 2),
            ("a!b", "'!'", 2),
            ("a#b", "'#'", 2),
            ("~user/ccd", "'~'", 1),
            ("/x/~/ccd", "'~'", 4),
            ("~/a\"b", "'\"'", 4),
            ("a\u{202e}b", "'\\u{202e}' (U+202E)", 2),
        ] {
            match check_remote_ccd(bad) {
                Err(BadRemoteCcd::Char { what, at: got, .. }) => {
                    assert_eq!((what.as_str(), got), (ch, at), "{bad:?}");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert_eq!(check_remote_ccd(""), Err(BadRemoteCcd::Empty));
        assert!(matches!(
            check_remote_ccd("-oProxyCommand=x"),
            Err(BadRemoteCcd::Dash { .. })
        ));
        let msg = check_remote_ccd("x;y").unwrap_err().to_string();
        assert!(msg.contains("';' at character 2"), "{msg}");
    }

    #[test]
    fn connect_refuses_a_bad_remote_ccd_before_running_ssh() {
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        let fake_ssh = dir.path().join("ssh");
        std::fs::write(&fake_ssh, format!("#!/bin/sh\ntouch {}\n", ran.display())).unwrap();
        std::fs::set_permissions(
            &fake_ssh,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "h".into(),
            ssh: vec![fake_ssh.into()],
            remote_ccd: "x'; touch /tmp/p; #".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        };
        let Err(e) = connect(&r, "test") else {
            panic!("connected");
        };
        assert!(
            matches!(e, ClientError::Remote(RemoteError::BadRemoteCcd { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("nothing was run"), "{e}");
        assert!(!ran.exists(), "ssh ran");
    }

    #[test]
    fn a_missing_ssh_program_is_named() {
        let r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "h".into(),
            ssh: vec!["/nonexistent/ssh".into()],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        };
        let e = connect(&r, "test").err().expect("no ssh");
        assert!(e.to_string().contains("/nonexistent/ssh"), "{e}");
    }

    #[test]
    fn stderr_lines_are_handed_over_before_the_error() {
        let seen = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        let r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "h".into(),
            ssh: vec![
                "sh".into(),
                "-c".into(),
                "echo 'sh: ccd: not found' >&2; exit 127".into(),
            ],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Lines(std::sync::Arc::new(move |l: &[u8]| {
                sink.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(l).into_owned())
            })),
            batch: false,
        };
        let e = connect(&r, "test").err().expect("fails");
        assert!(matches!(e, ClientError::Remote(RemoteError::NoCcd { .. })));
        assert_eq!(*seen.lock().unwrap(), ["sh: ccd: not found"]);
    }

    #[test]
    fn a_remote_of_another_protocol_version_is_named() {
        // A stand-in for ssh + a ccd that speaks only protocol 99.
        let reply = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no common protocol version: client speaks 1..=1, daemon speaks 99..=99","data":{"client":{"min":1,"max":1},"server":{"min":99,"max":99}}}}"#;
        let r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "box".into(),
            ssh: vec![
                "sh".into(),
                "-c".into(),
                format!("read line; echo '{reply}'; sleep 1").into(),
            ],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        };
        let e = connect(&r, "test").err().expect("refused");
        assert!(
            matches!(e, ClientError::Remote(RemoteError::Version { .. })),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with("box: the ccd there speaks another protocol version"),
            "{text}"
        );
        assert!(text.contains("daemon speaks 99..=99"), "{text}");
    }

    #[test]
    fn exit_127_is_a_remote_without_ccd() {
        // A stand-in for ssh that behaves like a remote shell without ccd.
        let r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "h".into(),
            ssh: vec!["sh".into(), "-c".into(), "exit 127".into()],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        };
        let e = connect(&r, "test").err().expect("fails");
        assert!(
            matches!(e, ClientError::Remote(RemoteError::NoCcd { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("--remote-ccd"), "{e}");
    }

    /// `BatchMode` goes after the whole ssh command (a wrapper's own
    /// words, `ssh -F cfg`), where `ccd --host` puts its options too: the
    /// dashboard once put it after the first word (`sh -o BatchMode=yes
    /// script`).
    #[test]
    fn batch_mode_goes_after_the_whole_ssh_command() {
        let mut r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "h".into(),
            ssh: vec!["ssh".into(), "-F".into(), "/path/cfg".into()],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Inherit,
            batch: true,
        };
        let words = |r: &Remote| -> Vec<String> {
            r.command_line()
                .into_iter()
                .map(|s| s.into_string().unwrap())
                .collect()
        };
        assert_eq!(
            words(&r),
            [
                "ssh",
                "-F",
                "/path/cfg",
                "-o",
                "BatchMode=yes",
                "-T",
                "h",
                "--",
                "ccd",
                "dial-stdio"
            ]
        );
        assert_eq!(r.hello_within(), BATCH_CONNECT_TIMEOUT);
        r.batch = false;
        assert_eq!(words(&r)[3..5], ["-T", "h"]);
        assert_eq!(r.hello_within(), SSH_CONNECT_TIMEOUT);
    }

    /// A remote whose `hello` answer starts and then comes a byte every
    /// 200 ms: once bytes came, ssh has authenticated, so the rest must
    /// come within [`HELLO_REST`], every read of it bounded (each byte
    /// once restarted the wait: still waiting at 200 s).
    #[test]
    fn a_remote_trickling_its_hello_is_given_up_on() {
        let r = Remote {
            target: "ssh://h".parse().unwrap(),
            label: "box".into(),
            ssh: vec![
                "sh".into(),
                "-c".into(),
                r#"read line; printf '{"jsonrpc":"2.0","id":1,"res'; i=0; while [ $i -lt 150 ]; do printf u; sleep 0.2; i=$((i+1)); done"#.into(),
            ],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        };
        let started = Instant::now();
        let e = connect(&r, "test").err().expect("no hello");
        let took = started.elapsed();
        let n = e.not_answering().expect("not answering");
        assert_eq!(
            (n.during.as_str(), n.host.as_deref()),
            ("hello", Some("box"))
        );
        assert!(n.waited <= HELLO_REST + Duration::from_secs(1), "{n:?}");
        assert!(took < HELLO_REST + Duration::from_secs(3), "{took:?}");
        let text = e.to_string();
        assert!(
            text.starts_with("the ccd on box did not answer `hello` within"),
            "{text}"
        );
    }
}
