//! The process table of each platform, as a [`crate::tree::Source`]:
//! `/proc` read file by file on Linux, `sysinfo` elsewhere (macOS).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::Table;

#[cfg(not(target_os = "linux"))]
mod macos;
#[cfg(not(target_os = "linux"))]
pub use macos::Table;
