//! The browser tests' world: a sandbox (temp HOME, Claude config dir,
//! socket dir, state dir and TMPDIR; the fake claude as the claude binary)
//! with its daemon, `ccd web --listen 127.0.0.1:0` on it, and a headless
//! Debian Chromium driven through chromedriver (WebDriver, `fantoccini`).
//!
//! Each piece is a process this test started, ended by its own handle when
//! the piece drops (the daemon and its sessions by `ccd daemon stop
//! --kill-sessions`, then anything still carrying this sandbox's socket dir
//! by pid). Never the machine's own `~/.claude`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// How long a step may take before a test fails.
pub const T: Duration = Duration::from_secs(20);

pub fn ccd_bin() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    // `cargo test -p ccd-web` neither builds the `ccd` binary nor notices
    // it is stale: build it (a no-op when up to date).
    PATH.get_or_init(|| ccd_testkit::bins::workspace_bin("ccd", "ccd", true))
        .clone()
}

pub fn fake_claude() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| ccd_testkit::bins::workspace_bin("ccd-fake-claude", "fake-claude", false))
        .clone()
}

/// Polls `f` every 50 ms until it gives `Some` (or panics after `timeout`).
pub fn wait_for<X>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<X>) -> X {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(x) = f() {
            return x;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub struct Sandbox {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    pub sock: PathBuf,
    pub work: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    pub fn new() -> Self {
        Self::with_env(&[])
    }

    /// `extra` is set for the daemon (and so for every session it starts).
    pub fn with_env(extra: &[(String, String)]) -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("ccd-w")
            .tempdir()
            .expect("a temp dir");
        let root = std::fs::canonicalize(tmp.path()).expect("the temp dir's path");
        let home = root.join("home");
        let config = home.join(".claude");
        let sock = root.join("sock");
        let state = root.join("state");
        let work = root.join("work");
        for d in [&home, &work] {
            std::fs::create_dir_all(d).expect("sandbox folders");
        }
        let mut env: Vec<(String, String)> = vec![
            ("HOME".into(), home.display().to_string()),
            ("CLAUDE_CONFIG_DIR".into(), config.display().to_string()),
            ("CCD_SOCKET_DIR".into(), sock.display().to_string()),
            ("CCD_STATE_DIR".into(), state.display().to_string()),
            ("CCD_CLAUDE_BIN".into(), fake_claude().display().to_string()),
            (
                "CCD_CONFIG".into(),
                root.join("ccd.toml").display().to_string(),
            ),
            ("CCD_TRUST_STABLE_MS".into(), "300".into()),
            ("TMPDIR".into(), root.display().to_string()),
            ("CCD_LOG".into(), "debug".into()),
        ];
        env.extend(extra.iter().cloned());
        Self {
            _tmp: tmp,
            home,
            config,
            sock,
            work,
            env,
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(ccd_bin());
        c.args(args)
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("CCD_CLAUDE_BIN");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
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

/// Where Chromium and chromedriver are (`CCD_CHROMIUM`,
/// `CCD_CHROMEDRIVER`, else Debian's `/usr/bin/chromium` and
/// `/usr/bin/chromedriver`, else on `PATH`). Without them: a failure when
/// `CI` is set (a skip must never count as a pass there), else a loud
/// skip (`None`).
pub fn browser_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    fn find(var: &str, names: &[&str]) -> Option<PathBuf> {
        if let Some(p) = std::env::var_os(var) {
            return Some(PathBuf::from(p));
        }
        for n in names {
            let p = Path::new("/usr/bin").join(n);
            if p.exists() {
                return Some(p);
            }
            if let Some(path) = std::env::var_os("PATH") {
                for d in std::env::split_paths(&path) {
                    let p = d.join(n);
                    if p.exists() {
                        return Some(p);
                    }
                }
            }
        }
        None
    }
    let chromium = find("CCD_CHROMIUM", &["chromium", "chromium-browser"]);
    let driver = find("CCD_CHROMEDRIVER", &["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let msg = "Chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver; .ci/run installs them)";
            assert!(std::env::var_os("CI").is_none(), "{test}: {msg}");
            eprintln!("\n!!!!!!!!\n!!! SKIPPED {test}: {msg}\n!!!!!!!!\n");
            None
        }
    }
}

/// A free loopback port (bound and let go: chromedriver takes it next).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// How the browser is shown.
#[derive(Clone, Copy, Debug)]
pub enum Device {
    Desktop,
    /// 390×844 CSS pixels, touch, a phone's user agent (Chrome's mobile
    /// emulation).
    Phone,
}

/// chromedriver and a headless Chromium session on it.
pub struct Browser {
    pub client: Client,
    _driver: Proc,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start(chromium: &Path, chromedriver: &Path, device: Device) -> Self {
        let port = free_port();
        let driver = Proc(
            Command::new(chromedriver)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting chromedriver"),
        );
        wait_for(T, "chromedriver's port", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        let profile = tempfile::Builder::new()
            .prefix("ccd-chromium")
            .tempdir()
            .expect("a profile dir");
        let mut args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            // A name that resolves to loopback, as a rebinding attacker's
            // would: requests to it carry `Host: rebind.test:<port>`.
            "--host-resolver-rules=MAP rebind.test 127.0.0.1".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut opts = json!({ "binary": chromium.display().to_string() });
        match device {
            Device::Desktop => args.push("--window-size=1200,900".into()),
            Device::Phone => {
                opts["mobileEmulation"] = json!({
                    "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 3.0, "touch": true, "mobile": true},
                    "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36"
                });
            }
        }
        opts["args"] = json!(args);
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), opts);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a WebDriver session on chromedriver");
        Self {
            client,
            _driver: driver,
            _profile: profile,
        }
    }

    /// Runs `script` (a function body; `arguments` as WebDriver passes
    /// them) and returns what it returns.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits until `script` returns something truthy; returns it.
    pub async fn until(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + T;
        loop {
            let v = self
                .client
                .execute(script, vec![])
                .await
                .unwrap_or(Value::Null);
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
                _ => true,
            };
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let body = self
                    .client
                    .execute(
                        "return document.body ? document.body.innerText : ''",
                        vec![],
                    )
                    .await
                    .unwrap_or(Value::Null);
                panic!("timed out waiting for {what}; the page shows:\n{body}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Taps (clicks) the element `css`, waiting for it to show.
    pub async fn tap(&self, css: &str) {
        let sel = serde_json::to_string(css).unwrap_or_default();
        self.until(
            &format!("{css} to show"),
            &format!(
                "var e = document.querySelector({sel}); return !!(e && e.offsetParent !== null && !e.disabled);"
            ),
        )
        .await;
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("tapping {css}: {e}"));
    }

    /// Types `text` into the field `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"));
        e.send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("typing into {css}: {e}"));
    }

    /// Logs in with the token URL; returns the address bar after the
    /// redirect.
    pub async fn login(&self, web: &Web) -> String {
        self.client
            .goto(&web.login_url)
            .await
            .expect("opening the login URL");
        self.until(
            "the list after login",
            "return !document.getElementById('view-list').hidden",
        )
        .await;
        self.client
            .current_url()
            .await
            .expect("the address bar")
            .to_string()
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
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
    std::fs::write(sb.home.join(".claude.json"), &bytes).expect("~/.claude.json");
    sb
}
