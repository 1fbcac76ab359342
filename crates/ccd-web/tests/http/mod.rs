//! The HTTP tests' world: a sandbox (temp HOME, Claude config dir, socket
//! dir, state dir and TMPDIR; the fake claude as the claude binary) whose
//! daemon `ccd web --listen 127.0.0.1:0` starts, and a plain HTTP/1.1
//! client over a `TcpStream` that sends exactly the headers a test gives
//! (forged `Host` and `Origin` included), plus a WebSocket client
//! (`tungstenite`), and a stand-in for ssh reaching a second sandbox
//! ([`stand_in_ssh`]).
//!
//! Every process is this test's own, ended by its handle when it drops
//! (`ccd web` by its pid; the daemon and its sessions by `ccd daemon stop
//! --kill-sessions`, then anything still carrying this sandbox's socket
//! dir, by pid). Never the machine's own `~/.claude`.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const T: Duration = Duration::from_secs(20);

pub use ccd_testkit::bins::ccd as ccd_bin;
// Not every test file that includes this module waits.
#[allow(unused_imports)]
pub use ccd_testkit::wait::wait_for;

pub struct Sandbox {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub sock: PathBuf,
    pub state: PathBuf,
    pub work: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    pub fn new() -> Self {
        let dirs = ccd_testkit::sandbox::Dirs::new("ccd-h");
        let env = dirs.env();
        let ccd_testkit::sandbox::Dirs {
            tmp,
            root,
            sock,
            state,
            work,
            ..
        } = dirs;
        Self {
            _tmp: tmp,
            root,
            sock,
            state,
            work,
            env,
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        ccd_testkit::sandbox::command(&ccd_bin(), args, &self.env)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).stdin(Stdio::null()).output().unwrap()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "ccd {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// A held session in a fresh folder; its id.
    pub fn new_session(&self, name: &str) -> String {
        let p = self.work.join(name);
        std::fs::create_dir_all(&p).unwrap();
        self.ok(&["new", "--detach", "--cwd", p.to_str().unwrap()])
            .trim()
            .to_string()
    }

    pub fn screen(&self, sid: &str) -> String {
        self.ok(&["screen", sid])
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self
            .cmd(&["daemon", "stop", "--kill-sessions"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let needle = format!("CCD_SOCKET_DIR={}", self.sock.display());
        let me = std::process::id();
        for pid in ccd_testkit::procs::pids() {
            if pid != me && ccd_testkit::procs::has_env(pid, &needle) {
                if let Ok(pid) = i32::try_from(pid) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
    }
}

/// `ccd web` on the sandbox, ended (by its pid) when dropped.
pub struct Web {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    pub token: String,
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Web {
    pub fn start(sb: &Sandbox, extra: &[&str]) -> Self {
        let mut args = vec!["web"];
        if !extra.contains(&"--listen") {
            args.extend_from_slice(&["--listen", "127.0.0.1:0"]);
        }
        args.extend_from_slice(extra);
        let log = std::fs::File::create(sb.root.join("web.log")).unwrap();
        let mut child = sb
            .cmd(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_else(|| {
            panic!(
                "no first line; log:\n{}",
                std::fs::read_to_string(sb.root.join("web.log")).unwrap_or_default()
            )
        });
        let listen = first
            .strip_prefix("ccd web listening on ")
            .unwrap_or_else(|| panic!("first line: {first}"))
            .trim()
            .to_string();
        // Listening on every address: reached through loopback.
        let addr = match listen.strip_prefix("0.0.0.0:") {
            Some(port) => format!("127.0.0.1:{port}"),
            None => listen.clone(),
        };
        let url = lines.next().expect("the URL line").unwrap();
        let scheme = if url.starts_with("https://") {
            "https"
        } else {
            "http"
        };
        // Behind a proxy the URL is the proxy's.
        if !extra.contains(&"--behind-proxy") {
            assert!(
                url.starts_with(&format!("{scheme}://{listen}/?token=")),
                "{url}"
            );
        }
        let token = url.split("token=").nth(1).unwrap().trim().to_string();
        assert_eq!(token.len(), 64, "{url}");
        // Keep draining (the QR code).
        std::thread::spawn(move || for _ in lines {});
        Self { child, addr, token }
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A request with this server's own `Host` (and the given headers).
    pub fn req(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Resp {
        let mut h: Vec<(&str, &str)> = vec![("Host", &self.addr)];
        h.extend_from_slice(headers);
        request(&self.addr, method, path, &h, body)
    }

    /// Logs in with the token; the cookie value.
    pub fn login(&self) -> String {
        let r = self.req("GET", &format!("/?token={}", self.token), &[], None);
        assert_eq!(r.status, 303, "{r:?}");
        cookie_of(&r).expect("a cookie")
    }

    /// GET with the cookie.
    pub fn get(&self, cookie: &str, path: &str) -> Resp {
        let c = format!("ccd_web={cookie}");
        self.req("GET", path, &[("Cookie", &c)], None)
    }

    /// POST JSON with the cookie and this page's Origin.
    pub fn post(&self, cookie: &str, path: &str, body: &str) -> Resp {
        let c = format!("ccd_web={cookie}");
        let o = self.origin();
        self.req(
            "POST",
            path,
            &[
                ("Cookie", &c),
                ("Origin", &o),
                ("Content-Type", "application/json"),
            ],
            Some(body),
        )
    }

    /// `/api/sessions` as JSON.
    pub fn sessions(&self, cookie: &str) -> Value {
        let r = self.get(cookie, "/api/sessions");
        assert_eq!(r.status, 200, "{r:?}");
        r.json()
    }

    /// A WebSocket with the cookie and this page's Origin.
    pub fn ws(&self, cookie: &str) -> Ws {
        use tungstenite::client::IntoClientRequest;
        let mut req = format!("ws://{}/api/ws", self.addr)
            .into_client_request()
            .unwrap();
        let h = req.headers_mut();
        h.insert("Origin", self.origin().parse().unwrap());
        h.insert("Cookie", format!("ccd_web={cookie}").parse().unwrap());
        let stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(T)).unwrap();
        let (ws, resp) = tungstenite::client(req, stream).expect("a WebSocket");
        assert_eq!(resp.status(), 101);
        Ws(ws)
    }
}

pub struct Ws(pub tungstenite::WebSocket<TcpStream>);

impl Ws {
    /// The next JSON text message (panics on close or timeout).
    pub fn next(&mut self) -> Value {
        loop {
            match self.0.read().expect("a message") {
                tungstenite::Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
                tungstenite::Message::Close(_) => panic!("the socket closed"),
                _ => continue,
            }
        }
    }

    /// Messages until `f` accepts one (within `T`).
    pub fn until(&mut self, what: &str, mut f: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + T;
        loop {
            assert!(Instant::now() < deadline, "no message: {what}");
            let m = self.next();
            if f(&m) {
                return m;
            }
        }
    }

    pub fn send(&mut self, v: &Value) {
        self.0
            .send(tungstenite::Message::Text(v.to_string().into()))
            .unwrap();
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

pub fn cookie_of(r: &Resp) -> Option<String> {
    let v = r.header("set-cookie")?;
    let pair = v.split(';').next()?;
    pair.strip_prefix("ccd_web=").map(String::from)
}

/// One request on a fresh connection (`Connection: close`), exactly these
/// headers; the whole response.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    if let Some(b) = body {
        // A server may answer (413) before reading it all.
        let _ = s.write_all(b.as_bytes());
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

pub fn parse(raw: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        // No response (a connection closed unanswered): 0.
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Resp {
        status,
        headers,
        body: body.to_string(),
    }
}

/// The headers every response must carry.
pub fn assert_security_headers(r: &Resp) {
    assert_eq!(
        r.header("content-security-policy"),
        Some("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
        "{r:?}"
    );
    assert_eq!(r.header("x-frame-options"), Some("DENY"), "{r:?}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{r:?}");
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{r:?}");
    assert_eq!(r.header("cache-control"), Some("no-store"), "{r:?}");
    assert!(
        !r.headers
            .iter()
            .any(|(k, _)| k.starts_with("access-control-")),
        "no CORS: {r:?}"
    );
}

/// A raw WebSocket upgrade request with these extra headers; the status.
pub fn upgrade_status(addr: &str, headers: &[(&str, &str)]) -> Resp {
    let mut h = vec![
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", "13"),
    ];
    h.extend_from_slice(headers);
    // Read only the head: a 101 keeps the connection open.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut head = "GET /api/ws HTTP/1.1\r\n".to_string();
    for (k, v) in &h {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    parse(&raw)
}

/// `s` quoted for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A stand-in for ssh, `near`'s `$CCD_SSH_COMMAND`: runs `far`'s `ccd
/// dial-stdio` for any host but `nowhere` (fails as ssh does: exit 255,
/// its words on stderr) and `stall` (hangs, a network that never
/// answers).
pub fn stand_in_ssh(near: &mut Sandbox, far: &Sandbox) {
    use std::os::unix::fs::PermissionsExt;
    let path = near.root.join("fake-ssh");
    let mut script = String::from(
        "#!/bin/sh\nfor a; do\n  case \"$a\" in\n    nowhere) echo 'ssh: Could not resolve hostname nowhere: Name or service not known' >&2; exit 255;;\n    stall) exec sleep 600;;\n  esac\ndone\nexec env -u XDG_RUNTIME_DIR",
    );
    for (k, v) in &far.env {
        script.push_str(&format!(" {k}={}", quote(v)));
    }
    script.push_str(&format!(
        " {} dial-stdio\n",
        quote(ccd_bin().to_str().unwrap())
    ));
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    near.env
        .push(("CCD_SSH_COMMAND".into(), path.display().to_string()));
}
