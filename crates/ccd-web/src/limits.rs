//! Every bound of `ccd web`, in one place (docs/architecture.md, "ccd
//! web", lists them; each has a test that pushes past it).

use std::time::Duration;

/// Connections served at once; one more is closed at accept.
pub const CONNECTIONS: usize = 64;
/// WebSockets open at once; one more is refused with 503.
pub const WEBSOCKETS: usize = 16;
/// Bytes queued for one WebSocket: past this a slow client's oldest
/// screen frames are dropped (the next frame it gets is a full one), and
/// a socket still past it with nothing left to drop is closed.
pub const WS_QUEUE_BYTES: usize = 1 << 20;
/// A JSON request body (actions).
pub const BODY_BYTES: usize = 64 * 1024;
/// How often an open WebSocket re-checks its cookie (a `--revoke` ends
/// it within this).
pub const WS_COOKIE_RECHECK: Duration = Duration::from_secs(2);
/// A message from the page on the WebSocket.
pub const WS_MESSAGE_BYTES: usize = 4096;
/// Sessions one WebSocket watches at once (a new `watch` replaces it).
pub const WATCHED_PER_SOCKET: usize = 1;
/// Session cookies kept; the oldest is evicted past this.
pub const COOKIES: usize = 64;
/// Failed token attempts per client IP within a minute; then 429.
pub const FAILED_LOGINS_PER_MINUTE: usize = 5;
/// Client addresses whose failures are remembered.
pub const FAILURE_IPS: usize = 4096;
/// A request's head must arrive within this (a slow client holds no slot).
pub const HEADER_READ: Duration = Duration::from_secs(10);
/// A TLS handshake must finish within this.
pub const TLS_HANDSHAKE: Duration = Duration::from_secs(10);
/// Sessions listed (`sessions.list` pages of 500).
pub const LISTED: usize = 5000;
/// Conversation items in a tail.
pub const TAIL_ITEMS: usize = 60;
/// Text sent with `/send` or `/keys` (characters, before the daemon's own
/// checks).
pub const TEXT_CHARS: usize = 16 * 1024;
/// `/api/sessions` waits this long for another machine's fresh listing;
/// past it, that machine's last listing is given, with why (a stalled
/// machine never holds the others' list).
pub const REMOTE_LIST_WAIT: Duration = Duration::from_secs(3);
/// Used prompt-link nonces remembered (each until its link expires); past
/// this the one expiring first is forgotten and links expiring no later
/// than it are refused (crate::link).
pub const USED_LINKS: usize = 1024;
/// A search's query (characters, trimmed); a longer one is refused (400).
pub const SEARCH_QUERY_CHARS: usize = 512;
/// Hits one search answers with, every machine merged (`limit`, at most).
pub const SEARCH_HITS: u32 = 100;
/// Hits when the page does not say.
pub const SEARCH_HITS_DEFAULT: u32 = 30;
/// Searches running at once (each a daemon call per machine); one more
/// is refused with 429.
pub const SEARCHES: usize = 4;
/// Characters of a snippet's each part (before, matched, after).
pub const SNIPPET_CHARS: usize = 160;
/// `/api/search` waits this long for another machine's answer; past it,
/// that machine is named with why (the others' hits are shown).
pub const REMOTE_SEARCH_WAIT: Duration = Duration::from_secs(10);
