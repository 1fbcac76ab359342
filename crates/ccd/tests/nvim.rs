//! The Neovim plugin (editors/nvim), end to end: `nvim --headless` runs
//! editors/nvim/tests/headless_spec.lua against a daemon running the fake
//! claude. The script lists sessions through the plugin's socket client,
//! sees an event become a notification, opens the `:Ccd` attach terminal
//! and finds the session's prompt on its screen, runs `:checkhealth ccd`,
//! observes it, forks it, and kills both through the plugin; shows a
//! session's tokens and dollars in the picker's columns; and finds a dead
//! conversation planted here by a phrase said in it (`:CcdSearch`,
//! `sessions.search`), choosing the hit resuming it in an attach terminal.
//!
//! Neovim ≥ 0.9 comes from `$CCD_NVIM`, else `nvim` on PATH. Without one the
//! test is skipped, except under CI (`$CI` set), where it fails: install
//! one with editors/nvim/tests/install-nvim.sh.

mod common;

use common::Sandbox;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);

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
    assert_eq!(
        common::nvim::parse_version("NVIM v0.11.4\nBuild type"),
        Some((0, 11))
    );
    assert_eq!(
        common::nvim::parse_version("NVIM v0.12.0-dev-fbb1caf"),
        Some((0, 12))
    );
    assert_eq!(common::nvim::parse_version("NVIM v0.7.2"), Some((0, 7)));
    assert_eq!(common::nvim::parse_version("vim 9"), None);
    let min = common::nvim::MIN_VERSION;
    assert!((0, 7) < min && (0, 9) >= min && (1, 0) >= min);
}

#[test]
fn the_neovim_plugin_lists_notifies_and_attaches() {
    let Some(nvim) = common::nvim::or_skip() else {
        return;
    };

    // Turns long enough that the registry shows `busy` before `idle`.
    let sb = Sandbox::with_env(&[("FAKE_CLAUDE_TURN_MS", "800")]);
    let sid = sb.new_session("nvim");
    // A dead conversation the search must find by what was said in it.
    let planted = ccd_testkit::gen::sid(4242);
    let folder = sb.work.join("searched");
    std::fs::create_dir_all(&folder).unwrap();
    let mut w =
        ccd_testkit::gen::TranscriptWriter::create(&sb.config, &planted, folder.to_str().unwrap());
    w.turn("an unrelated first question", 1000, 10);
    w.turn("where did we fix the quokka lattice regression", 1200, 10);
    drop(w);

    let spec = common::nvim::plugin().join("tests/headless_spec.lua");
    let bin_dir = common::ccd_bin().parent().unwrap().to_path_buf();
    let mut path = vec![bin_dir];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut cmd = common::nvim::headless(&nvim, &sb, &spec);
    cmd.env("PATH", std::env::join_paths(path).unwrap())
        .env("CCD_TEST_SESSION", &sid)
        .env("CCD_TEST_SEARCH_SESSION", &planted)
        .env("CCD_TEST_SEARCH_PHRASE", "quokka lattice");

    let (ok, out, err) = run_with_timeout(cmd, sb.tmp.path(), TIMEOUT);
    assert!(
        ok,
        "the headless Neovim test failed ({})\n--- stdout\n{out}\n--- stderr\n{err}\n--- daemon logs\n{}",
        nvim.display(),
        sb.logs()
    );
    assert!(
        out.contains("all checks passed"),
        "nvim exited 0 without finishing the script\n--- stdout\n{out}\n--- stderr\n{err}"
    );
}
