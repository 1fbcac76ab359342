//! The real Claude Code CLI, offline: pinned versions installed by
//! `tests/real-cli/install.sh` into a cache outside the repository, run
//! against `ccd-mock-api` on loopback, in a sandbox with its own HOME,
//! config dir and TMPDIR (never the machine's ~/.claude). docs/claude-cli-compat.md, "Running the real CLI offline".

#![allow(dead_code)]

use super::Sandbox;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// A dummy key: the CLI only needs its shape; its last 20 characters are
/// pre-approved in `.claude.json` so the "custom API key" dialog is skipped.
pub const API_KEY: &str = "sk-ant-test-0123456789abcdefghijklmnop";

/// Token figures the mock reports in every reply's `usage`.
#[derive(Clone, Copy, Debug)]
pub struct MockUsage {
    pub input: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl MockUsage {
    /// Small figures, for tests that do not look at the context.
    pub const SMALL: MockUsage = MockUsage {
        input: 10,
        cache_creation: 20,
        cache_read: 30,
        output: 5,
    };

    /// What ccd should report as the context in use (docs/claude-cli-compat.md).
    pub fn context_tokens(&self) -> u64 {
        self.input + self.cache_creation + self.cache_read
    }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned versions (`tests/real-cli/versions`), or the comma-separated
/// list in `$CCD_REAL_CLI_VERSIONS` (to run one version by hand).
pub fn versions() -> Vec<String> {
    if let Ok(list) = std::env::var("CCD_REAL_CLI_VERSIONS") {
        let v: Vec<String> = list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if !v.is_empty() {
            return v;
        }
    }
    let list = std::fs::read_to_string(repo_root().join("tests/real-cli/versions"))
        .expect("tests/real-cli/versions");
    list.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// Installs (or finds in the cache) one version; the runnable claude.
pub fn install(version: &str) -> Result<PathBuf, String> {
    let script = repo_root().join("tests/real-cli/install.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(version)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{} {version} failed ({}):\n{stderr}",
            script.display(),
            out.status
        ));
    }
    let path = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{version} ")))
        .map(|p| PathBuf::from(p.trim()))
        .ok_or_else(|| format!("install.sh printed no path for {version}:\n{stdout}\n{stderr}"))?;
    if !path.exists() {
        return Err(format!(
            "install.sh printed {}, which does not exist",
            path.display()
        ));
    }
    Ok(path)
}

/// The claude binary for `version`, or `None` (with a message) when it
/// cannot be had locally. Under CI (`$CI` set) a failure panics instead:
/// there the real-CLI suite must run.
pub fn claude_or_skip(version: &str) -> Option<PathBuf> {
    match install(version) {
        Ok(p) => Some(p),
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("the real Claude Code CLI {version} could not be installed (CI is set): {e}")
        }
        Err(e) => {
            // Straight to stderr, not eprintln!: the harness captures that
            // and shows it only on failure, and a skip must be seen.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: real Claude Code CLI {version} not available (no npm or offline?); \
                 set CI=1 to make this a failure.\n{e}"
            );
            None
        }
    }
}

/// `ccd-mock-api`, beside the ccd binary: (re)built once per test run, as
/// `cargo test -p ccd` alone neither builds it nor notices it is stale
/// (a no-op when it is up to date).
pub fn mock_api_bin() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| ccd_testkit::bins::workspace_bin("ccd-mock-api", "ccd-mock-api", true))
        .clone()
}

/// A running `ccd-mock-api`; killed (by its pid) on drop. It also exits by
/// itself if this test process dies (its stdin is our pipe).
pub struct MockApi {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
    pub usage: MockUsage,
    /// Its log and stderr live here, as long as the mock.
    _scratch: tempfile::TempDir,
}

impl MockApi {
    pub fn start(usage: MockUsage) -> Self {
        Self::start_with_delay(usage, 0)
    }

    /// A mock that waits `delay_ms` between the events of each streamed
    /// reply (a turn that lasts).
    pub fn start_with_delay(usage: MockUsage, delay_ms: u64) -> Self {
        Self::start_with(usage, delay_ms, false)
    }

    /// A mock that also logs each request's whole body (`full_body`), to
    /// compare what the CLI sent.
    pub fn start_logging_bodies(usage: MockUsage) -> Self {
        Self::start_with(usage, 0, true)
    }

