//! Talking to every machine's daemon through `ccd-client`: this machine's
//! socket, and each other machine (`--host`, `ui_hosts`) through ssh
//! running `ccd dial-stdio` there ([`ccd_client::ssh::connect`], in
//! `BatchMode` as the dashboard connects: nobody could answer a question).
//!
//! Each machine is a [`Machine`]:
//! - calls share one [`Link`] ([`Machine::call`]): one connection carrying
//!   concurrent calls by id, each bounded by its method's deadline, and
//!   the machine's events (subscribed on it). It is made (this machine's
//!   daemon started when none answers) on the first call or by the keeper,
//!   and made again after it closed. A call past its deadline (a stalled
//!   network, a stopped ssh) closes the link, as the dashboard does. After
//!   another machine failed to connect, calls are refused at once with
//!   why until its back-off ([`BACKOFF_FIRST`] doubling to
//!   [`BACKOFF_MAX`]) has passed: an unreachable machine never holds a
//!   request for longer than one connection attempt
//!   ([`ccd_client::ssh::BATCH_CONNECT_TIMEOUT`]). A call blocks a thread
//!   of tokio's blocking pool while it waits; the link's reader is a thread
//!   of its own.
//! - a call that attaches (a resume, a watch) gets a connection of its own
//!   ([`Machine::connect`]), closed with it: the attachment ends with it,
//!   and its output never reaches the shared link.
//! - the keeper ([`Machine::spawn_keeper`]) is a plain thread that keeps
//!   the link open (made again a second after it closes, or after the
//!   back-off for another machine), and bumps the machine's `changed`
//!   counter after each (re)connection and loss. The link's reader thread
//!   remembers the permission prompts the events describe and bumps
//!   `changed` on every event (the machine's list task reads it: pushes
//!   are driven by events, not by polling). The keeper ends once nobody
//!   reads `changed`.
//!
//! Locks: `link` is held while a link is made (so one connection attempt
//! at a time per machine), `down` and `listed` only to read or replace a
//! value; none across an await.

use ccd_client::ssh::{Remote, StderrSink};
use ccd_client::{connect_or_start, Client, ClientError, DaemonCommand, Link, SocketDir};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The client name sent in `hello`.
pub const CLIENT_NAME: &str = concat!("ccd-web/", env!("CARGO_PKG_VERSION"));

/// The name of this machine (as `ccd ls` and `ccd ui` show it).
pub const LOCAL: &str = "local";

/// The first wait before another machine is connected again.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

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

/// Why a call to a machine failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The machine could not be connected to (why: the client's words,
    /// with ssh's last line for another machine); until its back-off
    /// passes, calls are refused with the same words at once.
    #[error("{host} is unreachable: {why}")]
    Unreachable { host: String, why: String },
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl CallError {
    /// The daemon's own refusal, if that is what this is.
    pub fn rpc(&self) -> Option<&ccd_protocol::RpcError> {
        match self {
            CallError::Client(e) => e.rpc(),
            CallError::Unreachable { .. } => None,
        }
    }
}

/// A machine `ccd web` serves.
#[derive(Debug, Clone)]
pub enum Target {
    Local,
    /// Another machine, through ssh (its `label` is its name).
    Remote(Remote),
}

/// How a machine is reached.
enum Via {
    Local {
        dir: SocketDir,
        cmd: DaemonCommand,
    },
    Remote {
        remote: Remote,
        /// ssh's last stderr line (it explains a failure).
        said: Arc<Mutex<String>>,
    },
}

/// What the machine's last listing gave: its rows, or why not.
#[derive(Debug, Clone, Default)]
pub struct Listed {
    pub rows: Vec<Value>,
    pub error: Option<String>,
}

/// Another machine's failed connection: why, when calls may try again,
/// and the next back-off.
struct Down {
    why: String,
    until: Instant,
    next: Duration,
}

/// One machine's daemon: see the module header.
pub struct Machine {
    pub name: String,
    via: Via,
    /// The link, while it is open.
    link: Mutex<Option<Link>>,
    down: Mutex<Option<Down>>,
    /// Told when a link closes (the keeper waits on it).
    closed_tx: Mutex<mpsc::Sender<()>>,
    closed_rx: Mutex<Option<mpsc::Receiver<()>>>,
    /// Bumped after every event of this machine and every (re)connection.
    pub changed: watch::Sender<u64>,
    pub prompts: Prompts,
    /// The last listing (shown when a fresh one does not come in time).
    pub listed: Mutex<Listed>,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine").field("name", &self.name).finish()
    }
}

impl Machine {
    /// This machine: its socket directory, and how to start its daemon.
    pub fn local(dir: SocketDir, cmd: DaemonCommand) -> Self {
        Self::new(LOCAL.to_string(), Via::Local { dir, cmd })
    }

