//! Prompt links (issue 53, item 3): a notification's link
//! (`<web_public_url>/p#<token>`, minted by the daemon or `ccd notify`
//! with `ccd_notify::link`) opens one permission prompt here and can
//! answer it once, without a login.
//!
//! The token grants exactly this: `POST /api/link/view {token}` shows the
//! prompt it names (the session's title and folder, the tool, the command
//! or path) while that prompt is still the session's, and `POST
//! /api/link/respond {token, choice: "yes"|"no"}` answers it with
//! `session.respond` naming the prompt id (a stale one is refused by the
//! daemon, 409 with its words). Nothing else: no cookie is issued, no
//! list, no other session or prompt, no typing, no message, not "always"
//! (which would answer future prompts too), no second answer. `GET /p`
//! (the page), `/static/link.js` and `/static/app.css` are the only other
//! routes served without a cookie; `Host` and `Origin` are checked as for
//! every route (guard.rs), the CSP is the same.
//!
//! What is checked, in order: the failed-attempt limit of the client's
//! address (the login's: a forged or malformed token counts as a failed
//! attempt); the token (size, MAC with the key file read now — a `ccd web
//! --revoke` rotates it —, expiry, at most a day away); the machine (one
//! this server serves, by its name); for an answer, `--read-only`, then
//! the nonce ([`UsedLinks::take`]: single use), then the daemon.
//!
//! [`UsedLinks`] remembers used nonces until their expiry, at most
//! [`limits::USED_LINKS`]; past that the one expiring first is forgotten
//! and every token expiring no later than it is refused from then on (a
//! watermark), so forgetting never lets a link be used twice. A nonce is
//! given back only when the machine could not be reached (the daemon never
//! saw the answer). Plain data behind a mutex held for a map operation.

use crate::api::{self, State};
use crate::daemon::CallError;
use crate::guard::json_error;
use crate::limits;
use crate::server::Peer;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use ccd_notify::link::{Claims, LinkError};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const LINK_HTML: &str = include_str!("../assets/link.html");
const LINK_JS: &str = include_str!("../assets/link.js");

/// The routes a prompt link uses, served without a cookie.
pub const OPEN_ROUTES: [&str; 5] = [
    "/p",
    "/static/link.js",
    "/static/app.css",
    "/api/link/view",
    "/api/link/respond",
];

/// Why a nonce is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Spent {
    #[error("this link was used already")]
    Used,
    /// Older than the watermark: its nonce may have been forgotten.
    #[error("this link can no longer be used (too many links were used since)")]
    Forgotten,
}

/// Used nonces (see the module header).
#[derive(Debug, Default)]
pub struct UsedLinks {
    inner: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    /// nonce → expiry (unix ms).
    by_nonce: HashMap<String, i64>,
    /// Tokens expiring at or before this are refused.
    floor: i64,
}

impl UsedLinks {
    /// Marks `c`'s nonce used at `now` (unix ms), unless it was.
    pub fn take(&self, c: &Claims, now: i64) -> Result<(), Spent> {
        let mut u = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        u.by_nonce.retain(|_, exp| *exp > now);
        if c.exp <= u.floor {
            return Err(Spent::Forgotten);
        }
        if u.by_nonce.contains_key(&c.n) {
            return Err(Spent::Used);
        }
        while u.by_nonce.len() >= limits::USED_LINKS {
            let Some((n, exp)) = u
                .by_nonce
                .iter()
                .min_by_key(|(_, exp)| **exp)
                .map(|(n, e)| (n.clone(), *e))
            else {
                break;
            };
            u.by_nonce.remove(&n);
            u.floor = u.floor.max(exp);
            tracing::info!(
                floor = u.floor,
                "prompt links: the used-link memory is full; links expiring before the oldest forgotten one are refused"
            );
        }
        if c.exp <= u.floor {
            return Err(Spent::Forgotten);
        }
        u.by_nonce.insert(c.n.clone(), c.exp);
        Ok(())
    }

    /// Gives `nonce` back (its answer never reached the daemon).
    pub fn give_back(&self, nonce: &str) {
        let mut u = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        u.by_nonce.remove(nonce);
    }

    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_nonce
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `GET /p`: the prompt-link page (it reads the token from the fragment).
pub async fn page() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        LINK_HTML,
    )
        .into_response()
}

pub async fn link_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        LINK_JS,
    )
        .into_response()
}

