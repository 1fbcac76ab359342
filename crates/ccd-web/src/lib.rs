//! `ccd web`: every session in a browser (a phone too): see it, answer it,
//! type into it. A *client* of the daemon's documented socket API (through
//! `ccd-client`, like `ccd ui`): it never reads `~/.claude` itself and adds
//! no privileged path. The `ccd` binary's `web` subcommand parses the
//! arguments and calls [`run`].
//!
//! Modules:
//! - [`token`]: the 0600 token file (`<state dir>/web-token`) and the
//!   revocation generation;
//! - [`auth`]: session cookies and the failed-login rate limit;
//! - [`guard`]: what every request passes: `Host`, `Origin`, the cookie,
//!   the security headers on every response;
//! - [`server`]: the accept loop (connection bound, TLS, header timeout);
//! - [`tls`]: the TLS acceptor (Linux: rustls with ring; macOS: the
//!   system's own, Security.framework through native-tls; see there);
//! - [`api`]: the routes (login, page, `/api/sessions`, actions; the
//!   search's is in [`search`]);
//! - [`link`]: prompt links (a notification's `/p#<token>`: one prompt,
//!   answered once, without a login);
//! - [`daemon`]: each machine served (this one, others through ssh): its
//!   link (blocking `ccd-client` calls on tokio's blocking pool), the
//!   keeper thread that keeps it open, and the events that drive list
//!   pushes;
//! - [`sessions`]: the daemon's `sessions.list` rows made the page's list
//!   (pure);
//! - [`search`]: the page's content search (`POST /api/search`): its
//!   request checked, every machine's `sessions.search` asked at once and
//!   the hits merged;
//! - [`ws`]: the WebSocket: list pushes, the watched session's screen or
//!   tail;
//! - [`limits`]: every bound.
//!
//! # Who owns what
//! [`run`] builds one tokio runtime. The accept loop owns the listener and
//! spawns one task per connection (holding a slot of
//! [`limits::CONNECTIONS`]); a WebSocket, once upgraded, is its own task
//! (a slot of [`limits::WEBSOCKETS`]) with a writer task that owns the
//! socket's sink and its bounded queue. Each machine's link reader (a
//! plain thread, blocking on the socket or the ssh pipe) only notes
//! prompts and bumps that machine's `watch` counter; its keeper thread
//! makes the link again when it closes; its list task keeps the machine's
//! last listing; the list JSON of every machine is a `watch` every
//! WebSocket reads. A watched session's observe attachment runs on
//! a thread of its own that owns the connection and the `Screen`, and
//! publishes rendered rows through a `watch` (latest wins: a slow page
//! skips frames, it never queues them). Nothing holds a lock across an
//! await or I/O.
//!
//! # The contract between the server and the page
//! - Stack: axum 0.8 on tokio (served through hyper's http1 connection
//!   with upgrades), WebSocket via axum's `ws` feature; TLS for
//!   non-loopback listening (Linux: rustls through tokio-rustls, ring;
//!   macOS: Security.framework through tokio-native-tls; see [`tls`]). All static assets
//!   (`index.html`, `app.js`, `app.css`, no third-party script, no CDN)
//!   are embedded with `include_str!` from `crates/ccd-web/assets/`.
//! - `GET /?token=<hex>` → on a valid token: `303 See Other` to `/` with
//!   `Set-Cookie: ccd_web=<random 256-bit session id>; HttpOnly;
//!   SameSite=Strict; Path=/` (+ `Secure` when served over TLS or behind
//!   an https proxy). Wrong/missing token: 401 page with no detail,
//!   rate-limited (5 failed attempts per client IP per minute, then 429).
//! - Every other route needs the cookie (401 JSON `{"error":"…"}` for
//!   `/api/*`, the login-needed page for `/` and `/static/*`). Every request
//!   checks `Host` (the listen address/port, `localhost:<port>`, a name
//!   the TLS certificate is valid for on the bound port, or the
//!   `--behind-proxy` origin's host) and, for anything that is not
//!   GET/HEAD and for the WebSocket upgrade, `Origin` (the page's own
//!   origin). Refused: 403 with a one-line reason. Every response carries
//!   the CSP, `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff`,
//!   `Referrer-Policy: no-referrer`, `Cache-Control: no-store` (see
//!   [`guard::SECURITY_HEADERS`]); no CORS headers at all.
//! - `GET /static/app.js`, `/static/app.css`: the cookie is needed too.
//! - Machines: those `ccd ui` shows (`--host`, `$CCD_HOST`, `ui_hosts`,
//!   else `local`), in that order; another machine is named as in `ccd
//!   ls` (a `[hosts]` name, else `user@host:port`).
//! - `GET /api/sessions` → `{"read_only":false,
//!   "machines":[{"name":"local","error":null},
//!   {"name":"devbox","error":"devbox is unreachable: …"}],
//!   "sessions":[…]}` (every machine named, with why it is not listed
//!   now: an unreachable one has no sessions or its last ones, the others
//!   are listed; another machine not answering within 3 s is given by its
//!   last listing), each session: `machine, id, title, cwd, state,
//!   needs (null | "permission" | "question" | "attention"), context_pct,
//!   mem_bytes, held (bool), prompt (null | {id, tool, detail,
//!   options:[{key,label}]}), usage (null | {tokens, cost_usd,
//!   unpriced})`, from `sessions.list` (`usage`: the conversation's
//!   tokens, all four kinds added, and dollars; `unpriced`: a model the
//!   price table does not name, so the dollars are a lower bound); and
//!   `"usage"` (null | the same, every listed session's added). `state` is ccd's
//!   lifecycle for a held session, Claude Code's status (`idle`, `busy`,
//!   `waiting`) for one running elsewhere, else `dead`. Sorted: needs-you
//!   first, then each machine's in order as its daemon lists them (most
//!   recently active first).
//! - `POST /api/search {"query","scope"?:"all"|"live"|"dead","regex"?:bool,
//!   "roles"?:["user"|"assistant"|"tool"|"title"|"summary"],"limit"?}`
//!   (cookie + Origin checked, as every POST; a read, so allowed
//!   `--read-only`; the query at most 512 characters, an unknown scope or
//!   role or a repeated role 400, `limit` 1 to 100,
//!   default 30; at most 4 searches at once, then 429) → every machine's
//!   `sessions.search` at once: `{"machines":[{"name","error"}],
//!   "hits":[{machine, session, title, folder, state, timestamp, role,
//!   snippet:{before, matched, after}, matches, score}], "truncated"}`,
//!   best score first across machines (ties newest first); a machine that
//!   fails (another one not answering within 10 s) is named with why and
//!   the others' hits are given; a query every machine refuses (a bad
//!   regex) is 400 with the daemon's words. Each snippet part is at most
//!   160 characters; the page marks `matched` and puts every part in with
//!   `textContent`. A hit opens as a list row does (`#/s/<sid>`).
//! - `GET /api/ws` (WebSocket, Origin checked, cookie needed). Server →
//!   page (JSON text frames): `{"t":"sessions", …same as /api/sessions}`
//!   whenever the list changes (driven by `events.subscribe`, no polling
//!   loop); `{"t":"screen","session":sid,"cols":C,"rows":R,
//!   "cursor":{"row","col","visible"},"full":bool,"lines":{"<rowindex>":[run,…],…}}`
//!   where a run is `{"s":"text","fg":"#rrggbb"|null,"bg":…,"b":bool,
//!   "i":bool,"u":bool,"r":bool}` (plus `"d":true` for dim and `"w":true`
//!   for one wide character taking two cells, each only when set; a row's
//!   trailing unstyled blanks are left out: [`render`]) and only changed
//!   rows are sent after a full frame (`full: true`: every row); `{"t":"tail","session":sid,
//!   "items":[{kind,text,timestamp}]}` (the last 60 items, whole) for
//!   sessions ccd does not hold; `{"t":"error","message":…}` (`"logged
//!   out"` and the socket closed once its cookie is revoked). Page →
//!   server: `{"t":"watch","session":sid,"machine":name}` (`machine`
//!   left out: the first machine; the screen comes from the session's own
//!   machine) / `{"t":"unwatch"}`.
//! - Actions, all `POST` with JSON bodies (at most 64 KiB), cookie +
//!   Origin checked, 403 in `--read-only`, each under
//!   `/api/m/<machine>/…` for the named machine (404 `{"code":"machine"}`
//!   for one not served; 503 with why for one unreachable), or under
//!   `/api/…` for the first machine (`local` by default):
//!   `/api/session/<sid>/respond {"prompt_id","choice":"yes"|"always"|"no","message"?}`
//!   (→ `session.respond`; a stale id gives 409 with the daemon's words),
//!   `/send {"text"}` (→ `session.send`), `/keys {"keys":[…]}` or
//!   `{"text"}` (→ `session.input`; text as a bracketed paste),
//!   `/interrupt` (Esc), `/kill`, `/fork`, `/resume`, `POST /api/new
//!   {"cwd"}`, `GET /api/complete?prefix=` (→ `dirs.complete`), e.g.
//!   `/api/m/devbox/session/<sid>/send`, `/api/m/devbox/new`. Replies
//!   `{"ok":true,…}` or `{"error":…, "code":…}` with a fitting status.
//! - Prompt links ([`link`]), without a cookie, `Host` and `Origin`
//!   checked: `GET /p` (the page; the token is its URL's fragment),
//!   `GET /static/link.js`, `POST /api/link/view {"token"}` → `{"ok":true,
//!   "machine","session","title","cwd","prompt":{id,tool,detail,
//!   options:[{key,label}]},"expires_at"}` (yes and no only; 409
//!   `{"code":"stale"}` once the session shows another prompt or none),
//!   `POST /api/link/respond {"token","choice":"yes"|"no"}` (→
//!   `session.respond` with the token's prompt id; 410 `{"code":"used"}`
//!   the second time). A bad token is 401 `{"code":"link"}` (counted as a
//!   failed login), an expired one 410 `{"code":"expired"}`, one naming a
//!   machine not served 404 `{"code":"machine"}`.
//! - stdout: the first line is `ccd web listening on <addr:port>` (the
//!   bound address, so port 0 can be read), the second the login URL,
//!   then its QR code.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

