//! Transcripts: `<config>/projects/<slug>/<sessionId>.jsonl`.
//!
//! [`locate`] finds transcript files (by session id first, by cwd through
//! the slug rule second); [`summary`] reads a bounded head and tail of one
//! file and yields what listing needs; [`record`] is the tolerant shape of
//! one line.

pub mod locate;
pub mod record;
pub mod summary;

pub use locate::{find_by_session_id, find_for_cwd, list_all, TranscriptFile};
pub use summary::{read_summary, TranscriptSummary};
