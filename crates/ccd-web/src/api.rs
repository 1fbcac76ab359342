//! The routes: the token login, the page and its assets, the session list,
//! and the actions (each one daemon call, with the daemon's own guards:
//! the prompt id of `session.respond`, the text rules of `session.send`).
//! The content search's route is [`crate::search::route`].
//!
//! Every machine served (`--host`, `ui_hosts`) has its routes under
//! `/api/m/<machine>/…`; the routes without `/m/<machine>` are the first
//! machine's (`local` unless the host list says otherwise).
//!
//! [`State`] is shared by every connection (an `Arc`); it holds no lock
//! across an await. The background tasks ([`start_background`]): each
//! machine's keeper thread (its link and events) and list task (subscribed
//! before the keeper starts), which lists that machine's sessions at the
//! start and again after its events (coalesced), keeps
//! them as its last listing and publishes the whole list's JSON in `list`
//! for every WebSocket: a slow machine delays only its own rows.

use crate::auth::{Cookies, Failures};
use crate::daemon::{CallError, Machine};
use crate::guard::{self, json_error};
use crate::limits;
use crate::server::{Peer, Plan};
use crate::sessions;
use crate::token::{self, TokenFile};
use axum::extract::{DefaultBodyLimit, Path, Query};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

/// What every request shares.
pub struct State {
    pub hosts: Vec<String>,
    pub origins: Vec<String>,
    /// With TLS: the certificate's names are this server's too (on the
    /// bound port).
    pub tls: Option<(crate::tls::Acceptor, u16)>,
    pub read_only: bool,
    pub secure_cookie: bool,
    pub tokens: TokenFile,
    pub cookies: Cookies,
    pub failures: Failures,
    /// The prompt links' key (`<state dir>/web-link-key`, beside the
    /// token file; re-read at each use) and their used nonces.
    pub link_keys: ccd_notify::link::KeyFile,
    pub used_links: crate::link::UsedLinks,
    /// Every machine served, in the order given (the first is the one
    /// of the routes without `/m/<machine>`).
    pub machines: Vec<Arc<Machine>>,
    /// The latest list, as the JSON `/api/sessions` answers (the list task
    /// writes it; WebSockets read it).
    pub list: watch::Sender<Arc<String>>,
    /// Slots of [`limits::WEBSOCKETS`].
    pub websockets: Arc<Semaphore>,
    /// Slots of [`limits::SEARCHES`].
    pub searches: Arc<Semaphore>,
}

impl State {
    pub fn new(
        plan: &Plan,
        bound: SocketAddr,
        tls: Option<crate::tls::Acceptor>,
        tokens: TokenFile,
        machines: Vec<Arc<Machine>>,
    ) -> Self {
        let state_dir = tokens
            .path()
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        Self {
            link_keys: ccd_notify::link::KeyFile::in_dir(&state_dir),
            used_links: crate::link::UsedLinks::default(),
            hosts: plan.hosts(bound),
            origins: plan.origins(bound),
            tls: tls.map(|a| (a, bound.port())),
            read_only: plan.read_only,
            secure_cookie: plan.secure_cookie(),
            tokens,
            cookies: Cookies::default(),
            failures: Failures::default(),
            machines,
            list: watch::channel(Arc::new(String::new())).0,
            websockets: Arc::new(Semaphore::new(limits::WEBSOCKETS)),
            searches: Arc::new(Semaphore::new(limits::SEARCHES)),
        }
    }

    /// The machine named `name`, or the first one (`None`: the routes
    /// without `/m/<machine>`).
    pub fn machine(&self, name: Option<&str>) -> Option<&Arc<Machine>> {
        match name {
            None => self.machines.first(),
            Some(n) => self.machines.iter().find(|m| m.name == n),
        }
    }

    /// Whether `host` (a `Host` value) names this server.
    pub fn is_own_host(&self, host: &str) -> bool {
        if self.hosts.iter().any(|ok| ok.eq_ignore_ascii_case(host)) {
            return true;
        }
        let Some((tls, port)) = &self.tls else {
            return false;
        };
        host.rsplit_once(':')
            .is_some_and(|(name, p)| p.parse::<u16>().is_ok_and(|p| p == *port) && tls.names(name))
    }