pub mod api;
pub mod auth;
pub mod daemon;
pub mod guard;
pub mod limits;
pub mod link;
pub mod render;
pub mod search;
pub mod server;
pub mod sessions;
pub mod tls;
pub mod token;
pub mod ws;

use anyhow::Context;
use ccd_client::{DaemonCommand, SocketDir};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The default listen address (`--listen`, config `web_listen`).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// What `ccd web` was asked to do (the CLI's options, the config file's
/// `web_*` keys already applied by the caller).
#[derive(Debug, Clone)]
pub struct Options {
    /// `--listen ADDR:PORT` (else `web_listen`, else [`DEFAULT_LISTEN`]).
    pub listen: Option<String>,
    /// The machines served, in order (the caller applies `ccd ui`'s
    /// rules: `--host`, `$CCD_HOST`, the config's `ui_hosts`); none: this
    /// machine alone.
    pub machines: Vec<daemon::Target>,
    pub read_only: bool,
    /// End every session cookie and exit.
    pub revoke: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// `--behind-proxy https://host[:port]`: a TLS-terminating proxy serves
    /// the page at this origin.
    pub behind_proxy: Option<String>,
    /// Print the login URL (and its QR code) and exit.
    pub print_url: bool,
    /// ccd's state directory (the token file lives there).
    pub state_dir: PathBuf,
    /// The daemon's socket directory, and how to start it when none runs.
    pub socket_dir: SocketDir,
    pub daemon: DaemonCommand,
}

