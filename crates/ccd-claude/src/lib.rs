//! Everything ccd knows about Claude Code's own files.
//!
//! This crate is the single owner of that knowledge: where the config dir is
//! ([`config`]), how the session registry is read ([`registry`]) and how a
//! registry entry is judged live, dead or unknown ([`liveness`]), where
//! transcripts live and what a bounded read of one yields ([`transcript`],
//! [`slug`]), how cwds are normalized and compared ([`paths`]), how many
//! tokens a model's context window holds ([`context`]), and how all of it is
//! merged into one record per session id ([`index`]), and how a dead
//! session's transcript is trimmed without changing what resume sends
//! ([`trim`]), which conversations Claude Code's retention sweep would
//! delete next ([`retention`]), how a dead conversation is moved out of
//! its reach into ccd's state dir and back ([`archive`]), and which CLI versions all of that was verified against
//! ([`cli_versions`]).
//!
//! It has no async runtime and performs only blocking file reads (and writes
//! its own transcript summary cache, when a caller gives it a folder).
//! Nothing here caches liveness: every call to [`index::build`] or
//! [`liveness::check`] looks at the process table again.

// Unsafe code only where an item allows it, with its reason
// (docs/architecture.md, "Unsafe code").
#![deny(unsafe_code)]

#[cfg(unix)]
pub mod archive;
pub mod cli_versions;
pub mod config;
pub mod context;
pub mod display;
pub mod drift;
pub mod id_switch;
pub mod index;
pub mod liveness;
pub mod paths;
pub mod registry;
pub mod retention;
pub mod slug;
pub mod transcript;
#[cfg(unix)]
pub mod trim;
pub mod typing;

pub use config::ClaudeConfigDir;
pub use index::{SessionIndex, SessionRecord};
pub use liveness::Liveness;