    fn start_with(usage: MockUsage, delay_ms: u64, log_bodies: bool) -> Self {
        let scratch = tempfile::Builder::new()
            .prefix("ccd-mock")
            .tempdir()
            .unwrap();
        let dir = scratch.path();
        let log = dir.join("mock-api.log");
        let mut child = Command::new(mock_api_bin())
            .env("CCD_MOCK_EVENT_DELAY_MS", delay_ms.to_string())
            .args(["--port", "0", "--exit-on-stdin-eof", "--log"])
            .arg(&log)
            .args(["--input-tokens", &usage.input.to_string()])
            .args([
                "--cache-creation-input-tokens",
                &usage.cache_creation.to_string(),
            ])
            .args(["--cache-read-input-tokens", &usage.cache_read.to_string()])
            .args(["--output-tokens", &usage.output.to_string()])
            .args(log_bodies.then_some("--log-bodies"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("mock-api.stderr")).unwrap())
            .spawn()
            .expect("starting ccd-mock-api");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("ccd-mock-api said {first:?}"));
        Self {
            child,
            port,
            log,
            usage,
            _scratch: scratch,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests logged so far (one JSON object each).
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// `METHOD target kind` per request, for a test's failure message.
    pub fn summary(&self) -> String {
        self.requests()
            .iter()
            .map(|r| format!("{} {} {}", r["method"], r["target"], r["kind"]))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The variables that point the real CLI at the mock, offline.
pub fn cli_env(mock: &MockApi, claude: &Path) -> Vec<(String, String)> {
    vec![
        ("ANTHROPIC_BASE_URL".into(), mock.base_url()),
        ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
        ("CCD_CLAUDE_BIN".into(), claude.display().to_string()),
        // ccd's own default, not the fast suite's 300 ms.
        ("CCD_TRUST_STABLE_MS".into(), "1000".into()),
    ]
}

/// A sandbox whose daemon (and so every session) runs the real CLI.
/// The CLI of `version` under ccd in a sandbox, talking to a mock that
/// answers with `usage`; `None` when the CLI is not installed (the test
/// is skipped, see [`claude_or_skip`]).
pub fn setup(version: &str, usage: MockUsage) -> Option<(MockApi, Sandbox)> {
    let claude = claude_or_skip(version)?;
    let mock = MockApi::start(usage);
    let sb = sandbox(&mock, &claude, version);
    Some((mock, sb))
}

pub fn sandbox(mock: &MockApi, claude: &Path, version: &str) -> Sandbox {
    let env = cli_env(mock, claude);
    let extra: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let sb = Sandbox::with_env(&extra);
    seed_claude_json(&sb, version);
    sb
}

/// The `.claude.json` that lets the CLI reach its prompt with no first-run
/// screens, written to the config dir and (for safety) to `$HOME`.
pub fn seed_claude_json(sb: &Sandbox, version: &str) {
    let key_tail: String = {
        let chars: Vec<char> = API_KEY.chars().collect();
        chars[chars.len() - 20..].iter().collect()
    };
    let v = json!({
        "hasCompletedOnboarding": true,
        "lastOnboardingVersion": version,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
    });
    std::fs::create_dir_all(&sb.config).unwrap();
    let bytes = serde_json::to_vec_pretty(&v).unwrap();
    std::fs::write(sb.config.join(".claude.json"), &bytes).unwrap();
    std::fs::write(sb.home.join(".claude.json"), &bytes).unwrap();
}

/// The registry entries (`<config>/sessions/<pid>.json`) present now.
pub fn registry_entries(sb: &Sandbox) -> Vec<Value> {
    let Ok(rd) = std::fs::read_dir(sb.config.join("sessions")) else {
        return vec![];
    };
    rd.flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".json")
                .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect()
}

/// The usage and words of the newest assistant record: the latest by
/// timestamp, not the last line. A fork's transcript is not written in
/// order: 2.1.173 can append the copied history after the fork's first
/// turn (seen under load in CI).
pub fn assistant_usage(transcript: &std::path::Path) -> Option<(Value, String)> {
    let text = std::fs::read_to_string(transcript).ok()?;
    let r = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "assistant")
        // RFC 3339 UTC timestamps of one writer compare as strings; on a
        // tie the later line wins.
        .max_by(|a, b| {
            a["timestamp"]
                .as_str()
                .unwrap_or("")
                .cmp(b["timestamp"].as_str().unwrap_or(""))
        })?;
    let words: String = r["message"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect();
    Some((r["message"]["usage"].clone(), words))
}