    /// Another machine through ssh: in `BatchMode` (ssh may ask nothing:
    /// nobody is at a terminal to answer), its stderr kept to explain a
    /// failure.
    pub fn remote(remote: &Remote) -> Self {
        let said = Arc::new(Mutex::new(String::new()));
        let keep = said.clone();
        let mut r = remote.clone();
        r.batch = true;
        let host = r.label.clone();
        r.stderr = StderrSink::Lines(Arc::new(move |line: &[u8]| {
            let text = String::from_utf8_lossy(line).trim().to_string();
            if !text.is_empty() {
                tracing::debug!(host = %host, line = %text, "ssh said");
                *keep.lock().unwrap_or_else(|p| p.into_inner()) = text;
            }
        }));
        Self::new(r.label.clone(), Via::Remote { remote: r, said })
    }

    pub fn of(target: &Target, dir: &SocketDir, cmd: &DaemonCommand) -> Self {
        match target {
            Target::Local => Self::local(dir.clone(), cmd.clone()),
            Target::Remote(r) => Self::remote(r),
        }
    }

    fn new(name: String, via: Via) -> Self {
        let (tx, rx) = mpsc::channel();
        Self {
            name,
            via,
            link: Mutex::new(None),
            down: Mutex::new(None),
            closed_tx: Mutex::new(tx),
            closed_rx: Mutex::new(Some(rx)),
            changed: watch::channel(0).0,
            prompts: Prompts::default(),
            listed: Mutex::new(Listed::default()),
        }
    }

    pub fn is_remote(&self) -> bool {
        matches!(self.via, Via::Remote { .. })
    }

    /// A new connection (this machine's daemon started when none answers).
    pub fn connect(&self) -> Result<Client, ClientError> {
        match &self.via {
            Via::Local { dir, cmd } => connect_or_start(dir, cmd, CLIENT_NAME),
            Via::Remote { remote, said } => {
                said.lock().unwrap_or_else(|p| p.into_inner()).clear();
                ccd_client::ssh::connect(remote, CLIENT_NAME)
            }
        }
    }

    /// Why connecting failed, with ssh's own last word when it said one.
    fn explain(&self, e: &ClientError) -> String {
        let e = e.to_string();
        let Via::Remote { said, .. } = &self.via else {
            return e;
        };
        let said = said.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if said.is_empty() || e.contains(&said) {
            e
        } else {
            format!("{e}: {said}")
        }
    }

