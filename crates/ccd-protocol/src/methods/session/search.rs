//! `sessions.search`: find sessions by what was said in them (issue 55),
//! answered by the daemon from the search index it keeps open, with the
//! same rows `ccd search --json` prints ([`SearchHit`]).

use serde::{Deserialize, Serialize};

use crate::methods::{Method, Wait};
use crate::search::SearchHit;

/// `sessions.search`.
pub struct SessionsSearch;

impl Method for SessionsSearch {
    const NAME: &'static str = "sessions.search";
    type Params = SearchParams;
    type Result = SearchResult;
    /// A query that does not parse (an empty one, a bad regex) is
    /// `invalid_params`, with the reason.
    const ERRORS: &'static [crate::ErrorCode] = &[];
    /// A search without a ready index reads every transcript.
    const WAIT: Wait = Wait::Trim;
}

/// The most hits one search answers with.
pub const SEARCH_LIMIT_MAX: u32 = 1_000;

/// The hits one search answers with when `limit` is not given.
pub const SEARCH_LIMIT_DEFAULT: u32 = 20;

fn default_limit() -> u32 {
    SEARCH_LIMIT_DEFAULT
}

/// Which sessions a search looks in, by liveness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchScope {
    /// Every session, live and dead.
    #[default]
    All,
    /// Sessions whose process runs (held by ccd or elsewhere).
    Live,
    /// Sessions whose process is gone (archived ones included).
    Dead,
}

/// Params of `sessions.search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchParams {
    /// What the user typed: words and `"quoted phrases"`, all in one
    /// message (or a regex with `regex`).
    pub query: String,
    #[serde(default)]
    pub regex: bool,
    /// Only sessions whose folder is this one or inside it.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Only messages at or after this time (RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub scope: SearchScope,
    /// Only messages of these roles (`user`, `assistant`, `tool`,
    /// `title`, `summary`); every role when empty.
    #[serde(default)]
    pub roles: Vec<String>,
    /// At most this many hits (one per session), best first; at most
    /// [`SEARCH_LIMIT_MAX`].
    #[serde(default = "default_limit")]
    pub limit: u32,
}

impl SearchParams {
    /// A search for `query` with every other setting at its default.
    pub fn new(query: impl Into<String>) -> SearchParams {
        SearchParams {
            query: query.into(),
            regex: false,
            cwd: None,
            since: None,
            scope: SearchScope::All,
            roles: Vec::new(),
            limit: SEARCH_LIMIT_DEFAULT,
        }
    }
}

/// Result of `sessions.search`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Best first (the rank of `ccd search --help`), ties newest first;
    /// `host` is `local`.
    pub hits: Vec<SearchHit>,
    /// Sessions whose transcripts were looked in (after the filters).
    #[serde(default)]
    pub sessions: u64,
    /// Whether more sessions matched than `limit`.
    #[serde(default)]
    pub truncated: bool,
    /// Whether the answer came from the daemon's index (else a scan).
    #[serde(default)]
    pub indexed: bool,
}
