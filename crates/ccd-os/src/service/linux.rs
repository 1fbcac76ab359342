//! The systemd user manager, through `systemctl --user`.

use super::{run_tool, ManagerState, ServiceError, SYSTEMD_UNIT};
use std::path::{Path, PathBuf};

/// The service file's path here: the systemd user unit.
pub fn file_path(home: &Path, xdg_config_home: Option<&Path>) -> PathBuf {
    super::systemd_unit_path(home, xdg_config_home)
}

/// The service file's text for `spec` here: the systemd user unit.
pub fn render(spec: &super::Spec) -> Result<Vec<u8>, ServiceError> {
    super::systemd_unit(spec).map(String::into_bytes)
}

/// The program a service file written here starts.
pub fn program_of(file: &[u8]) -> Option<PathBuf> {
    super::unit_program(std::str::from_utf8(file).ok()?)
}

/// The manager's name, for messages.
pub const MANAGER: &str = "the systemd user manager";

/// Whether a user manager answers (`systemctl --user` reaches it): `Err`
/// says why not (no `systemctl`, no user bus: a container, a system
/// without systemd, an ssh login without a user session).
pub fn available() -> Result<(), ServiceError> {
    run_tool("systemctl", &["--user", "show", "--property=Version"]).map(|_| ())
}

/// After the file is written: reloads the units, enables the unit at
/// login and, when `start`, starts it now.
pub fn enable(_file: &Path, start: bool) -> Result<(), ServiceError> {
    run_tool("systemctl", &["--user", "daemon-reload"])?;
    if start {
        run_tool("systemctl", &["--user", "enable", "--now", SYSTEMD_UNIT]).map(|_| ())
    } else {
        run_tool("systemctl", &["--user", "enable", SYSTEMD_UNIT]).map(|_| ())
    }
}

/// Before the file is removed: disables the unit and stops it (the
/// daemon alone: `KillMode=process`).
pub fn disable(_file: &Path) -> Result<(), ServiceError> {
    run_tool("systemctl", &["--user", "disable", "--now", SYSTEMD_UNIT]).map(|_| ())
}

/// After the file is removed: the manager forgets the unit.
pub fn forget() -> Result<(), ServiceError> {
    run_tool("systemctl", &["--user", "daemon-reload"]).map(|_| ())
}

/// What the manager says of the unit.
pub fn state() -> Result<ManagerState, ServiceError> {
    let out = run_tool(
        "systemctl",
        &[
            "--user",
            "show",
            SYSTEMD_UNIT,
            "--property=UnitFileState,ActiveState,SubState,MainPID",
        ],
    )?;
    Ok(parse_show(&out))
}

/// `systemctl show`'s `KEY=value` lines as a [`ManagerState`].
fn parse_show(out: &str) -> ManagerState {
    let mut s = ManagerState::default();
    let (mut active, mut sub) = (String::new(), String::new());
    for line in out.lines() {
        match line.split_once('=') {
            Some(("UnitFileState", v)) => s.enabled = v == "enabled",
            Some(("ActiveState", v)) => {
                s.running = v == "active";
                active = v.to_owned();
            }
            Some(("SubState", v)) => sub = v.to_owned(),
            Some(("MainPID", v)) => s.pid = v.parse().ok().filter(|p| *p != 0),
            _ => {}
        }
    }
    s.detail = if sub.is_empty() {
        active
    } else {
        format!("{active} ({sub})")
    };
    s
}

/// The commands that do by hand what [`enable`] does.
pub fn enable_commands(_file: &Path) -> Vec<String> {
    vec![
        "systemctl --user daemon-reload".into(),
        format!("systemctl --user enable --now {SYSTEMD_UNIT}"),
    ]
}

/// The commands that stop the service and start it again (switching
/// from a daemon started outside it, after `ccd daemon stop`).
pub fn start_commands(_file: &Path) -> Vec<String> {
    vec![format!("systemctl --user start {SYSTEMD_UNIT}")]
}

/// What else to know once installed.
pub fn advice() -> Vec<String> {
    vec![
        "systemd stops your user services, the daemon among them, at your last logout; to keep it running without a login (and start it at boot, before you log in): loginctl enable-linger \"$USER\"".into(),
        format!("its logs: journalctl --user -u {SYSTEMD_UNIT} (and ccd's own in its state dir)"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemctl_show_reads_as_a_state() {
        let s = parse_show(
            "MainPID=4242\nUnitFileState=enabled\nActiveState=active\nSubState=running\n",
        );
        assert_eq!(
            s,
            ManagerState {
                enabled: true,
                running: true,
                pid: Some(4242),
                detail: "active (running)".into()
            }
        );
        let s =
            parse_show("MainPID=0\nUnitFileState=disabled\nActiveState=failed\nSubState=failed\n");
        assert!(!s.enabled && !s.running && s.pid.is_none());
        assert_eq!(s.detail, "failed (failed)");
    }
}
