//! Where Claude Code keeps files of its own outside its config dir, per
//! system: the managed (policy) settings file, whose `cleanupPeriodDays`
//! wins over the user's (read by `ccd_claude::retention`).
//!
//! - Linux (`linux`): `/etc/claude-code/managed-settings.json`.
//! - macOS (`macos`): `/Library/Application Support/ClaudeCode/managed-settings.json`.
//! - Elsewhere: none.
//!
//! Both folders are named in the pinned CLIs' code (2.1.173, 2.1.332).

use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod imp {
    /// Elsewhere: none known.
    pub(super) const MANAGED_DIR: Option<&str> = None;
}

/// The managed settings file Claude Code reads on this system, if any is
/// known (it need not exist).
pub fn managed_settings() -> Option<PathBuf> {
    imp::MANAGED_DIR.map(|d| PathBuf::from(d).join("managed-settings.json"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_managed_settings_file_is_named_on_linux_and_macos() {
        let p = super::managed_settings();
        if cfg!(any(target_os = "linux", target_os = "macos")) {
            let p = p.expect("a path");
            assert!(
                p.is_absolute() && p.ends_with("managed-settings.json"),
                "{p:?}"
            );
        } else {
            assert!(p.is_none());
        }
    }
}
