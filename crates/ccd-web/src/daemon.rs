//! Talking to this machine's daemon through `ccd-client`.
//!
//! - Calls share one [`Link`] ([`Daemon::call`]): one connection carrying
//!   concurrent calls by id, each bounded by its method's deadline, made
//!   (the daemon started when none answers) on the first call and made
//!   again after it closed. A call blocks a thread of tokio's blocking
//!   pool while it waits; the link's reader is a thread of its own.
//! - A call that attaches (a resume) gets a connection of its own
//!   ([`Daemon::call_alone`]), closed with the call: the attachment ends
//!   with it, and its output never reaches the shared link.
//! - The event thread ([`Daemon::spawn_events`]) is a plain thread that
//!   owns one subscribed connection, remembers the permission prompts the
//!   events describe, and bumps a `watch` counter on every event (the
//!   list task reads it: pushes are driven by events, not by polling). It
//!   reconnects after a second when the daemon goes away.

use ccd_client::{connect_or_start, Client, ClientError, DaemonCommand, Link, SocketDir};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The client name sent in `hello`.
pub const CLIENT_NAME: &str = concat!("ccd-web/", env!("CARGO_PKG_VERSION"));

/// A permission dialog as `session.attention` described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenPrompt {
    pub id: String,
    pub tool: String,
    pub detail: String,
    pub options: Vec<String>,
}

/// Permission prompts seen in events, by session id (the newest each).
pub type Prompts = Arc<Mutex<HashMap<String, SeenPrompt>>>;

#[derive(Clone)]
pub struct Daemon {
    dir: SocketDir,
    cmd: DaemonCommand,
    /// The calls' link, while it is open (held only to clone it or to make
    /// a new one).
    link: Arc<Mutex<Option<Link>>>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon").field("dir", &self.dir).finish()
    }
}

impl Daemon {
    pub fn new(dir: SocketDir, cmd: DaemonCommand) -> Self {
        Self {
            dir,
            cmd,
            link: Arc::new(Mutex::new(None)),
        }
    }

    /// The open link, or a new one.
    fn link(&self) -> Result<Link, ClientError> {
        let mut g = self.link.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = g.as_ref().filter(|l| l.closed().is_none()) {
            return Ok(l.clone());
        }
        let l = Link::start(self.connect()?)?;
        tracing::debug!("a new link to the daemon");
        *g = Some(l.clone());
        Ok(l)
    }

    /// A connection (the daemon started when none answers).
    pub fn connect(&self) -> Result<Client, ClientError> {
        connect_or_start(&self.dir, &self.cmd, CLIENT_NAME)
    }

    /// Calls `method` on the shared link, off the async threads.
    pub async fn call(&self, method: &'static str, params: Value) -> Result<Value, ClientError> {
        let d = self.clone();
        tokio::task::spawn_blocking(move || {
            let within = ccd_client::deadline::deadline_of(method, &params);
            d.link()?.call_value_within(method, params, within)
        })
        .await
        .unwrap_or_else(|e| {
            Err(ClientError::Protocol(format!(
                "the call's task failed: {e}"
            )))
        })
    }

    /// Calls `method` on a connection of its own, closed after the reply
    /// (an attachment it makes ends with it).
    pub async fn call_alone(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Value, ClientError> {
        let d = self.clone();
        tokio::task::spawn_blocking(move || d.connect()?.call_value(method, params))
            .await
            .unwrap_or_else(|e| {
                Err(ClientError::Protocol(format!(
                    "the call's task failed: {e}"
                )))
            })
    }

    /// Starts the event thread: `changed` is bumped after every event
    /// (and after each (re)connection), `prompts` follows the permission
    /// dialogs. The thread ends once nobody reads `changed`.
    pub fn spawn_events(&self, changed: watch::Sender<u64>, prompts: Prompts) {
        let d = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ccd-web-events".into())
            .spawn(move || loop {
                match d.follow_events(&changed, &prompts) {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "the daemon's events stopped; reconnecting in 1 s");
                        changed.send_modify(|n| *n += 1);
                        if changed.is_closed() {
                            return;
                        }
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the event thread");
        }
    }

    /// One subscribed connection until it fails (`Ok` when nobody listens).
    fn follow_events(
        &self,
        changed: &watch::Sender<u64>,
        prompts: &Prompts,
    ) -> Result<(), ClientError> {
        let mut c = self.connect()?;
        c.call_value("events.subscribe", serde_json::json!({}))?;
        changed.send_modify(|n| *n += 1);
        loop {
            // Wakes once a minute with nothing to do, to notice nobody
            // listens any more.
            let Some(n) = c.next_notification(Some(Duration::from_secs(60)))? else {
                if changed.is_closed() {
                    return Ok(());
                }
                continue;
            };
            if n.method != "event" {
                continue;
            }
            let Some(e) = n.params.as_ref() else { continue };
            note_prompt(prompts, e);
            tracing::debug!(kind = ?e.get("type"), session = ?e.get("session"), "event");
            changed.send_modify(|n| *n += 1);
            if changed.is_closed() {
                return Ok(());
            }
        }
    }
}

/// Remembers (or forgets) a permission prompt an event describes.
pub fn note_prompt(prompts: &Prompts, e: &Value) {
    let Some(sid) = e.get("session").and_then(Value::as_str) else {
        return;
    };
    let kind = e.get("type").and_then(Value::as_str).unwrap_or_default();
    let mut m = prompts.lock().unwrap_or_else(|p| p.into_inner());
    match kind {
        "session.attention" if e.get("reason").and_then(Value::as_str) == Some("permission") => {
            let s = |k: &str| {
                e.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let options = e
                .get("options")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            m.insert(
                sid.to_string(),
                SeenPrompt {
                    id: s("prompt"),
                    tool: s("tool"),
                    detail: s("detail"),
                    options,
                },
            );
        }
        "session.attention_cleared" | "session.exited" | "session.disappeared" => {
            m.remove(sid);
        }
        _ => {}
    }
    // Bounded by the sessions there are; a daemon that never clears is
    // held to this anyway.
    if m.len() > 4096 {
        m.clear();
    }
}
