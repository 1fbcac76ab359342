//! macOS (and any system other than Linux): no accept error of its own;
//! the portable classification in `mod.rs` covers what accept(2) reports.

/// Errors that mean this connection failed, not the listener, beyond the
/// portable ones: none.
pub(super) const RETRY_HERE: &[i32] = &[];