    /// Whether `origin` (an `Origin` value) is a page of this server.
    pub fn is_own_origin(&self, origin: &str) -> bool {
        if self
            .origins
            .iter()
            .any(|ok| ok.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        self.tls.is_some()
            && origin
                .strip_prefix("https://")
                .is_some_and(|h| self.is_own_host(h))
    }

    /// Whether the request carries a cookie valid now (the token file's
    /// generation re-read: a `--revoke` takes effect on the next request).
    pub fn logged_in(&self, h: &HeaderMap) -> bool {
        guard::cookie(h).is_some_and(|value| self.cookie_valid(value))
    }

    /// Whether `value` is a cookie valid now.
    pub fn cookie_valid(&self, value: &str) -> bool {
        match self.tokens.generation() {
            Ok(g) => self.cookies.valid(value, g),
            Err(e) => {
                tracing::error!(error = %e, "the token file cannot be read: nobody is let in");
                false
            }
        }
    }
}

pub fn router(state: Arc<State>) -> Router {
    let session = Router::new()
        .route("/respond", post(respond))
        .route("/send", post(send))
        .route("/keys", post(keys))
        .route("/interrupt", post(interrupt))
        .route("/kill", post(kill))
        .route("/fork", post(fork))
        .route("/resume", post(resume));
    Router::new()
        .route("/", get(index))
        .route("/static/app.js", get(app_js))
        .route("/static/app.css", get(app_css))
        .route("/p", get(crate::link::page))
        .route("/static/link.js", get(crate::link::link_js))
        .route("/api/link/view", post(crate::link::view))
        .route("/api/link/respond", post(crate::link::respond))
        .route("/api/sessions", get(list))
        .route("/api/search", post(crate::search::route))
        .route("/api/ws", get(crate::ws::upgrade))
        .route("/api/new", post(new_session))
        .route("/api/complete", get(complete))
        .route("/api/m/{machine}/new", post(new_session))
        .route("/api/m/{machine}/complete", get(complete))
        .nest("/api/m/{machine}/session/{sid}", session.clone())
        .nest("/api/session/{sid}", session)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limits::BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::check,
        ))
        .layer(axum::middleware::from_fn(guard::headers))
        .with_state(state)
}

/// Starts each machine's keeper thread and list task.
pub fn start_background(state: &Arc<State>) {
    for m in &state.machines {
        // Subscribed before the keeper starts: the keeper ends at once when
        // nobody reads `changed`, and a bump before the subscription would
        // be missed. Marked changed so each machine is listed once at the
        // start, not only after its first event.
        let mut changed = m.changed.subscribe();
        changed.mark_changed();
        m.spawn_keeper();
        let (state, m) = (state.clone(), m.clone());
        tokio::spawn(async move {
            loop {
                if changed.changed().await.is_err() {
                    return;
                }
                // Coalesce a burst of events into one listing.
                tokio::time::sleep(Duration::from_millis(100)).await;
                changed.mark_unchanged();
                list_machine(&m).await;
                publish(&state);
            }
        });
    }
}

/// Publishes the list made of every machine's last listing (when it
/// changed). Assembled under the list's write lock: two machines' tasks
/// publishing at once cannot store an older assembly over a newer one
/// (which dropped the other machine's fresh rows until its next event).
fn publish(state: &State) {
    state.list.send_if_modified(|old| {
        let json = assemble(state);
        if **old == json {
            false
        } else {
            *old = Arc::new(json);
            true
        }
    });
}

/// Lists `m`'s sessions now and keeps them as its last listing (an error
/// keeps the rows listed before, with why).
async fn list_machine(m: &Arc<Machine>) {
    let r = list_rows(m).await;
    let mut g = m.listed.lock().unwrap_or_else(|p| p.into_inner());
    match r {
        Ok(rows) => {
            g.rows = rows;
            g.error = None;
        }
        Err(e) => g.error = Some(e.to_string()),
    }
}

