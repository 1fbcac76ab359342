//! What conversations cost in tokens and dollars (issue 56).
//!
//! Not machine cost (that is `ccd-cost`: memory and CPU of a process tree,
//! sampled by the daemon): this crate reads what the API billed, from the
//! transcripts, and prices it. Its pieces:
//!
//! - [`record`]: one transcript line → the assistant message's usage it
//!   carries (sans-IO), read by [`scan`], a one-pass JSON scan that keeps
//!   the few fields usage needs and skips the content without building
//!   it.
//! - [`tally`]: one file's messages, a streamed message counted once
//!   ([`tally::FileUsage`]), and the deduplication across files
//!   ([`tally::dedupe`]) — the rules ccusage 20.0.24 follows, measured.
//! - [`prices`]: the dated price table (`prices.toml`, built in) and the
//!   config's overrides; an unknown model is unpriced, never guessed.
//! - [`report`]: totals by day, week, month, session, folder or model,
//!   between two dates.
//! - [`cache`]: the incremental cache in the state dir (only appended
//!   bytes are read again), [`files`]: which files are transcripts, and
//!   [`here`]: both put together for this machine.

pub mod cache;
pub mod files;
pub mod here;
pub mod prices;
pub mod record;
pub mod report;
pub mod scan;
pub mod tally;

pub use prices::{Price, PriceTable};
pub use record::Usage;
pub use report::{By, Report, Row};
pub use tally::{FileUsage, Tokens};
