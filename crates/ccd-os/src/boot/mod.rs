//! Which boot of the machine this is: a [`BootId`] that changes on every
//! reboot and on nothing else, so the daemon can tell a machine that
//! restarted (every held session lost) from a daemon that restarted
//! (its holders adopted). Linux: `/proc/sys/kernel/random/boot_id` (a
//! UUID the kernel draws at boot); macOS: `sysctl kern.boottime` (the
//! boot's wall-clock second and microsecond, fixed for the boot).
//!
//! A test simulating a reboot overrides it in the daemon
//! (`ccd_test_hooks::Hook::BootId`), not here.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;

#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
use macos as imp;

/// An opaque name of this boot: equal across the processes and the
/// daemon restarts of one boot, different after a reboot.
pub type BootId = String;

/// This boot's id, or why it cannot be read.
pub fn boot_id() -> std::io::Result<BootId> {
    imp::boot_id()
}

/// What a boot-id source wrote, trimmed; an empty one is an error (a
/// caller never compares two empty ids as the same boot).
pub fn parse_id(raw: &str) -> std::io::Result<BootId> {
    let id = raw.trim();
    if id.is_empty() || id.len() > 128 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a boot id: {raw:?}"),
        ));
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_id_is_read_and_stable_within_a_boot() {
        let a = boot_id().expect("this system's boot id");
        assert!(!a.is_empty());
        assert_eq!(boot_id().expect("again"), a);
    }

    #[test]
    fn an_empty_or_oversized_source_is_not_a_boot_id() {
        assert_eq!(parse_id(" abc\n").expect("an id"), "abc");
        assert!(parse_id("  \n").is_err());
        assert!(parse_id(&"x".repeat(200)).is_err());
    }
}
