//! What every request passes before a handler sees it, in this order:
//! the security headers are put on every response (refusals included);
//! `Host` must name this server (DNS rebinding); `Origin` must be the
//! page's own for anything but GET/HEAD and for a WebSocket upgrade
//! (cross-site requests); and, but for the token login (`GET /?token=`)
//! and a prompt link's routes ([`crate::link::OPEN_ROUTES`], which check
//! the link's own token instead), the session cookie must be valid for the
//! token file's generation now.
//!
//! Pure request checks on the shared [`State`](crate::api::State); the
//! only I/O is the token file's `stat` (and a small read when it changed).

use crate::api::State;
use crate::auth;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The headers every response carries.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
];

/// The page shown to a browser without a valid cookie (no detail).
pub const LOGIN_NEEDED: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>ccd</title></head><body><h1>Log in</h1><p>Open the URL <code>ccd web</code> printed (or scan its QR code).</p></body></html>\n";

/// Puts [`SECURITY_HEADERS`] on the response, whatever it is.
pub async fn headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    for (k, v) in SECURITY_HEADERS {
        h.insert(*k, HeaderValue::from_static(v));
    }
    resp
}

/// `Host`, then `Origin`, then the cookie.
pub async fn check(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    let api = path.starts_with("/api/");
    let h = req.headers();
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok());
    let Some(host) = host.filter(|v| state.is_own_host(v)) else {
        tracing::info!(path, host = ?h.get(header::HOST), "refused: Host is not this server");
        return forbidden("Host does not name this server");
    };
    let _ = host;
    let upgrade = is_upgrade(h);
    if (req.method() != Method::GET && req.method() != Method::HEAD) || upgrade {
        let origin = h.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        if !origin.is_some_and(|o| state.is_own_origin(o)) {
            tracing::info!(path, origin = ?h.get(header::ORIGIN), upgrade, "refused: Origin is not this page's");
            return forbidden("Origin is not this page's own");
        }
    }
    let login = path == "/" && req.uri().query().is_some_and(|q| query_token(q).is_some());
    let link = crate::link::OPEN_ROUTES.contains(&path.as_str());
    if !login && !link && !state.logged_in(h) {
        return if api {
            json_error(StatusCode::UNAUTHORIZED, "log in first", "login")
        } else {
            (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                LOGIN_NEEDED,
            )
                .into_response()
        };
    }
    next.run(req).await
}

/// A WebSocket upgrade request (`Upgrade: websocket`, any case).
pub fn is_upgrade(h: &HeaderMap) -> bool {
    h.get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The `token` parameter of a query string.
pub fn query_token(q: &str) -> Option<&str> {
    q.split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .filter(|t| !t.is_empty())
}

/// The session cookie of a request.
pub fn cookie(h: &HeaderMap) -> Option<&str> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| auth::cookie_value(v, auth::COOKIE))
}

/// 403 with a one-line reason.
pub fn forbidden(why: &'static str) -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("forbidden: {why}\n"),
    )
        .into_response()
}

/// `{"error": message, "code": code}` with `status`.
pub fn json_error(status: StatusCode, message: &str, code: &str) -> Response {
    let body = serde_json::json!({"error": message, "code": code});
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|_| status.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_in_queries() {
        assert_eq!(query_token("token=abc"), Some("abc"));
        assert_eq!(query_token("x=1&token=abc"), Some("abc"));
        assert_eq!(query_token("token="), None);
        assert_eq!(query_token("tokens=abc"), None);
    }
}
