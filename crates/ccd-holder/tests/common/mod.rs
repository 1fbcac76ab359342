//! Test harness: an in-process holder on a thread, with a temp HOME,
//! CLAUDE_CONFIG_DIR, project dir and socket dir (never the real ~/.claude).

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ccd_holder::{Holder, HolderClient, HolderConfig, InfoResult, Outcome};

pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    pub proj: PathBuf,
    pub sock_dir: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let config = home.join(".claude");
        let proj = root.join("proj");
        let sock_dir = root.join("sock");
        for d in [&config, &proj, &sock_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        Env {
            _tmp: tmp,
            home,
            config,
            proj,
            sock_dir,
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.sock_dir.join("holder.sock")
    }

    /// A minimal, isolated environment for the child.
    pub fn child_env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOME".into(), self.home.clone().into()),
            ("CLAUDE_CONFIG_DIR".into(), self.config.clone().into()),
            ("LANG".into(), "C.UTF-8".into()),
        ]
    }

    /// A config running `/bin/sh -c script` in the project dir.
    pub fn sh(&self, script: &str) -> HolderConfig {
        let mut c = HolderConfig::new(self.socket(), "/bin/sh".into(), self.proj.clone());
        c.args = vec!["-c".into(), script.into()];
        c.base_env = Some(self.child_env());
        c.claude_config_dir = Some(self.config.clone());
        c
    }

    /// A config running the fake claude in the project dir.
    pub fn fake(&self, extra_env: &[(&str, &str)]) -> HolderConfig {
        let mut c = HolderConfig::new(self.socket(), fake_claude(), self.proj.clone());
        let mut env = self.child_env();
        for (k, v) in extra_env {
            env.push(((*k).into(), (*v).into()));
        }
        c.base_env = Some(env);
        c.claude_config_dir = Some(self.config.clone());
        c.trust_stable = Duration::from_millis(300);
        c
    }
}

/// Spawn + serve on a thread; returns the serve thread and a connected client.
pub fn start(cfg: HolderConfig) -> (JoinHandle<anyhow::Result<Outcome>>, HolderClient) {
    init_tracing();
    let holder = Holder::spawn(&cfg).expect("spawn");
    let listener = ccd_holder::bind(&cfg.socket_path).expect("bind");
    let t = std::thread::Builder::new()
        .name("holder-serve".into())
        .spawn(move || holder.serve(listener))
        .expect("serve thread");
    let client = HolderClient::connect(&cfg.socket_path).expect("connect");
    (t, client)
}

pub fn init_tracing() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_env("CCD_HOLDER_TEST_LOG")
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .with_test_writer()
            .try_init();
    });
}

/// Poll `info` until `pred` holds.
pub fn wait_info(
    c: &mut HolderClient,
    timeout: Duration,
    what: &str,
    mut pred: impl FnMut(&InfoResult) -> bool,
) -> InfoResult {
    let end = Instant::now() + timeout;
    loop {
        let info = c.info().expect("info");
        if pred(&info) {
            return info;
        }
        if Instant::now() > end {
            let screen = c
                .screen(ccd_holder::ScreenFormat::Text)
                .map(|s| s.text)
                .unwrap_or_default();
            panic!("timed out waiting for {what}; info: {info:#?}\nscreen:\n{screen}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Poll the screen until it contains `needle`.
pub fn wait_screen(c: &mut HolderClient, timeout: Duration, needle: &str) -> String {
    let end = Instant::now() + timeout;
    loop {
        let text = c
            .screen(ccd_holder::ScreenFormat::Text)
            .expect("screen")
            .text;
        if text.contains(needle) {
            return text;
        }
        if Instant::now() > end {
            panic!("timed out waiting for {needle:?} on screen:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// `<target dir>/debug/fake-claude`, built once if missing.
pub fn fake_claude() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| ccd_testkit::bins::workspace_bin("ccd-fake-claude", "fake-claude", false))
        .clone()
}

/// Context switches of this process's threads, by name (`ccd_testkit`;
/// read from `/proc`, so Linux only, as the tests that count them).
#[cfg(target_os = "linux")]
#[allow(unused_imports)] // not every test binary counts switches
pub use ccd_testkit::threads::thread_switches;
