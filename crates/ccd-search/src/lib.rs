//! Search inside Claude Code transcripts (issue 55).
//!
//! - [`extract`]: what is searchable in a transcript record (sans-IO): user
//!   prompts, assistant text, tool calls, titles and summaries, each with
//!   its role, time and byte offset; never JSON keys, ids, images or tool
//!   output.
//! - [`incremental`]: reading a transcript's complete lines and later only
//!   what was appended ([`incremental::ReadMark`], [`incremental::Lines`]),
//!   shared with the other followers of a transcript's growth.
//! - [`query`]: words, phrases and regexes; the normalization; snippets;
//!   the ranking.
//! - [`scan`]: searching every transcript by reading them all, on a bounded
//!   number of threads (search without an index or a daemon).
//! - [`index`]: trigram postings over message text, updated from each
//!   file's [`incremental::ReadMark`], candidates verified against the
//!   files so hits equal the scan's; saved atomically with a format
//!   version.
//! - [`archived`]: conversations `ccd archive` moved into ccd's state dir,
//!   searched through the index (which covers them: `index`'s
//!   `archives`, each decompressed once), else read decompressed by the
//!   scan's matcher.
//! - [`service`]: one search of this machine's sessions as `ccd search`
//!   and the daemon's `sessions.search` answer it (the request parsed, the
//!   sessions picked, the rows built, the kept index file under its lock).
//!
//! A crate of its own, not a module of ccd-claude: it will hold the index
//! (and its dependencies), which nothing else that reads Claude Code's
//! files needs.

pub mod archived;
pub mod extract;
pub mod incremental;
pub mod index;
pub mod query;
pub mod scan;
pub mod service;

pub use extract::{Message, Role};
pub use query::{Query, QueryError, Snippet};
pub use scan::{scan, Filters, Hit, ScanStats, Source};
