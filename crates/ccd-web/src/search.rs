//! The page's content search (`POST /api/search`, issue 55): what the
//! page asks ([`Request`]: the words, which sessions, regex or not, whose
//! words, how many; each checked here and made the daemon's
//! [`SearchParams`], an unknown value refused, never forwarded raw), each machine's `sessions.search`
//! answer made the page's hits ([`hits_of`]) and every machine's merged
//! ([`merge`]): best first across machines, at most the limit asked.
//!
//! The route ([`route`]) calls every machine's daemon at once (each call
//! on tokio's blocking pool, as every call of [`crate::daemon`]) and holds
//! no lock across an await; the rest is pure. A hit's text (the snippet, the title, the
//! folder) is data for the page, which puts it in with `textContent`
//! only; its length is bounded here ([`limits::SNIPPET_CHARS`]).

use crate::api::{body, daemon_error, State};
use crate::daemon::CallError;
use crate::guard::json_error;
use crate::limits;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ccd_protocol::methods::session::{SearchParams, SearchResult, SearchScope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The roles a search may be narrowed to (`sessions.search`'s `roles`).
pub const ROLES: [&str; 5] = ["user", "assistant", "tool", "title", "summary"];

/// What the page asks: `{"query", "scope"?, "regex"?, "roles"?, "limit"?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub query: String,
    /// `all` (default), `live` or `dead`.
    #[serde(default)]
    pub scope: Option<String>,
    /// The query is a regular expression (the daemon compiles it; a bad
    /// one is its 400).
    #[serde(default)]
    pub regex: bool,
    /// Only messages of these roles (of [`ROLES`], each once); every role
    /// when absent or empty.
    #[serde(default)]
    pub roles: Option<Vec<String>>,
    /// At most this many hits (default [`limits::SEARCH_HITS_DEFAULT`],
    /// at most [`limits::SEARCH_HITS`]).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Why a search request is refused (400 with these words).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadRequest {
    #[error("give some words to search for")]
    Empty,
    #[error("the query is longer than {max} characters")]
    TooLong { max: usize },
    #[error("scope is all, live or dead")]
    Scope,
    #[error("roles are user, assistant, tool, title or summary, each once")]
    Roles,
    #[error("limit is 1 to {max}")]
    Limit { max: u32 },
}

impl Request {
    /// The daemon's params for this request, checked.
    pub fn params(&self) -> Result<SearchParams, BadRequest> {
        let query = self.query.trim();
        if query.is_empty() {
            return Err(BadRequest::Empty);
        }
        if query.chars().count() > limits::SEARCH_QUERY_CHARS {
            return Err(BadRequest::TooLong {
                max: limits::SEARCH_QUERY_CHARS,
            });
        }
        let scope = match self.scope.as_deref() {
            None | Some("all") => SearchScope::All,
            Some("live") => SearchScope::Live,
            Some("dead") => SearchScope::Dead,
            Some(_) => return Err(BadRequest::Scope),
        };
        let mut roles: Vec<String> = Vec::new();
        for r in self.roles.iter().flatten() {
            if !ROLES.contains(&r.as_str()) || roles.contains(r) {
                return Err(BadRequest::Roles);
            }
            roles.push(r.clone());
        }
        let limit = self.limit.unwrap_or(limits::SEARCH_HITS_DEFAULT);
        if limit == 0 || limit > limits::SEARCH_HITS {
            return Err(BadRequest::Limit {
                max: limits::SEARCH_HITS,
            });
        }
        let mut p = SearchParams::new(query);
        p.scope = scope;
        p.regex = self.regex;
        p.roles = roles;
        p.limit = limit;
        Ok(p)
    }
}

/// The text around the match: `matched` is what the page marks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snippet {
    pub before: String,
    pub matched: String,
    pub after: String,
}

/// One hit as the page gets it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub machine: String,
    pub session: String,
    /// The session's title when the machine's last listing has it.
    pub title: Option<String>,
    pub folder: Option<String>,
    /// `live`, `dead`, `archived`, `unknown`.
    pub state: String,
    /// The best message's time (RFC 3339), when known.
    pub timestamp: Option<String>,
    /// The best message's role.
    pub role: String,
    pub snippet: Snippet,
    /// The session's matching messages.
    pub matches: u64,
    pub score: f64,
}

/// Each machine named, with why it did not answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    pub name: String,
    pub error: Option<String>,
}

/// `POST /api/search`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub machines: Vec<Machine>,
    pub hits: Vec<Hit>,
    /// More matched than shown (a machine said so, or the merge cut).
    pub truncated: bool,
}

