//! The browser tests' world: a sandbox (temp HOME, Claude config dir,
//! socket dir, state dir and TMPDIR; the fake claude as the claude binary)
//! with its daemon, `ccd web --listen 127.0.0.1:0` on it, and a headless
//! Debian Chromium driven through chromedriver (WebDriver, `fantoccini`:
//! the driver is `ccd_testkit::browser`, shared with the ccd crate's
//! browser test over sshd).
//!
//! Each piece is a process this test started, ended by its own handle when
//! the piece drops (the daemon and its sessions by `ccd daemon stop
//! --kill-sessions`, then anything still carrying this sandbox's socket dir
//! by pid). Never the machine's own `~/.claude`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub use ccd_testkit::browser::{browser_or_skip, Browser, Device, T};
use serde_json::json;

pub use ccd_testkit::bins::ccd as ccd_bin;
pub use ccd_testkit::wait::wait_for;

pub struct Sandbox {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    pub sock: PathBuf,
    /// ccd's state dir (the token file, the prompt links' key).
    pub state: PathBuf,
    pub work: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    pub fn new() -> Self {
        Self::with_env(&[])
    }

    /// `extra` is set for the daemon (and so for every session it starts).
    pub fn with_env(extra: &[(String, String)]) -> Self {
        let dirs = ccd_testkit::sandbox::Dirs::new("ccd-w");
        let mut env = dirs.env();
        let ccd_testkit::sandbox::Dirs {
            tmp,
            home,
            config,
            sock,
            state,
            work,
            ..
        } = dirs;
        env.extend(extra.iter().cloned());
        Self {
            _tmp: tmp,
            home,
            config,
            sock,
            state,
            work,
            env,
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        ccd_testkit::sandbox::command(&ccd_bin(), args, &self.env)
    }

    /// Runs `ccd args…`, requires success; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.cmd(args).output().expect("running ccd");
        assert!(
            o.status.success(),
            "ccd {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// A held session (`ccd new --detach`) in a fresh folder; its id.
    pub fn new_session(&self, name: &str) -> String {
        let p = self.work.join(name);
        std::fs::create_dir_all(&p).expect("a project folder");
        let cwd = p.to_str().expect("a UTF-8 path");
        self.ok(&["new", "--detach", "--cwd", cwd])
            .trim()
            .to_string()
    }

    /// A session ccd does not hold: a transcript written as Claude Code
    /// writes one, its process long gone. Its id.
    pub fn outside_session(&self, name: &str, n: u64) -> String {
        let sid = ccd_testkit::gen::sid(n);
        let p = self.work.join(name);
        std::fs::create_dir_all(&p).expect("a project folder");
        ccd_testkit::gen::transcript(&self.config, &sid, p.to_str().expect("UTF-8"), 2);
        sid
    }

    /// The held session's screen as the daemon's model has it (`ccd screen`).
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
        // Anything still carrying this sandbox's socket dir (a holder
        // nobody could reach) is ended by pid.
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

/// A child process ended (and reaped) when this drops.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ccd web` serving the sandbox's daemon.
pub struct Web {
    _proc: Proc,
    /// `http://127.0.0.1:<port>`.
    pub origin: String,
    /// The login URL it printed (`…/?token=<hex>`).
    pub login_url: String,
}

impl Web {
    /// Starts `ccd web --listen 127.0.0.1:0 extra…` and reads the bound
    /// address and the login URL from its stdout.
    pub fn start(sb: &Sandbox, extra: &[&str]) -> Self {
        let mut args = vec!["web", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = sb
            .cmd(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting ccd web");
        let stdout = child.stdout.take().expect("ccd web's stdout");
        let proc = Proc(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let mut bound = None;
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                if let Some(a) = line.strip_prefix("ccd web listening on ") {
                    bound = Some(a.trim().to_string());
                } else if line.contains("?token=") {
                    let _ = tx.send((bound.clone(), line.trim().to_string()));
                    break;
                }
            }
            // Keep draining (the QR code) so the server never blocks on a
            // full pipe.
            for _ in lines {}
        });
        let (bound, url) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("ccd web printed its address and login URL");
        let bound = bound.expect("the `ccd web listening on` line");
        let origin = format!("http://{bound}");
        let path = url
            .find("/?token=")
            .map(|i| url[i..].to_string())
            .expect("a login URL");
        Self {
            _proc: proc,
            login_url: format!("{origin}{path}"),
            origin,
        }
    }

    pub fn token(&self) -> &str {
        self.login_url
            .split("token=")
            .nth(1)
            .expect("the URL's token")
    }
}

/// Another site's page on another loopback port (the same *site* as the
/// server, 127.0.0.1, so the SameSite=Strict cookie goes along with its
/// requests; only the Origin check stands in the way): serves `html` to
/// every request, on a thread that lives as long as the test. Its origin.
pub fn foreign_page(html: String) -> String {
    use std::io::{Read, Write};
    let l = TcpListener::bind("127.0.0.1:0").expect("a port for the foreign page");
    let origin = format!("http://{}", l.local_addr().expect("its address"));
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut head = Vec::new();
            let mut b = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    origin
}

/// The real Claude Code CLI `version` (`tests/real-cli/install.sh`, a cache
/// outside the repository), or `None` with a loud message when it cannot
/// be had here; under `CI` that is a failure.
pub fn real_claude_or_skip(version: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(root.join("tests/real-cli/install.sh"))
        .arg(version)
        .stdin(Stdio::null())
        .output();
    let found = out.as_ref().ok().and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{version} ")))
            .map(|p| PathBuf::from(p.trim()))
            .filter(|p| p.exists())
    });
    if found.is_none() {
        let why = match &out {
            Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => e.to_string(),
        };
        assert!(
            std::env::var_os("CI").is_none(),
            "the real Claude Code CLI {version} could not be installed (CI is set): {why}"
        );
        eprintln!("\n!!! SKIPPED: the real Claude Code CLI {version} is not available: {why}\n");
    }
    found
}

/// The pinned real CLI versions (`tests/real-cli/versions`).
pub fn real_versions() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join("tests/real-cli/versions"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// `ccd-mock-api` on a loopback port (the API the real CLI talks to,
/// offline); ended by pid on drop, and by itself if this test dies (its
/// stdin is our pipe).
pub struct MockApi {
    _proc: Proc,
    pub port: u16,
    _scratch: tempfile::TempDir,
}

impl MockApi {
    pub fn start() -> Self {
        let bin = ccd_testkit::bins::workspace_bin("ccd-mock-api", "ccd-mock-api", true);
        let scratch = tempfile::Builder::new()
            .prefix("ccd-mock")
            .tempdir()
            .expect("a scratch dir");
        let mut child = Command::new(bin)
            .args(["--port", "0", "--exit-on-stdin-eof", "--log"])
            .arg(scratch.path().join("mock-api.log"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting ccd-mock-api");
        let stdout = child.stdout.take().expect("its stdout");
        let proc = Proc(child);
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("the mock's address");
        let port = first
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("ccd-mock-api said {first:?}"));
        Self {
            _proc: proc,
            port,
            _scratch: scratch,
        }
    }
}

/// A dummy key in the shape the CLI wants; its tail is pre-approved.
const API_KEY: &str = "sk-ant-test-0123456789abcdefghijklmnop";

/// A sandbox whose sessions run the real CLI `claude` against `mock`, with
/// a `.claude.json` that skips every first-run screen
/// (docs/claude-cli-compat.md, "Running the real CLI offline").
pub fn real_sandbox(mock: &MockApi, claude: &Path, version: &str) -> Sandbox {
    let sb = Sandbox::with_env(&[
        (
            "ANTHROPIC_BASE_URL".into(),
            format!("http://127.0.0.1:{}", mock.port),
        ),
        ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
        ("CCD_CLAUDE_BIN".into(), claude.display().to_string()),
        ("CCD_TRUST_STABLE_MS".into(), "1000".into()),
    ]);
    let tail: String = {
        let chars: Vec<char> = API_KEY.chars().collect();
        chars[chars.len() - 20..].iter().collect()
    };
    let v = json!({
        "hasCompletedOnboarding": true,
        "lastOnboardingVersion": version,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [tail], "rejected": []},
    });
    let bytes = serde_json::to_vec_pretty(&v).unwrap_or_default();
    std::fs::create_dir_all(&sb.config).expect("the config dir");
    std::fs::write(sb.config.join(".claude.json"), &bytes).expect(".claude.json");
    std::fs::write(sb.home.join(".claude.json"), &bytes).expect("the sandbox HOME's .claude.json");
    sb
}
