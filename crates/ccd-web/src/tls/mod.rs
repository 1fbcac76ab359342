//! TLS for listening beyond loopback (`--tls-cert`/`--tls-key`), one
//! module with a Linux and a macOS side:
//! - Linux (`linux.rs`): rustls through tokio-rustls, with ring as the
//!   crypto provider;
//! - macOS (`macos.rs`): the system's own TLS (Security.framework) through
//!   native-tls/tokio-native-tls: Rust bindings only, so nothing is
//!   compiled in C for the target (ring and aws-lc-rs are, which this
//!   project's Linux CI cannot do for macOS). Compiled and linted, never
//!   run: docs/platforms.md says so.
//!
//! Both read the PEM files through the shared `files.rs` (the same errors
//! for a missing, unreadable or empty certificate or key; the
//! certificate's names, checked as a browser would, feed the `Host` check
//! the same way) and give an [`Acceptor`] made once at start and
//! [`accept`], which the accept loop's per-connection task awaits
//! (bounded by `limits::TLS_HANDSHAKE` there). A key that is not the
//! certificate's is refused at start on both ("do not make a server
//! identity").

mod files;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{accept, acceptor, Acceptor};

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::{accept, acceptor, Acceptor};
