//! Linux: the kernel's per-boot UUID.

/// `/proc/sys/kernel/random/boot_id`.
pub fn boot_id() -> std::io::Result<super::BootId> {
    super::parse_id(&std::fs::read_to_string("/proc/sys/kernel/random/boot_id")?)
}