/// The list as `/api/sessions` answers it, from every machine's last
/// listing.
fn assemble(state: &State) -> String {
    let mut list = sessions::List {
        read_only: state.read_only,
        machines: Vec::new(),
        sessions: Vec::new(),
        usage: None,
    };
    for m in &state.machines {
        let listed = m.listed.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let prompts = m.prompts.lock().unwrap_or_else(|p| p.into_inner()).clone();
        list.machines.push(sessions::Machine {
            name: m.name.clone(),
            error: listed.error,
        });
        list.sessions
            .extend(sessions::view(&m.name, &listed.rows, &prompts));
    }
    // Needs-you first across machines, each machine's order kept.
    list.sessions.sort_by_key(|s| s.needs.is_none());
    list.usage = sessions::Usage::total(&list.sessions);
    serde_json::to_string(&list).unwrap_or_else(|_| "{}".into())
}

/// The list as `/api/sessions` answers it: every machine listed now, at
/// once; another machine that does not answer within
/// [`limits::REMOTE_LIST_WAIT`] is given by its last listing, with why.
pub async fn list_json(state: &State) -> String {
    let fresh = state.machines.iter().map(|m| async move {
        if !m.is_remote() {
            list_machine(m).await;
            return;
        }
        if tokio::time::timeout(limits::REMOTE_LIST_WAIT, list_machine(m))
            .await
            .is_err()
        {
            m.listed.lock().unwrap_or_else(|p| p.into_inner()).error = Some(format!(
                "{} did not answer within {} s: its last listing is shown",
                m.name,
                limits::REMOTE_LIST_WAIT.as_secs()
            ));
        }
    });
    futures_util::future::join_all(fresh).await;
    assemble(state)
}

/// Every row of `sessions.list` (pages of 500, at most
/// [`limits::LISTED`]).
async fn list_rows(d: &Arc<Machine>) -> Result<Vec<Value>, CallError> {
    let mut rows = Vec::new();
    let mut offset = 0u64;
    loop {
        let r = d
            .call("sessions.list", json!({"offset": offset, "limit": 500}))
            .await?;
        if let Some(a) = r.get("sessions").and_then(Value::as_array) {
            rows.extend(a.iter().cloned());
        }
        match r.get("next_offset").and_then(Value::as_u64) {
            Some(n) if n > offset && rows.len() < limits::LISTED => offset = n,
            _ => break,
        }
    }
    rows.truncate(limits::LISTED);
    Ok(rows)
}

fn html(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The page, or the token login (`/?token=`).
async fn index(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(Peer(ip)): Extension<Peer>,
    uri: axum::http::Uri,
) -> Response {
    let Some(given) = uri.query().and_then(guard::query_token) else {
        return html(StatusCode::OK, INDEX_HTML);
    };
    let now = Instant::now();
    if state.failures.blocked(ip, now) {
        tracing::warn!(%ip, "login refused: too many failed attempts");
        return html(StatusCode::TOO_MANY_REQUESTS, guard::LOGIN_NEEDED);
    }
    let secret = match state.tokens.read() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "the token file cannot be read");
            return html(StatusCode::INTERNAL_SERVER_ERROR, guard::LOGIN_NEEDED);
        }
    };
    if !token::same_secret(&given.to_ascii_lowercase(), &secret.token) {
        state.failures.record(ip, now);
        tracing::warn!(%ip, "login refused: wrong token");
        return html(StatusCode::UNAUTHORIZED, guard::LOGIN_NEEDED);
    }
    let cookie = state.cookies.issue(secret.generation);
    let secure = if state.secure_cookie { "; Secure" } else { "" };
    tracing::info!(%ip, "logged in");
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, "/")
        .header(
            header::SET_COOKIE,
            format!(
                "{}={cookie}; HttpOnly; SameSite=Strict; Path=/{secure}",
                crate::auth::COOKIE
            ),
        )
        .body(axum::body::Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

async fn app_css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS).into_response()
}

async fn not_found() -> Response {
    json_error(StatusCode::NOT_FOUND, "no such route", "not_found")
}

