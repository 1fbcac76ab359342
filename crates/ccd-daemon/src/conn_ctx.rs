//! What a request handler can see of its connection ([`ConnCtx`]): the
//! daemon, the connection's bounded out queue, its attachments, transcript
//! followers, event subscription and terminal focus (released by drop:
//! a connection that ends counts as not focused), the signals tied
//! to its replies, and whether its client hung up. Made by the connection
//! loop (`connection`), handed to the router and through it to every
//! handler and session operation.

use crate::conn_slots::{Slots, TaskGuard};
use crate::holders::attachment::Attachment;
use crate::out_queue::OutSender;
use crate::state::Daemon;
use ccd_protocol::{Id, NotificationKind};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::Interest;
use tokio::net::UnixStream;

/// What a request handler can see of its connection.
pub struct ConnCtx {
    pub daemon: Arc<Daemon>,
    out: OutSender,
    handshaken: AtomicBool,
    /// Session id → this connection's attachment to it.
    pub attachments: Slots<Attachment>,
    /// Session id → the task following its transcript (observe of a
    /// session running outside ccd).
    pub followers: Slots<TaskGuard>,
    /// The task forwarding events to this connection, once subscribed.
    pub subscription: Mutex<Option<TaskGuard>>,
    /// The session this connection's terminal has the focus of
    /// (`session.focus`); taken back when the context drops.
    pub focus: Mutex<crate::events::focus::ConnFocus>,
    /// Fired once the reply to a request (by id) is queued: streams a
    /// request starts wait for it, so the reply precedes their output.
    replied: Mutex<HashMap<String, tokio::sync::oneshot::Sender<()>>>,
    /// Descriptors to send with the reply to a request (by id).
    reply_fds: Mutex<HashMap<String, OwnedFd>>,
    /// True once the client's socket hung up (see `connection`).
    hung_up: Arc<tokio::sync::watch::Sender<bool>>,
    /// The task watching for that, from the client's EOF on.
    hangup_watch: Mutex<Option<TaskGuard>>,
}

impl ConnCtx {
    /// The context of a new connection of `daemon` whose lines go to `out`.
    pub fn new(daemon: Arc<Daemon>, out: OutSender) -> Self {
        Self {
            focus: Mutex::new(crate::events::focus::ConnFocus::new(daemon.events.clone())),
            daemon,
            out,
            handshaken: AtomicBool::new(false),
            attachments: Slots::default(),
            followers: Slots::default(),
            subscription: Mutex::new(None),
            replied: Mutex::new(HashMap::new()),
            reply_fds: Mutex::new(HashMap::new()),
            hung_up: Arc::new(tokio::sync::watch::channel(false).0),
            hangup_watch: Mutex::new(None),
        }
    }

    /// Whether the client said `hello` (successfully).
    pub fn handshaken(&self) -> bool {
        self.handshaken.load(Ordering::Acquire)
    }

    /// The client said `hello`: every method is open from now on.
    pub(crate) fn mark_handshaken(&self) {
        self.handshaken.store(true, Ordering::Release);
    }

    /// The client's socket is gone (a read error): see [`Self::hung_up`].
    pub(crate) fn mark_hung_up(&self) {
        self.hung_up.send_replace(true);
    }

    /// Queues one encoded line and `fd`, sent with its first byte.
    pub(crate) async fn send_line_with_fd(&self, line: Vec<u8>, fd: OwnedFd) -> bool {
        self.out.send_with_fd(line, fd).await
    }

    /// Queues one encoded line (waits while the client's queue is full).
    pub async fn send_line(&self, line: Vec<u8>) -> bool {
        self.out.send(line).await
    }

    /// Queues a notification.
    pub async fn notify<N: NotificationKind>(&self, params: &N::Params) -> bool {
        notify::<N>(&self.out, params).await
    }

    /// A sender for tasks that outlive one request (attach forwarders).
    pub fn out(&self) -> OutSender {
        self.out.clone()
    }

    /// A signal that fires once the reply to request `id` is queued.
    pub fn after_reply(&self, id: &Id) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut m) = self.replied.lock() {
            m.insert(id_key(id), tx);
        }
        rx
    }

    /// Sends `fd` along with the reply to request `id` (only a request
    /// with an id gets one; otherwise `fd` is closed unsent).
    pub fn pass_with_reply(&self, id: &Id, fd: OwnedFd) {
        if let Ok(mut m) = self.reply_fds.lock() {
            m.insert(id_key(id), fd);
        }
    }

    /// Resolves once the client has closed its socket altogether (not
    /// only its write side): whoever waits only on its behalf may stop.
    /// Never resolves while the client is connected.
    pub async fn hung_up(&self) {
        let mut rx = self.hung_up.subscribe();
        // The sender lives as long as `self`: no error while we wait.
        let _ = rx.wait_for(|gone| *gone).await;
    }

    /// From the client's EOF on: watch its socket for the hang-up.
    pub(crate) fn watch_hangup(&self, sock: &UnixStream) {
        use std::os::fd::AsFd;
        let fd = match sock.as_fd().try_clone_to_owned() {
            Ok(fd) => fd,
            Err(error) => {
                tracing::debug!(%error, "cannot watch the client's socket for a hang-up");
                return;
            }
        };
        let gone = self.hung_up.clone();
        let task = tokio::spawn(async move {
            let afd = match crate::reactor::Watched::new(fd, Interest::WRITABLE) {
                Ok(afd) => afd,
                Err(error) => {
                    tracing::debug!(%error, "cannot watch the client's socket for a hang-up");
                    return;
                }
            };
            // EPOLLHUP (both directions shut) reads as write-closed; other
            // wakeups (room to write again) are cleared and waited past.
            loop {
                let Ok(mut ready) = afd.writable().await else {
                    return;
                };
                if ready.ready().is_write_closed() {
                    break;
                }
                ready.clear_ready();
            }
            tracing::debug!("the client hung up");
            gone.send_replace(true);
        });
        if let Ok(mut w) = self.hangup_watch.lock() {
            *w = Some(TaskGuard::new(task));
        }
    }

    pub(crate) fn take_reply_fd(&self, id: &Id) -> Option<OwnedFd> {
        self.reply_fds.lock().ok()?.remove(&id_key(id))
    }

    pub(crate) fn mark_replied(&self, id: &Id) {
        let tx = self
            .replied
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&id_key(id)));
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
    }
}

/// Queues a notification on `out` (what a task that outlives its request
/// uses: it holds the out queue, not the connection's context).
pub async fn notify<N: NotificationKind>(out: &OutSender, params: &N::Params) -> bool {
    let line = serde_json::to_value(params)
        .map(|v| ccd_protocol::Notification::new(N::NAME, Some(v)))
        .map_err(|e| e.to_string())
        .and_then(|n| ccd_protocol::encode(&n).map_err(|e| e.to_string()));
    match line {
        Ok(line) => out.send(line).await,
        Err(error) => {
            tracing::error!(method = N::NAME, %error, "cannot encode a notification");
            false
        }
    }
}

fn id_key(id: &Id) -> String {
    serde_json::to_string(id).unwrap_or_default()
}
