//! launchd, through `launchctl` in the user's GUI domain (`gui/<uid>`).

use super::{run_tool, ManagerState, ServiceError, LAUNCHD_LABEL};
use std::path::{Path, PathBuf};

/// The service file's path here: the launchd agent.
pub fn file_path(home: &Path, _xdg_config_home: Option<&Path>) -> PathBuf {
    super::launchd_plist_path(home)
}

/// The service file's text for `spec` here: the launchd agent.
pub fn render(spec: &super::Spec) -> Result<Vec<u8>, ServiceError> {
    super::launchd_plist(spec)
}

/// The program a service file written here starts.
pub fn program_of(file: &[u8]) -> Option<PathBuf> {
    super::plist_program(file)
}

/// The manager's name, for messages.
pub const MANAGER: &str = "launchd (the gui domain)";

fn domain() -> String {
    format!("gui/{}", rustix::process::getuid().as_raw())
}

fn target() -> String {
    format!("{}/{LAUNCHD_LABEL}", domain())
}

/// Whether the user's GUI domain answers (`launchctl print gui/<uid>`):
/// an ssh login without a GUI session has none.
pub fn available() -> Result<(), ServiceError> {
    run_tool("launchctl", &["print", &domain()]).map(|_| ())
}

/// After the file is written: enables the label and loads the agent
/// (`bootstrap`), which starts it (`RunAtLoad`) when `start`; without
/// `start` it is enabled only, and loaded at the next login.
pub fn enable(file: &Path, start: bool) -> Result<(), ServiceError> {
    run_tool("launchctl", &["enable", &target()])?;
    if !start {
        return Ok(());
    }
    // A loaded agent is booted out first: bootstrap refuses a loaded label.
    let _ = run_tool("launchctl", &["bootout", &target()]);
    let path = file.to_string_lossy();
    run_tool("launchctl", &["bootstrap", &domain(), &path]).map(|_| ())
}

/// Before the file is removed: unloads the agent (`bootout`, which
/// signals the daemon alone: the holders are in sessions of their own and
/// the agent abandons its process group) and disables the label.
pub fn disable(_file: &Path) -> Result<(), ServiceError> {
    // Not loaded is not a failure here.
    let _ = run_tool("launchctl", &["bootout", &target()]);
    run_tool("launchctl", &["disable", &target()]).map(|_| ())
}

/// After the file is removed: nothing (launchd reads the file at load).
pub fn forget() -> Result<(), ServiceError> {
    Ok(())
}

/// What launchd says of the agent.
pub fn state() -> Result<ManagerState, ServiceError> {
    let disabled = run_tool("launchctl", &["print-disabled", &domain()]).unwrap_or_default();
    let is_disabled = disabled.lines().any(|l| {
        let l = l.trim();
        l.starts_with(&format!("\"{LAUNCHD_LABEL}\""))
            && (l.ends_with("=> disabled") || l.ends_with("=> true"))
    });
    match run_tool("launchctl", &["print", &target()]) {
        Ok(out) => {
            let mut s = parse_print(&out);
            s.enabled = !is_disabled;
            Ok(s)
        }
        // Not loaded.
        Err(ServiceError::Failed { .. }) => Ok(ManagerState {
            enabled: false,
            running: false,
            pid: None,
            detail: "not loaded".into(),
        }),
        Err(e) => Err(e),
    }
}

/// `launchctl print`'s `state = running` and `pid = N` lines.
fn parse_print(out: &str) -> ManagerState {
    let mut s = ManagerState::default();
    for line in out.lines() {
        match line.trim().split_once(" = ") {
            Some(("state", v)) => {
                s.running = v == "running";
                s.detail = v.to_owned();
            }
            Some(("pid", v)) => s.pid = v.parse().ok(),
            _ => {}
        }
    }
    s
}

/// The commands that do by hand what [`enable`] does.
pub fn enable_commands(file: &Path) -> Vec<String> {
    vec![
        format!("launchctl enable {}", target()),
        format!("launchctl bootstrap {} '{}'", domain(), file.display()),
    ]
}

/// The commands that start the service now.
pub fn start_commands(file: &Path) -> Vec<String> {
    vec![format!(
        "launchctl bootstrap {} '{}'",
        domain(),
        file.display()
    )]
}

/// What else to know once installed.
pub fn advice() -> Vec<String> {
    vec!["launchd runs the agent while you are logged in (a LaunchAgent ends at logout)".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchctl_print_reads_as_a_state() {
        let s = parse_print(
            "dev.ccd.daemon = {\n\tactive count = 1\n\tstate = running\n\tpid = 501\n}\n",
        );
        assert!(s.running);
        assert_eq!(s.pid, Some(501));
        assert_eq!(s.detail, "running");
    }
}
