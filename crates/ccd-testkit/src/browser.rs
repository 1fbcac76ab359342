//! The real-browser tests' driver (feature `browser`, dev-only: the
//! crates that use it name it under `[dev-dependencies]`, so no non-test
//! build carries fantoccini): a headless Debian Chromium driven through
//! chromedriver (WebDriver, `fantoccini`), as `ccd web`'s tests use it
//! (`crates/ccd-web/tests/browser.rs`, `crates/ccd/tests/web_browser_ssh.rs`).
//!
//! chromedriver is a process the test started, ended (and reaped) by its
//! own handle when the [`Browser`] drops; Chromium's profile is a temp dir.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::wait::wait_for;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// How long a step may take before a test fails.
pub const T: Duration = Duration::from_secs(20);

/// A child process ended (and reaped) when this drops.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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

    /// Logs in with `ccd web`'s token URL (`http://…/?token=…`); returns
    /// the address bar after the redirect.
    pub async fn login(&self, login_url: &str) -> String {
        self.client
            .goto(login_url)
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