/// The token's claims, its machine served here; or the refusal.
fn check(
    state: &State,
    ip: IpAddr,
    token: &str,
) -> Result<(Claims, Arc<crate::daemon::Machine>), Response> {
    let t0 = Instant::now();
    if state.failures.blocked(ip, t0) {
        tracing::warn!(%ip, "prompt link refused: too many failed attempts");
        return Err(json_error(
            StatusCode::TOO_MANY_REQUESTS,
            "too many failed attempts; wait a minute",
            "rate",
        ));
    }
    let key = match state.link_keys.read() {
        Ok(k) => k,
        Err(e) => {
            // No key: no link was ever made with this state dir (or it is
            // unusable); nothing can be valid.
            tracing::warn!(error = %e, "prompt link refused: the link key cannot be read");
            state.failures.record(ip, t0);
            return Err(json_error(
                StatusCode::UNAUTHORIZED,
                &LinkError::Forged.to_string(),
                "link",
            ));
        }
    };
    let claims = match key.verify(token, now_ms()) {
        Ok(c) => c,
        Err(LinkError::Expired) => {
            return Err(json_error(
                StatusCode::GONE,
                &LinkError::Expired.to_string(),
                "expired",
            ))
        }
        Err(e) => {
            state.failures.record(ip, t0);
            tracing::warn!(%ip, error = %e, "prompt link refused");
            return Err(json_error(StatusCode::UNAUTHORIZED, &e.to_string(), "link"));
        }
    };
    let Some(m) = state.machine(Some(&claims.m)).cloned() else {
        return Err(json_error(
            StatusCode::NOT_FOUND,
            "this ccd web does not serve that link's machine",
            "machine",
        ));
    };
    Ok((claims, m))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewBody {
    token: String,
}

type Body<T> = Result<Json<T>, axum::extract::rejection::JsonRejection>;

/// `POST /api/link/view {token}`: the prompt, while it is the session's.
pub async fn view(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(Peer(ip)): Extension<Peer>,
    b: Body<ViewBody>,
) -> Response {
    let b = match api::body(b) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (c, m) = match check(&state, ip, &b.token) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let row = match m.call("sessions.get", json!({"session": c.s})).await {
        Ok(r) => r,
        Err(e) => return api::daemon_error(&e),
    };
    let prompts = m.prompts.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let shown = crate::sessions::view(&m.name, std::slice::from_ref(&row), &prompts);
    let Some(s) = shown.into_iter().find(|s| s.id == c.s) else {
        return stale();
    };
    let Some(p) = s.prompt.filter(|p| p.id == c.p) else {
        return stale();
    };
    // The link answers yes or no only.
    let options: Vec<Value> = p
        .options
        .iter()
        .filter(|o| o.key == "yes" || o.key == "no")
        .map(|o| json!({"key": o.key, "label": o.label}))
        .collect();
    api::ok(json!({
        "machine": m.name,
        "session": s.id,
        "title": s.title,
        "cwd": s.cwd,
        "prompt": {"id": p.id, "tool": p.tool, "detail": p.detail, "options": options},
        "expires_at": c.exp,
    }))
}

fn stale() -> Response {
    json_error(
        StatusCode::CONFLICT,
        "that prompt was answered or went: the session does not show it now",
        "stale",
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RespondBody {
    token: String,
    choice: String,
}

/// `POST /api/link/respond {token, choice}`: answers the token's prompt,
/// once.
pub async fn respond(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(Peer(ip)): Extension<Peer>,
    b: Body<RespondBody>,
) -> Response {
    let b = match api::body(b) {
        Ok(b) => b,
        Err(r) => return r,
    };
    if !matches!(b.choice.as_str(), "yes" | "no") {
        return json_error(
            StatusCode::BAD_REQUEST,
            "a link answers yes or no",
            "choice",
        );
    }
    let (c, m) = match check(&state, ip, &b.token) {
        Ok(x) => x,
        Err(r) => return r,
    };
    if state.read_only {
        return crate::guard::forbidden("this ccd web is read-only (--read-only)");
    }
    if let Err(e) = state.used_links.take(&c, now_ms()) {
        tracing::info!(%ip, session = %c.s, error = %e, "prompt link refused");
        return json_error(StatusCode::GONE, &e.to_string(), "used");
    }
    tracing::info!(%ip, host = %m.name, session = %c.s, prompt = %c.p, choice = %b.choice, "prompt link answer");
    let params = json!({"session": c.s, "choice": b.choice, "prompt": c.p});
    match m.call("session.respond", params).await {
        Ok(v) => api::ok(v),
        Err(e) => {
            if matches!(e, CallError::Unreachable { .. }) {
                state.used_links.give_back(&c.n);
            }
            tracing::info!(host = %m.name, error = %e, "prompt link answer refused");
            api::daemon_error(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(n: &str, exp: i64) -> Claims {
        Claims {
            v: 1,
            m: "local".into(),
            s: "s".into(),
            p: "p".into(),
            exp,
            n: n.into(),
        }
    }

    #[test]
    fn a_nonce_is_taken_once_and_forgotten_after_its_expiry() {
        let u = UsedLinks::default();
        assert_eq!(u.take(&claims("a", 100), 0), Ok(()));
        assert_eq!(u.take(&claims("a", 100), 1), Err(Spent::Used));
        u.give_back("a");
        assert_eq!(u.take(&claims("a", 100), 2), Ok(()));
        assert_eq!(u.take(&claims("b", 200), 150), Ok(()));
        assert_eq!(u.len(), 1, "a expired and was dropped");
    }

    #[test]
    fn past_the_bound_the_oldest_is_forgotten_and_nothing_older_passes() {
        let u = UsedLinks::default();
        for i in 0..limits::USED_LINKS {
            let exp = 1_000 + i as i64;
            u.take(&claims(&format!("n{i}"), exp), 0).unwrap();
        }
        assert_eq!(u.len(), limits::USED_LINKS);
        // One more: the one expiring first (n0, 1000) is forgotten...
        u.take(&claims("new", 5_000), 0).unwrap();
        assert_eq!(u.len(), limits::USED_LINKS);
        // ...and it still cannot be used again, nor any unused link
        // expiring no later than it.
        assert_eq!(u.take(&claims("n0", 1_000), 0), Err(Spent::Forgotten));
        assert_eq!(u.take(&claims("fresh", 999), 0), Err(Spent::Forgotten));
        // The rest are remembered as used.
        assert_eq!(u.take(&claims("n1", 1_001), 0), Err(Spent::Used));
        assert_eq!(u.take(&claims("other", 6_000), 0), Ok(()));
    }
}
