//! The workspace's own binaries (the fake claude, the mock API, ccd),
//! found beside the running test's executable and built there when
//! missing; ccd with its `test-hooks` feature, as `cargo test` builds it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The target profile folder the running test binary lives in
/// (`<target>/debug`, from `<target>/debug/deps/<test>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let deps = exe.parent().expect("the test binary's folder");
    match deps.file_name() {
        Some(n) if n == "deps" => deps.parent().expect("the profile folder").to_path_buf(),
        _ => deps.to_path_buf(),
    }
}

/// The target folder holding `profile`: `<target>/debug`, or
/// `<target>/<triple>/debug` when a target is named (as the workspace's
/// `.cargo/config.toml` does), told apart by the folder's name: a triple
/// starts with this machine's architecture and a dash.
fn target_dir(profile: &std::path::Path) -> Option<&std::path::Path> {
    let up = profile.parent()?;
    let named = up
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(std::env::consts::ARCH))
        .is_some_and(|rest| rest.starts_with('-'));
    if named {
        up.parent()
    } else {
        Some(up)
    }
}

/// Binary `name` of workspace package `package`, beside the test binary.
/// Built (into the same target folder) when missing, or always with
/// `rebuild` — `cargo test -p X` alone neither builds other packages'
/// binaries nor notices they are stale (a no-op when up to date).
pub fn workspace_bin(package: &str, name: &str, rebuild: bool) -> PathBuf {
    let dir = profile_dir();
    let path = dir.join(name);
    if rebuild || !path.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", package]);
        if package == "ccd" {
            // As `cargo test` builds it for ccd's own tests: reading the
            // test hooks (ccd-test-hooks), which a plain build ignores.
            cmd.args(["--features", "test-hooks"]);
        }
        if let Some(target) = target_dir(&dir) {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let status = cmd.status().expect("running cargo build");
        assert!(status.success(), "building {package} failed");
    }
    assert!(path.exists(), "{name} not found at {}", path.display());
    path
}

/// The fake claude (`ccd-fake-claude`'s `fake-claude`), built on first use
/// when missing; looked up once per test binary.
pub fn fake_claude() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| workspace_bin("ccd-fake-claude", "fake-claude", false))
        .clone()
}

/// ccd, as `cargo test` builds it, for other packages' tests: rebuilt
/// once per test binary (`cargo test -p X` neither builds it nor notices
/// it is stale; a no-op when up to date).
pub fn ccd() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| workspace_bin("ccd", "ccd", true))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::target_dir;

    #[test]
    fn the_target_folder_is_found_with_and_without_a_named_target() {
        let target = std::path::Path::new("/w/target");
        let triple = target.join(format!("{}-unknown-linux-gnu", std::env::consts::ARCH));
        assert_eq!(target_dir(&triple.join("debug")), Some(target));
        assert_eq!(target_dir(&target.join("debug")), Some(target));
        assert_eq!(target_dir(&target.join("release")), Some(target));
    }
}