/// The last `n` characters of `s`.
fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

fn head_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The page's hits of one machine's answer; `titles` gives a session's
/// title from the machine's last listing.
pub fn hits_of(
    machine: &str,
    r: &SearchResult,
    title: impl Fn(&str) -> Option<String>,
) -> Vec<Hit> {
    let n = limits::SNIPPET_CHARS;
    r.hits
        .iter()
        .map(|h| Hit {
            machine: machine.to_string(),
            session: h.session_id.clone(),
            title: title(&h.session_id),
            folder: h.folder.clone(),
            state: match serde_json::to_value(h.state) {
                Ok(Value::String(s)) => s,
                _ => "unknown".into(),
            },
            timestamp: h.timestamp.clone(),
            role: h.role.clone(),
            snippet: Snippet {
                before: tail_chars(&h.snippet.before, n),
                matched: head_chars(&h.snippet.matched, n),
                after: head_chars(&h.snippet.after, n),
            },
            matches: h.matches,
            score: h.score,
        })
        .collect()
}

/// Every machine's hits as one list: best score first, ties newest first
/// (then each machine's own order), at most `limit`.
pub fn merge(mut hits: Vec<Hit>, limit: usize) -> (Vec<Hit>, bool) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.timestamp.cmp(&a.timestamp))
    });
    let cut = hits.len() > limit;
    hits.truncate(limit);
    (hits, cut)
}

/// `POST /api/search {"query","scope"?,"regex"?,"roles"?,"limit"?}`: every machine's
/// `sessions.search` at once, merged best first (see this module's functions);
/// each machine named with why when it did not answer (another one
/// within [`limits::REMOTE_SEARCH_WAIT`]). A read: allowed read-only too.
/// At most [`limits::SEARCHES`] at once (one more: 429); a query every
/// machine refuses as invalid (a bad regex) is 400 with the daemon's words.
pub async fn route(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    b: Result<Json<Request>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let req = match body(b) {
        Ok(r) => r,
        Err(r) => return r,
    };
    let params = match req.params() {
        Ok(p) => p,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e.to_string(), "query"),
    };
    let Ok(_slot) = state.searches.clone().try_acquire_owned() else {
        return json_error(
            StatusCode::TOO_MANY_REQUESTS,
            "too many searches at once: try again in a moment",
            "busy",
        );
    };
    let limit = params.limit as usize;
    let value = match serde_json::to_value(&params) {
        Ok(v) => v,
        Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), "query"),
    };
    tracing::info!(
        machines = state.machines.len(),
        chars = params.query.chars().count(),
        scope = ?params.scope,
        regex = params.regex,
        roles = params.roles.len(),
        "search"
    );
    let asks = state.machines.iter().map(|m| {
        let v = value.clone();
        async move {
            let call = m.call("sessions.search", v);
            let r = if m.is_remote() {
                match tokio::time::timeout(limits::REMOTE_SEARCH_WAIT, call).await {
                    Ok(r) => r.map_err(Some),
                    Err(_) => Err(None),
                }
            } else {
                call.await.map_err(Some)
            };
            (m, r)
        }
    });
    let answers = futures_util::future::join_all(asks).await;
    let mut machines = Vec::new();
    let mut hits = Vec::new();
    let mut truncated = false;
    let mut invalid: Option<Response> = None;
    let mut answered = 0usize;
    for (m, r) in answers {
        let r = r.and_then(|v| {
            serde_json::from_value::<SearchResult>(v).map_err(|e| {
                Some(CallError::Client(ccd_client::ClientError::Protocol(
                    e.to_string(),
                )))
            })
        });
        let error = match r {
            Ok(res) => {
                answered += 1;
                truncated |= res.truncated;
                let listed = m.listed.lock().unwrap_or_else(|p| p.into_inner());
                hits.extend(hits_of(&m.name, &res, |sid| title_in(&listed.rows, sid)));
                None
            }
            Err(None) => Some(format!(
                "{} did not answer within {} s",
                m.name,
                limits::REMOTE_SEARCH_WAIT.as_secs()
            )),
            Err(Some(e)) => {
                tracing::info!(host = %m.name, error = %e, "search refused");
                if e.rpc().is_some_and(|r| r.code == -32602) {
                    invalid = Some(daemon_error(&e));
                }
                Some(e.to_string())
            }
        };
        machines.push(Machine {
            name: m.name.clone(),
            error,
        });
    }
    if answered == 0 {
        if let Some(r) = invalid {
            return r;
        }
    }
    let (hits, cut) = merge(hits, limit);
    let answer = Answer {
        machines,
        hits,
        truncated: truncated || cut,
    };
    (StatusCode::OK, Json(answer)).into_response()
}