/// Runs `ccd web` to the end (until killed, or at once for `--revoke` and
/// `--print-url`).
pub fn run(opts: Options) -> anyhow::Result<()> {
    let tokens = token::TokenFile::in_dir(&opts.state_dir);
    if opts.revoke {
        let generation = tokens.revoke()?;
        ccd_notify::link::KeyFile::in_dir(&opts.state_dir).rotate()?;
        println!(
            "ccd web: every session cookie and every notification's prompt link is ended (generation {generation}); log in again with the token URL"
        );
        return Ok(());
    }
    let plan = server::Plan::from_options(&opts)?;
    let secret = tokens.load_or_create()?;
    if opts.print_url {
        let url = plan.login_url(plan.listen, &secret.token);
        print_url(&url);
        return Ok(());
    }
    let tls = match (&opts.tls_cert, &opts.tls_key) {
        (Some(c), Some(k)) => Some(tls::acceptor(c, k)?),
        _ => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("ccd-web")
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(plan.listen)
            .await
            .with_context(|| format!("listening on {}", plan.listen))?;
        let bound: SocketAddr = listener.local_addr()?;
        let targets = if opts.machines.is_empty() {
            vec![daemon::Target::Local]
        } else {
            opts.machines.clone()
        };
        let machines = targets
            .iter()
            .map(|t| Arc::new(daemon::Machine::of(t, &opts.socket_dir, &opts.daemon)))
            .collect();
        let state = Arc::new(api::State::new(&plan, bound, tls.clone(), tokens, machines));
        println!("ccd web listening on {bound}");
        print_url(&plan.login_url(bound, &secret.token));
        tracing::info!(%bound, read_only = plan.read_only, tls = tls.is_some(), "ccd web serving");
        api::start_background(&state);
        server::serve(listener, api::router(state), tls).await;
        Ok(())
    })
}

/// The URL on one line, then its QR code (for a phone's camera).
fn print_url(url: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{url}");
    if let Ok(code) = qrcode::QrCode::new(url.as_bytes()) {
        let art = code
            .render::<qrcode::render::unicode::Dense1x2>()
            .quiet_zone(true)
            .build();
        let _ = writeln!(out, "{art}");
    }
    let _ = out.flush();
}