    /// The open link, or a new one (subscribed to the machine's events).
    pub fn link(&self) -> Result<Link, CallError> {
        let mut g = self.link.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = g.as_ref().filter(|l| l.closed().is_none()) {
            return Ok(l.clone());
        }
        if let Some(d) = self
            .down
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|d| Instant::now() < d.until)
        {
            return Err(CallError::Unreachable {
                host: self.name.clone(),
                why: d.why.clone(),
            });
        }
        match self.open() {
            Ok(l) => {
                tracing::info!(host = %self.name, "a new link to the daemon");
                *self.down.lock().unwrap_or_else(|p| p.into_inner()) = None;
                *g = Some(l.clone());
                Ok(l)
            }
            Err(e) => {
                let why = self.explain(&e);
                tracing::warn!(host = %self.name, error = %why, "cannot reach the daemon");
                if self.is_remote() {
                    let mut d = self.down.lock().unwrap_or_else(|p| p.into_inner());
                    let wait = d.as_ref().map_or(BACKOFF_FIRST, |d| d.next);
                    *d = Some(Down {
                        why: why.clone(),
                        until: Instant::now() + wait,
                        next: (wait * 2).min(BACKOFF_MAX),
                    });
                }
                Err(CallError::Unreachable {
                    host: self.name.clone(),
                    why,
                })
            }
        }
    }

    /// Connects, starts the link with the event sink, subscribes.
    fn open(&self) -> Result<Link, ClientError> {
        let client = self.connect()?;
        let (prompts, changed) = (self.prompts.clone(), self.changed.clone());
        let closed = self
            .closed_tx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let host = self.name.clone();
        let link = Link::builder()
            // On the link's reader thread: nothing here blocks.
            .subscribe("event", move |n| {
                if let Some(e) = n.params.as_ref() {
                    note_prompt(&prompts, e);
                    tracing::debug!(host = %host, kind = ?e.get("type"), session = ?e.get("session"), "event");
                }
                changed.send_modify(|n| *n += 1);
                true
            })
            .on_close(move |why| {
                tracing::debug!(why, "a link closed");
                let _ = closed.send(());
            })
            .start(client)?;
        let subscribed = link.call_value_within(
            "events.subscribe",
            serde_json::json!({}),
            ccd_client::deadline::CALL_TIMEOUT,
        );
        if let Err(e) = subscribed {
            link.close();
            return Err(e);
        }
        Ok(link)
    }

    /// Calls `method` on the shared link within its deadline (a call past
    /// it closes the link).
    pub fn call_blocking(&self, method: &str, params: Value) -> Result<Value, CallError> {
        let within = ccd_client::deadline::deadline_of(method, &params);
        let link = self.link()?;
        let r = link.call_value_within(method, params, within);
        if let Err(e) = &r {
            if e.not_answering().is_some() {
                tracing::warn!(host = %self.name, method, error = %e, "no answer in time: the link is closed");
                link.close();
            }
        }
        Ok(r?)
    }

    /// [`Machine::call_blocking`] off the async threads.
    pub async fn call(
        self: &Arc<Self>,
        method: &'static str,
        params: Value,
    ) -> Result<Value, CallError> {
        let m = self.clone();
        tokio::task::spawn_blocking(move || m.call_blocking(method, params))
            .await
            .unwrap_or_else(|e| {
                Err(ClientError::Protocol(format!("the call's task failed: {e}")).into())
            })
    }

    /// Calls `method` on a connection of its own, closed after the reply
    /// (an attachment it makes ends with it).
    pub async fn call_alone(
        self: &Arc<Self>,
        method: &'static str,
        params: Value,
    ) -> Result<Value, CallError> {
        let m = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut c = m.connect().map_err(|e| CallError::Unreachable {
                host: m.name.clone(),
                why: m.explain(&e),
            })?;
            Ok(c.call_value(method, params)?)
        })
        .await
        .unwrap_or_else(|e| {
            Err(ClientError::Protocol(format!("the call's task failed: {e}")).into())
        })
    }

    /// Starts the keeper thread (once; later calls do nothing).
    pub fn spawn_keeper(self: &Arc<Self>) {
        let Some(rx) = self
            .closed_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let m = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("ccd-web-keeper {}", self.name))
            .spawn(move || m.keep(&rx));
        if let Err(e) = spawned {
            tracing::error!(host = %self.name, error = %e, "could not start the keeper thread");
        }
    }

    /// Keeps the link open until nobody reads `changed`.
    fn keep(&self, closed: &mpsc::Receiver<()>) {
        loop {
            if self.changed.is_closed() {
                return;
            }
            match self.link() {
                Ok(link) => {
                    self.changed.send_modify(|n| *n += 1);
                    // Until this link closes (a word about an older link
                    // is skipped); wakes once a minute to notice nobody
                    // listens any more.
                    while link.closed().is_none() {
                        match closed.recv_timeout(Duration::from_secs(60)) {
                            Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                            Err(mpsc::RecvTimeoutError::Disconnected) => return,
                        }
                        if self.changed.is_closed() {
                            link.close();
                            return;
                        }
                    }
                    tracing::warn!(host = %self.name, why = ?link.closed(), "the daemon's link closed; reconnecting");
                    self.changed.send_modify(|n| *n += 1);
                    std::thread::sleep(BACKOFF_FIRST);
                }
                Err(_) => {
                    self.changed.send_modify(|n| *n += 1);
                    // The back-off (another machine), or a second.
                    let wait = self
                        .down
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .as_ref()
                        .map_or(BACKOFF_FIRST, |d| {
                            d.until.saturating_duration_since(Instant::now())
                        });
                    std::thread::sleep(wait.max(Duration::from_millis(100)));
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Remote {
        Remote {
            target: "ssh://far".parse().unwrap(),
            label: "far".into(),
            // A "ssh" that fails at once, as an unreachable host does.
            ssh: vec!["/bin/false".into()],
            remote_ccd: "ccd".into(),
            stderr: StderrSink::Inherit,
            batch: false,
        }
    }

    #[test]
    fn an_unreachable_machine_is_refused_at_once_until_its_back_off_passes() {
        let m = Machine::remote(&far());
        assert_eq!(m.name, "far");
        assert!(m.is_remote());
        let first = m.link().err().expect("unreachable");
        assert!(
            first.to_string().starts_with("far is unreachable: far: "),
            "{first}"
        );
        let t = Instant::now();
        let again = m.link().err().expect("still down");
        assert!(t.elapsed() < Duration::from_millis(100));
        assert!(
            again.to_string().starts_with("far is unreachable: "),
            "{again}"
        );
        let next = m
            .down
            .lock()
            .unwrap()
            .as_ref()
            .map(|d| d.next)
            .expect("down");
        assert_eq!(next, BACKOFF_FIRST * 2);
    }
}