/// A session's title in `sessions.list` rows.
pub fn title_in(rows: &[Value], sid: &str) -> Option<String> {
    rows.iter()
        .find(|r| r.get("session_id").and_then(Value::as_str) == Some(sid))
        .and_then(|r| r.get("title"))
        .and_then(Value::as_str)
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_protocol::methods::session::SessionState;
    use ccd_protocol::search::{SearchHit, SearchSnippet};

    fn req(q: &str, scope: Option<&str>, limit: Option<u32>) -> Request {
        Request {
            query: q.into(),
            scope: scope.map(String::from),
            regex: false,
            roles: None,
            limit,
        }
    }

    fn roles(rs: &[&str]) -> Request {
        Request {
            roles: Some(rs.iter().map(|r| r.to_string()).collect()),
            ..req("x", None, None)
        }
    }

    #[test]
    fn requests_are_checked() {
        let p = req("  auth bug ", Some("dead"), Some(5)).params().unwrap();
        assert_eq!(p.query, "auth bug");
        assert_eq!(p.scope, SearchScope::Dead);
        assert_eq!(p.limit, 5);
        assert_eq!(
            req("x", None, None).params().unwrap().limit,
            limits::SEARCH_HITS_DEFAULT
        );
        assert_eq!(req(" ", None, None).params(), Err(BadRequest::Empty));
        let long = "x".repeat(limits::SEARCH_QUERY_CHARS + 1);
        assert!(matches!(
            req(&long, None, None).params(),
            Err(BadRequest::TooLong { .. })
        ));
        assert!(req(&"é".repeat(limits::SEARCH_QUERY_CHARS), None, None)
            .params()
            .is_ok());
        assert_eq!(
            req("x", Some("held"), None).params(),
            Err(BadRequest::Scope)
        );
        let p = Request {
            regex: true,
            ..roles(&["user", "assistant"])
        }
        .params()
        .unwrap();
        assert!(p.regex);
        assert_eq!(p.roles, ["user", "assistant"]);
        assert!(roles(&[]).params().unwrap().roles.is_empty());
        assert!(!req("x", None, None).params().unwrap().regex);
        assert_eq!(roles(&["system"]).params(), Err(BadRequest::Roles));
        assert_eq!(roles(&["user", "user"]).params(), Err(BadRequest::Roles));
        assert!(req("x", None, Some(0)).params().is_err());
        assert!(req("x", None, Some(limits::SEARCH_HITS + 1))
            .params()
            .is_err());
    }

    fn hit(sid: &str, score: f64, ts: &str) -> SearchHit {
        SearchHit {
            host: "local".into(),
            session_id: sid.into(),
            state: SessionState::Dead,
            folder: Some("/w/p".into()),
            path: "/x.jsonl".into(),
            role: "user".into(),
            timestamp: Some(ts.into()),
            offset: 0,
            snippet: SearchSnippet {
                before: "a".repeat(1000),
                matched: "auth bug".into(),
                after: "b".repeat(1000),
            },
            matches: 1,
            score,
        }
    }

    #[test]
    fn hits_are_bounded_titled_and_merged_best_first() {
        let r = SearchResult {
            hits: vec![
                hit("s1", 1.0, "2026-11-01T00:00:00Z"),
                hit("s2", 3.0, "2026-11-01T00:00:00Z"),
            ],
            sessions: 2,
            truncated: false,
            indexed: true,
        };
        let rows = vec![serde_json::json!({"session_id":"s1","title":"Fix it"})];
        let a = hits_of("local", &r, |sid| title_in(&rows, sid));
        assert_eq!(a[0].title.as_deref(), Some("Fix it"));
        assert_eq!(a[1].title, None);
        assert_eq!(a[0].state, "dead");
        assert_eq!(a[0].snippet.before.chars().count(), limits::SNIPPET_CHARS);
        assert_eq!(a[0].snippet.after.chars().count(), limits::SNIPPET_CHARS);
        let far = SearchResult {
            hits: vec![
                hit("f1", 2.0, "2026-11-02T00:00:00Z"),
                hit("f2", 1.0, "2026-11-03T00:00:00Z"),
            ],
            ..SearchResult::default()
        };
        let mut all = a;
        all.extend(hits_of("far", &far, |_| None));
        let (m, cut) = merge(all, 3);
        let ids: Vec<&str> = m.iter().map(|h| h.session.as_str()).collect();
        assert_eq!(ids, ["s2", "f1", "f2"], "score, then newest first");
        assert_eq!(m[1].machine, "far");
        assert!(cut);
    }
}
