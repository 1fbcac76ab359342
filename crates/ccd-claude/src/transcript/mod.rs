//! Transcripts: `<config>/projects/<slug>/<sessionId>.jsonl`.
//!
//! [`locate`] finds transcript files (by session id first, by cwd through
//! the slug rule second); [`summary`] reads a bounded head and tail of one
//! file and yields what listing needs, kept between listings by
//! [`summary_cache`]; [`record`] is the tolerant shape of
//! one line; [`render`] turns records into a readable conversation and
//! [`follow`] follows a growing file with bounded reads (`ccd observe`).

pub mod background;
pub mod follow;
pub mod locate;
pub mod record;
pub mod render;
pub mod summary;
pub mod summary_cache;

pub use follow::Follower;
pub use locate::{find_by_session_id, find_for_cwd, list_all, TranscriptFile};
pub use render::{render_line, render_record, Rendered, RenderedKind};
pub use summary::{read_summary, TranscriptSummary};