async fn list(axum::extract::State(state): axum::extract::State<Arc<State>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        list_json(&state).await,
    )
        .into_response()
}

/// A daemon error as a reply: its words, its code, a fitting status.
pub(crate) fn daemon_error(e: &CallError) -> Response {
    match e.rpc() {
        Some(r) => {
            let status = match r.code {
                -32003 => StatusCode::NOT_FOUND,
                -32602 | -32004 | -32006 => StatusCode::BAD_REQUEST,
                -32005 | -32007 | -32008 | -32012 | -32013 => StatusCode::CONFLICT,
                _ => StatusCode::BAD_GATEWAY,
            };
            let body = json!({"error": r.message, "code": r.code, "data": r.data});
            (status, Json(body)).into_response()
        }
        None => json_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string(), "daemon"),
    }
}

pub(crate) fn ok(mut v: Value) -> Response {
    if let Some(o) = v.as_object_mut() {
        o.insert("ok".into(), Value::Bool(true));
        (StatusCode::OK, Json(v)).into_response()
    } else {
        (StatusCode::OK, Json(json!({"ok": true, "result": v}))).into_response()
    }
}

/// Calls `method` on `m` unless the server is read-only; the reply. An
/// attach (a resume) goes on a connection of its own, which ends the
/// attachment when it closes.
async fn act(state: &State, m: &Arc<Machine>, method: &'static str, params: Value) -> Response {
    if state.read_only {
        return guard::forbidden("this ccd web is read-only (--read-only)");
    }
    tracing::info!(host = %m.name, method, session = ?params.get("session"), "action");
    let reply = if method == "session.attach" {
        m.call_alone(method, params).await
    } else {
        m.call(method, params).await
    };
    match reply {
        Ok(v) => ok(v),
        Err(e) => {
            tracing::info!(host = %m.name, method, error = %e, "action refused");
            daemon_error(&e)
        }
    }
}

/// The route's path parameters: `sid`, and `machine` under `/api/m/…`.
type Params = Path<HashMap<String, String>>;

/// The machine a route names (the first one without `/m/<machine>`).
fn machine_of(state: &State, name: Option<&str>) -> Result<Arc<Machine>, Response> {
    state.machine(name).cloned().ok_or_else(|| {
        json_error(
            StatusCode::NOT_FOUND,
            "this ccd web serves no machine of that name",
            "machine",
        )
    })
}

/// The machine and the session id a session route names, checked.
fn target(state: &State, p: &HashMap<String, String>) -> Result<(Arc<Machine>, String), Response> {
    let sid = p.get("sid").cloned().unwrap_or_default();
    check_sid(&sid)?;
    Ok((
        machine_of(state, p.get("machine").map(String::as_str))?,
        sid,
    ))
}

type S = axum::extract::State<Arc<State>>;

/// A JSON body, or 400 with why (axum's own rejection text stays out).
pub(crate) fn body<T>(
    b: Result<Json<T>, axum::extract::rejection::JsonRejection>,
) -> Result<T, Response> {
    b.map(|Json(t)| t).map_err(|e| {
        let status = e.status();
        let status = if status == StatusCode::PAYLOAD_TOO_LARGE {
            status
        } else {
            StatusCode::BAD_REQUEST
        };
        json_error(status, &e.body_text(), "body")
    })
}

