//! TLS for listening beyond loopback (`--tls-cert`/`--tls-key`), one
//! module with a Linux and a macOS side:
//! - Linux (`linux.rs`): rustls through tokio-rustls, with ring as the
//!   crypto provider;
//! - macOS (`macos.rs`): not built yet. ring (and aws-lc-rs) compile C for
//!   their target, which this project's Linux CI cannot do for macOS, so
//!   there `--tls-cert` is refused with what to do instead (a
//!   TLS-terminating proxy with `--behind-proxy`, or an ssh port forward
//!   to a loopback `ccd web`). docs/platforms.md says so.
//!
//! Both sides give an [`Acceptor`] made once at start and [`accept`],
//! which the accept loop's per-connection task awaits (bounded by
//! `limits::TLS_HANDSHAKE` there).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{accept, acceptor, Acceptor};

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::{accept, acceptor, Acceptor};