fn check_sid(sid: &str) -> Result<(), Response> {
    if sid.is_empty()
        || sid.len() > 128
        || !sid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Err(json_error(
            StatusCode::BAD_REQUEST,
            "not a session id",
            "session",
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RespondBody {
    prompt_id: String,
    choice: String,
    #[serde(default)]
    message: Option<String>,
}

async fn respond(
    axum::extract::State(state): S,
    Path(p): Params,
    b: Result<Json<RespondBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let ((m, sid), b) = match target(&state, &p).and_then(|t| Ok((t, body(b)?))) {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !matches!(b.choice.as_str(), "yes" | "always" | "no") {
        return json_error(
            StatusCode::BAD_REQUEST,
            "choice is yes, always or no",
            "choice",
        );
    }
    if b.prompt_id.is_empty() {
        return json_error(
            StatusCode::BAD_REQUEST,
            "prompt_id names the prompt answered",
            "prompt_id",
        );
    }
    let mut params = json!({"session": sid, "choice": b.choice, "prompt": b.prompt_id});
    if let Some(m) = b.message.filter(|m| !m.is_empty()) {
        params["message"] = Value::String(m);
    }
    act(&state, &m, "session.respond", params).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendBody {
    text: String,
}

async fn send(
    axum::extract::State(state): S,
    Path(p): Params,
    b: Result<Json<SendBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let ((m, sid), b) = match target(&state, &p).and_then(|t| Ok((t, body(b)?))) {
        Ok(x) => x,
        Err(r) => return r,
    };
    if b.text.chars().count() > limits::TEXT_CHARS {
        return json_error(StatusCode::PAYLOAD_TOO_LARGE, "text too long", "text");
    }
    act(
        &state,
        &m,
        "session.send",
        json!({"session": sid, "text": b.text}),
    )
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysBody {
    #[serde(default)]
    keys: Option<Vec<String>>,
    #[serde(default)]
    text: Option<String>,
}

/// The bytes a key name stands for (what a terminal sends).
pub fn key_bytes(name: &str) -> Option<&'static [u8]> {
    Some(match name {
        "esc" => b"\x1b",
        "tab" => b"\t",
        "shift-tab" => b"\x1b[Z",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "ctrl-c" => b"\x03",
        "enter" => b"\r",
        _ => return None,
    })
}

/// `text` as a bracketed paste that nothing in it can end: every control
/// character but the line break goes (ESC included), a tab becomes a
/// space.
pub fn paste(text: &str) -> Vec<u8> {
    let mut out = b"\x1b[200~".to_vec();
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let c = match c {
            '\t' => ' ',
            '\r' => continue,
            '\n' => '\n',
            c if c.is_control() => continue,
            // Bidi controls and the other invisible formatting marks.
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => continue,
            c => c,
        };
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
    out.extend_from_slice(b"\x1b[201~");
    out
}

async fn keys(
    axum::extract::State(state): S,
    Path(p): Params,
    b: Result<Json<KeysBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let ((m, sid), b) = match target(&state, &p).and_then(|t| Ok((t, body(b)?))) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let data = match (b.keys, b.text) {
        (Some(keys), None) if !keys.is_empty() && keys.len() <= 64 => {
            let mut data = Vec::new();
            for k in &keys {
                match key_bytes(k) {
                    Some(bytes) => data.extend_from_slice(bytes),
                    None => {
                        return json_error(StatusCode::BAD_REQUEST, "unknown key", "keys");
                    }
                }
            }
            data
        }
        (None, Some(text)) if !text.is_empty() && text.chars().count() <= limits::TEXT_CHARS => {
            paste(&text)
        }
        _ => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "give keys (1 to 64 names) or text (1 to 16384 characters)",
                "keys",
            )
        }
    };
    let params = json!({"session": sid, "data": ccd_protocol::b64::encode(&data)});
    act(&state, &m, "session.input", params).await
}

/// An action with no body (or an empty JSON one).
async fn bare(
    state: &State,
    p: &HashMap<String, String>,
    method: &'static str,
    extra: Value,
) -> Response {
    let (m, sid) = match target(state, p) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let mut params = json!({"session": sid});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    act(state, &m, method, params).await
}

async fn interrupt(axum::extract::State(state): S, Path(p): Params) -> Response {
    let data = ccd_protocol::b64::encode(b"\x1b");
    bare(&state, &p, "session.input", json!({"data": data})).await
}

async fn kill(axum::extract::State(state): S, Path(p): Params) -> Response {
    bare(&state, &p, "session.kill", json!({})).await
}

async fn fork(axum::extract::State(state): S, Path(p): Params) -> Response {
    bare(&state, &p, "session.fork", json!({})).await
}

/// Resumes a dead session: an interactive attach (which resumes it), left
/// at once (closing the connection detaches).
async fn resume(axum::extract::State(state): S, Path(p): Params) -> Response {
    bare(&state, &p, "session.attach", json!({"mode": "interactive"})).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewBody {
    cwd: String,
}

async fn new_session(
    axum::extract::State(state): S,
    p: Option<Params>,
    b: Result<Json<NewBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let name = p.as_ref().and_then(|Path(p)| p.get("machine").cloned());
    let (m, b) = match machine_of(&state, name.as_deref()).and_then(|m| Ok((m, body(b)?))) {
        Ok(x) => x,
        Err(r) => return r,
    };
    act(
        &state,
        &m,
        "session.new",
        json!({"cwd": b.cwd, "wait": true}),
    )
    .await
}

#[derive(Debug, Deserialize)]
struct CompleteQuery {
    #[serde(default)]
    prefix: String,
}

async fn complete(
    axum::extract::State(state): S,
    p: Option<Params>,
    q: Result<Query<CompleteQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let name = p.as_ref().and_then(|Path(p)| p.get("machine").cloned());
    let m = match machine_of(&state, name.as_deref()) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let Ok(Query(q)) = q else {
        return json_error(StatusCode::BAD_REQUEST, "prefix=…", "prefix");
    };
    if q.prefix.len() > 4096 {
        return json_error(StatusCode::BAD_REQUEST, "prefix too long", "prefix");
    }
    match m.call("dirs.complete", json!({"input": q.prefix})).await {
        Ok(v) => ok(v),
        Err(e) => daemon_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_cannot_end_itself_or_hold_keys() {
        let p = paste("a\x1b[201~b\tc\r\nd\u{202e}\x03");
        assert_eq!(p, b"\x1b[200~a[201~b c\nd\x1b[201~".to_vec());
    }

    /// Each machine's list task is subscribed to its `changed` before the
    /// keeper starts (the keeper ends at once when nobody reads it, and
    /// the machine was then never listed until a page asked), and lists it
    /// once at the start, without waiting for an event.
    #[tokio::test]
    async fn each_machine_is_listed_at_the_start_with_its_keeper_kept() {
        let dir = tempfile::tempdir().unwrap();
        let opts = crate::Options {
            listen: Some("127.0.0.1:0".into()),
            machines: vec![],
            read_only: false,
            revoke: false,
            tls_cert: None,
            tls_key: None,
            behind_proxy: None,
            print_url: false,
            state_dir: dir.path().into(),
            socket_dir: ccd_client::SocketDir::resolve(Some(dir.path())),
            daemon: ccd_client::DaemonCommand {
                program: "/bin/false".into(),
                args: vec![],
            },
        };
        let plan = Plan::from_options(&opts).unwrap();
        let far = ccd_client::ssh::Remote {
            target: "ssh://far".parse().unwrap(),
            label: "far".into(),
            // A "ssh" that fails at once, as an unreachable host does.
            ssh: vec!["/bin/false".into()],
            remote_ccd: "ccd".into(),
            stderr: ccd_client::ssh::StderrSink::Inherit,
            batch: false,
        };
        let m = Arc::new(Machine::remote(&far));
        let state = Arc::new(State::new(
            &plan,
            "127.0.0.1:1".parse().unwrap(),
            None,
            TokenFile::in_dir(dir.path()),
            vec![m.clone()],
        ));
        let mut list = state.list.subscribe();
        start_background(&state);
        // On this current-thread runtime no task has run yet.
        assert_eq!(
            m.changed.receiver_count(),
            1,
            "subscribed before the keeper"
        );
        tokio::time::timeout(Duration::from_secs(10), list.changed())
            .await
            .expect("listed at the start")
            .unwrap();
        let v: Value = serde_json::from_str(&list.borrow()).unwrap();
        assert_eq!(v["machines"][0]["name"], "far", "{v}");
        assert!(v["machines"][0]["error"].is_string(), "{v}");
    }

    #[test]
    fn key_names() {
        assert_eq!(key_bytes("esc"), Some(&b"\x1b"[..]));
        assert_eq!(key_bytes("shift-tab"), Some(&b"\x1b[Z"[..]));
        assert_eq!(key_bytes("alt-f4"), None);
    }
}
