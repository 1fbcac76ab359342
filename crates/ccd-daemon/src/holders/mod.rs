//! The holders: one process per session ccd runs, each owning its PTY.
//!
//! The table is the daemon's only view of them. It is rebuilt at start by
//! adopting every socket in `holders/` that answers, refreshed by the
//! refresh watch task (`tasks::refresh_watch`; twice a second while a session is starting, changing or flagged by the
//! registry watcher or by the end of its program; a still one is checked
//! every [`QUIET_REFRESH`] through `/proc` and asked only when its holder
//! did something: [`pacing`]), and entries leave it when their exit has been collected
//! (kept in `finished` for reporting) or when the holder process died.
//! The lock is a plain mutex held only to copy or update entries, never
//! across I/O.
//!
//! Here: the table and its entries. Beside it: `adopt` (rebuilding the
//! table at start), `refresh` (one refresh, the events it publishes, and
//! collecting an ended session), [`pacing`] (when to refresh, and one pass
//! of the refresh watch), [`spawn`] (starting a holder), [`rpc`] (the
//! holder client), [`relay`] and [`attachment`] (a client's attachment
//! through the daemon). The holders sit below the daemon's aggregate state
//! and below the tasks (`tasks/`: the refresh watch, the reaper, the
//! registry watch), which are handed the table (an `Arc<HolderTable>`),
//! the event hub and the settings they use.

mod adopt;
pub mod attachment;
pub mod pacing;
mod refresh;
pub mod relay;
pub mod rpc;
pub mod spawn;
pub mod spec;

use ccd_protocol::holder::HolderMethod;
use ccd_protocol::holder::{self as h, ExitInfo, InfoResult};
use ccd_protocol::methods::events::EventKind;
use ccd_protocol::methods::session::Lifecycle;
use rpc::{HolderConn, HolderError};
use serde_json::json;
use spec::HolderMeta;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One live holder.
#[derive(Debug, Clone)]
pub struct HolderEntry {
    pub id: String,
    pub socket: PathBuf,
    pub meta: HolderMeta,
    /// The latest `holder.info`.
    pub info: Option<InfoResult>,
    /// The holder protocol version it speaks, once a `holder.hello` (at
    /// adoption, or on its kept info connection) told:
    /// [`h::PRE_VERSIONING`] for a holder from before versioning.
    pub protocol: Option<u32>,
    /// Which request `info` answers ([`HolderTable::refresh`] numbers them):
    /// a reply that comes back after a newer one was stored is dropped, so
    /// the table never goes back to an older state.
    info_asked: u64,
    /// Consecutive ticks on which the child was seen exited.
    exited_ticks: u32,
    failed_calls: u32,
    /// A collect is in flight: the holder may vanish any moment, which is
    /// not a death.
    collecting: bool,
    /// When `info` was last stored.
    refreshed_at: Option<Instant>,
    /// When a refresh last saw something change (see `refresh::activity_of`).
    changed_at: Instant,
    /// Refresh on the next tick whatever the pace (the registry entry of
    /// its session changed, a client attached, its program or holder
    /// ended).
    dirty: bool,
    /// When a quiet check last found the holder had done nothing
    /// ([`pacing`]).
    checked_at: Option<Instant>,
    /// The holder's thread count taken before the request whose `info`
    /// is stored ([`pacing`]).
    threads: Option<u64>,
    /// How `/proc` tells whether it did something ([`pacing`]).
    probe: pacing::Probe,
    /// Whether the ends of its program and holder are waited for.
    exit_watching: pacing::ExitWatching,
}

impl HolderEntry {
    fn new(
        id: String,
        socket: PathBuf,
        meta: HolderMeta,
        info: Option<InfoResult>,
        info_asked: u64,
    ) -> Self {
        Self {
            id,
            socket,
            meta,
            info,
            protocol: None,
            info_asked,
            exited_ticks: 0,
            failed_calls: 0,
            collecting: false,
            refreshed_at: None,
            changed_at: Instant::now(),
            dirty: false,
            checked_at: None,
            threads: None,
            probe: pacing::Probe::Unknown,
            exit_watching: pacing::ExitWatching::No,
        }
    }

    /// The holder process's pid, once known.
    pub fn holder_pid(&self) -> Option<u32> {
        self.info
            .as_ref()
            .map(|i| i.holder_pid)
            .or(self.meta.holder_pid)
    }

    /// The session id: the conversation the child writes as of the last
    /// refresh (what its registry entry named then; the expected one
    /// before the entry exists).
    pub fn session_id(&self) -> Option<&str> {
        self.info
            .as_ref()
            .and_then(|i| i.session_id.as_deref())
            .or(self.meta.session_id.as_deref())
    }

    /// Refuses what a holder speaking an older holder protocol cannot do:
    /// `Ok` when its version (once known) is at least `min`, else
    /// `permission_denied` naming the holder, its version and `what` it
    /// lacks. A version not known yet is let through (the holder's reply
    /// decides).
    pub fn require(&self, min: u32, what: &str) -> Result<(), ccd_protocol::RpcError> {
        match self.protocol {
            Some(v) => self.require_at(v, min, what),
            None => Ok(()),
        }
    }

    /// [`Self::require`] with the version `v` a connection negotiated.
    pub fn require_at(&self, v: u32, min: u32, what: &str) -> Result<(), ccd_protocol::RpcError> {
        match v {
            v if v < min => {
                let session = self.session_id().unwrap_or(&self.id);
                Err(ccd_protocol::RpcError::new(
                    ccd_protocol::ErrorCode::PermissionDenied,
                    format!(
                        "session {session}: its holder {} speaks holder protocol {v} (started by an older ccd), which cannot {what}; it needs version {min} (kill and resume the session to get a current holder)",
                        self.id
                    ),
                )
                .with_data(json!({
                    "session": session,
                    "holder": self.id,
                    "holder_protocol": v,
                    "needs": min,
                })))
            }
            _ => Ok(()),
        }
    }

    /// [`rpc::HolderError::into_rpc`] for a call on this holder.
    pub fn rpc_error(&self, e: HolderError) -> ccd_protocol::RpcError {
        e.into_rpc(self.session_id().unwrap_or(&self.id), &self.id)
    }

    /// ccd's lifecycle of the session.
    pub fn lifecycle(&self) -> Lifecycle {
        match &self.info {
            None => Lifecycle::Starting,
            Some(i) => lifecycle_of(i),
        }
    }
}

/// `needs-attention` beats the state; a ready session shows its registry
/// status (`idle`/`busy`/`waiting`).
pub fn lifecycle_of(i: &InfoResult) -> Lifecycle {
    if i.needs_attention.is_some() && i.exit.is_none() {
        return Lifecycle::NeedsAttention;
    }
    if i.state == h::State::Ready {
        if let Some(s) = i.status.as_ref().and_then(|s| s.status.clone()) {
            return Lifecycle::from(s);
        }
    }
    Lifecycle::from(i.state.as_str())
}

/// What a permission dialog asks for, in a word or two: its heading, else
/// its kind.
pub fn permission_tool(p: &ccd_protocol::holder::PermissionInfo) -> String {
    p.heading
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| p.kind.clone())
}

/// The prompt id of a permission dialog a holder reports (the one
/// `session.respond` checks the screen against).
pub fn permission_prompt_id(p: &ccd_protocol::holder::PermissionInfo) -> String {
    ccd_screen::prompt_id(
        &p.kind,
        p.heading.as_deref(),
        p.detail.as_deref(),
        &p.options,
    )
}

/// A human sentence for an attention reason (the events say it; so do
/// `session.new` and the listing).
pub fn attention_text(r: &ccd_protocol::holder::AttentionReason) -> String {
    use ccd_protocol::holder::AttentionReason as A;
    match r {
        A::ApiKeyDialog => "Claude Code asks whether to use the API key in the environment (ccd never answers this)".into(),
        A::TrustDialog => "the folder-trust dialog is waiting (auto-trust is off)".into(),
        A::TrustAmbiguous { detail } => format!("the trust dialog cannot be answered safely: {detail}"),
        A::TrustUnverified { detail } => format!("could not verify the trust option was selected: {detail}"),
        A::UnknownBlockingScreen { hint } => format!("an unrecognized screen is waiting for input: {hint}"),
    }
}

/// What the registry watcher needs of a holder to match processes to it.
#[derive(Debug, Clone)]
pub struct HolderPids {
    pub id: String,
    pub holder_pid: Option<u32>,
    pub child_pid: Option<u32>,
}

pub use pacing::QUIET_REFRESH;

/// A session whose holder is gone.
#[derive(Debug, Clone)]
pub struct Finished {
    pub meta: HolderMeta,
    /// The conversation the child wrote last.
    pub session_id: Option<String>,
    pub child_pid: Option<u32>,
    pub exit: Option<ExitInfo>,
    /// `exited` or `failed` (the holder's), or `reaped` (ccd stopped it).
    pub state: Lifecycle,
    pub failure: Option<String>,
    pub screen: String,
}

const FINISHED_KEPT: usize = 200;

/// The failure of a session whose holder process died (no exit
/// collected): the restore record keeps such a session (`restore`).
pub const HOLDER_DIED: &str = "the holder process died";

/// The most direct streams the daemon opens to one holder at once (each
/// from its connect until the holder answered its hello): 2 of the 8
/// connections a holder keeps for the daemon, beside its two kept ones,
/// leaving 4 to its calls (screen, kill, collect, attachments).
pub const DIRECT_OPENS_AT_ONCE: usize = 2;

/// Every holder the daemon knows.
pub struct HolderTable {
    dir: PathBuf,
    events: crate::events::EventHub,
    live: Mutex<HashMap<String, HolderEntry>>,
    finished: Mutex<VecDeque<Finished>>,
    /// Numbers the `holder.info` requests (see `HolderEntry::info_asked`).
    asks: std::sync::atomic::AtomicU64,
    /// An idle connection per holder for `holder.info`, reused by every
    /// refresh: a refresh is one request on an open connection instead of
    /// a connect (and a new thread in the holder) twice a second per
    /// session. Taken out while in use (a concurrent refresh opens its
    /// own); the mutex is never held across an await; pruned of holders no
    /// longer live on every watch tick.
    info_conns: Mutex<HashMap<String, HolderConn>>,
    /// One connection per holder for `holder.input`/`holder.resize` from
    /// requests outside an attachment ([`Self::call_serialized`]): every
    /// such call queues on its holder's async mutex (FIFO) instead of
    /// opening a connection — and a thread in the holder — of its own, so
    /// any number of pending inputs cost the holder one connection, and
    /// keys keep the order their requests reached the queue. The map's
    /// mutex is held only to find or add a slot; the slot's async mutex is
    /// held across the call, which is bounded by [`rpc::CALL_TIMEOUT`]
    /// (waiting in the queue included). Pruned with the info connections.
    input_conns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<HolderConn>>>>>,
    /// Per holder, the direct streams being opened
    /// ([`Self::direct_opening`]): at most [`DIRECT_OPENS_AT_ONCE`]. Until
    /// its hello is answered a direct stream is the daemon's own to the
    /// holder, and takes one of the slots it keeps for the daemon; the
    /// bound leaves the rest to the daemon's calls however many direct
    /// attaches come at once. Pruned with the info connections.
    direct_opens: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
    /// Wakes the refresh watch task when an entry is flagged or added
    /// ([`pacing`]).
    wake: tokio::sync::Notify,
    /// Wakes the restore record's task (`tasks::record`) when a holder
    /// is added, pinned, renamed or leaves the table, or its session
    /// changes conversation.
    pub changed: tokio::sync::Notify,
}

impl HolderTable {
    pub fn new(dir: PathBuf, events: crate::events::EventHub) -> Self {
        Self {
            dir,
            events,
            live: Mutex::new(HashMap::new()),
            finished: Mutex::new(VecDeque::new()),
            asks: std::sync::atomic::AtomicU64::new(0),
            info_conns: Mutex::new(HashMap::new()),
            input_conns: Mutex::new(HashMap::new()),
            direct_opens: Mutex::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Calls `M` on `entry`'s shared input connection (see
    /// `input_conns`), opening it when there is none. A kept connection
    /// found closed before the request was written whole is replaced once
    /// and the request sent on the new one; a request written and then
    /// met by a closed connection fails, never sent twice (the holder may
    /// have typed it). The whole call, queueing included, takes at most
    /// [`rpc::CALL_TIMEOUT`].
    pub async fn call_serialized<M: HolderMethod>(
        &self,
        entry: &HolderEntry,
        params: &M::Params,
    ) -> Result<M::Result, HolderError> {
        let slot = self
            .input_conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(entry.id.clone())
            .or_default()
            .clone();
        let call = async {
            let mut kept = slot.lock().await;
            // Taken out for the call: a call cancelled (timed out) midway
            // drops its connection rather than leaving a reply in flight.
            let reused = kept.is_some();
            // A kept connection says hello once, when opened.
            let mut conn = match kept.take() {
                Some(c) => c,
                None => HolderConn::connect_hello(&entry.socket).await?,
            };
            let result = match conn.call::<M>(params).await {
                // Sent again only when the request never reached the
                // holder whole (the kept connection was found closed as it
                // was written): once written, the holder may have typed it.
                Err(HolderError::Io(_) | HolderError::Closed)
                    if reused && !conn.request_written() =>
                {
                    tracing::debug!(holder = %entry.id, "kept input connection closed; reconnecting");
                    conn = HolderConn::connect_hello(&entry.socket).await?;
                    conn.call::<M>(params).await
                }
                r => r,
            };
            if matches!(result, Ok(_) | Err(HolderError::Rpc(_))) {
                *kept = Some(conn);
            }
            result
        };
        tokio::time::timeout(rpc::CALL_TIMEOUT, call)
            .await
            .map_err(|_| HolderError::Timeout)?
    }

    /// Closes the idle info connections of holders no longer live.
    fn prune_info_conns(&self) {
        let live: std::collections::HashSet<String> = match self.live.lock() {
            Ok(m) => m.keys().cloned().collect(),
            Err(_) => return,
        };
        if let Ok(mut m) = self.info_conns.lock() {
            m.retain(|id, _| live.contains(id));
        }
        if let Ok(mut m) = self.input_conns.lock() {
            m.retain(|id, _| live.contains(id));
        }
        if let Ok(mut m) = self.direct_opens.lock() {
            m.retain(|id, _| live.contains(id));
        }
    }

    /// A turn to open a direct stream to holder `id` (see `direct_opens`);
    /// held until the holder answered the stream's hello. Waits for one
    /// at most `within`: `None` then.
    pub async fn direct_opening(
        &self,
        id: &str,
        within: std::time::Duration,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let turns = self
            .direct_opens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.to_string())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(DIRECT_OPENS_AT_ONCE)))
            .clone();
        tokio::time::timeout(within, turns.acquire_owned())
            .await
            .ok()?
            .ok()
    }

    fn next_ask(&self) -> u64 {
        self.asks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Checks `holders/` is ours, 0700 and not a symlink
    /// ([`ccd_socket_dir::SocketDir::verify_holders`]) before a holder socket
    /// there is created, adopted or connected to for a client.
    pub fn verify_dir(&self) -> Result<(), ccd_socket_dir::SocketDirError> {
        let parent = self.dir.parent().unwrap_or(&self.dir);
        ccd_socket_dir::SocketDir::new(parent).verify_holders()
    }

    /// [`Self::verify_dir`] as the error a request gets
    /// (`permission_denied`, the refusal's message, with its `fix`).
    pub fn verify_dir_rpc(&self) -> Result<(), ccd_protocol::RpcError> {
        self.verify_dir().map_err(|e| {
            tracing::error!(error = %e, "refusing to use the holders directory");
            ccd_protocol::RpcError::new(ccd_protocol::ErrorCode::PermissionDenied, e.to_string())
                .with_data(json!({"path": self.dir, "fix": e.fix()}))
        })
    }

    pub fn socket_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.sock"))
    }

    fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Removes holder `id`'s metadata and its typing mark
    /// (`ccd_sched::typing`), which the holder removes itself when it ends
    /// well.
    fn remove_records(&self, id: &str) {
        let _ = std::fs::remove_file(self.meta_path(id));
        let _ = std::fs::remove_file(ccd_sched::typing::mark_of(&self.socket_of(id)));
    }

    /// The pids of every live holder and its child, for matching registry
    /// entries to holders (no screens copied).
    pub(crate) fn pids(&self) -> Vec<HolderPids> {
        self.live
            .lock()
            .map(|m| {
                m.values()
                    .map(|e| HolderPids {
                        id: e.id.clone(),
                        holder_pid: e.holder_pid(),
                        child_pid: e.info.as_ref().map(|i| i.child_pid),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Copies of every live entry.
    pub fn snapshot(&self) -> Vec<HolderEntry> {
        self.live
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The first entry `pred` accepts, cloned (the others are not: an
    /// attach by full id looks at every entry and keeps one).
    pub fn find(&self, pred: impl Fn(&HolderEntry) -> bool) -> Option<HolderEntry> {
        self.live.lock().ok()?.values().find(|h| pred(h)).cloned()
    }

    pub fn get(&self, id: &str) -> Option<HolderEntry> {
        self.live.lock().ok()?.get(id).cloned()
    }

    /// Every finished record kept, oldest first.
    pub fn finished(&self) -> Vec<Finished> {
        self.finished
            .lock()
            .map(|f| f.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The finished record of holder `id`.
    pub fn finished_for_holder(&self, id: &str) -> Option<Finished> {
        let f = self.finished.lock().ok()?;
        f.iter().rev().find(|f| f.meta.id == id).cloned()
    }

    /// Adds a holder the daemon just started (its metadata is written).
    pub fn insert(&self, meta: HolderMeta) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&meta).map_err(std::io::Error::other)?;
        std::fs::write(self.meta_path(&meta.id), bytes)?;
        let entry = HolderEntry::new(meta.id.clone(), self.socket_of(&meta.id), meta, None, 0);
        if let Ok(mut m) = self.live.lock() {
            m.insert(entry.id.clone(), entry);
        }
        self.wake();
        self.changed.notify_one();
        Ok(())
    }

    /// Pins or unpins holder `id` (persisted beside its socket).
    pub fn set_pinned(&self, id: &str, pinned: bool) -> std::io::Result<()> {
        let meta = {
            let mut m = self
                .live
                .lock()
                .map_err(|_| std::io::Error::other("holder table poisoned"))?;
            let Some(e) = m.get_mut(id) else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such holder",
                ));
            };
            e.meta.pinned = pinned;
            e.meta.clone()
        };
        self.changed.notify_one();
        let bytes = serde_json::to_vec(&meta).map_err(std::io::Error::other)?;
        std::fs::write(self.meta_path(id), bytes)
    }

    /// Lists sessions lost when the machine went down (the restore
    /// record's), as finished records in state `lost`, until restored
    /// ([`Self::unlist_lost`]).
    pub fn list_lost(&self, lost: Vec<Finished>) {
        if let Ok(mut f) = self.finished.lock() {
            for l in lost {
                f.retain(|x| !(x.state == Lifecycle::Lost && x.session_id == l.session_id));
                f.push_back(l);
            }
            while f.len() > FINISHED_KEPT {
                f.pop_front();
            }
        }
    }

    /// Takes lost session `sid` off the list (restored, or forgotten).
    pub fn unlist_lost(&self, sid: &str) {
        if let Ok(mut f) = self.finished.lock() {
            f.retain(|x| !(x.state == Lifecycle::Lost && x.session_id.as_deref() == Some(sid)));
        }
    }

    /// Drops a holder that never came up.
    pub fn forget(&self, id: &str) {
        if let Ok(mut m) = self.live.lock() {
            m.remove(id);
        }
        self.remove_records(id);
        let _ = std::fs::remove_file(self.socket_of(id));
    }

    /// Takes holder `id` out of the table for good, leaving no finished
    /// record (and publishing no exit): for a copy of a session ccd started
    /// and stopped itself because another process runs that session (a
    /// refused late resume), whose exit no later message should report.
    /// A collect racing this retires nothing (the entry is gone); a record
    /// it left already is dropped too. The caller ends the holder.
    ///
    /// Its `session.lifecycle` events end with one saying `discarded` (held
    /// no more), so a subscriber's view of the holder closes.
    pub fn discard(&self, id: &str) {
        let gone = self.live.lock().ok().and_then(|mut m| m.remove(id));
        if let Some(e) = gone.filter(|e| e.session_id().is_some()) {
            use ccd_protocol::methods::events::Event;
            let mut ev = Event::new(
                EventKind::Lifecycle,
                e.session_id().map(String::from),
                crate::events::now_ms(),
            );
            ev.held = Some(false);
            ev.holder = Some(e.id.clone());
            ev.pid = e.info.as_ref().map(|i| i.child_pid);
            ev.status = Some(Lifecycle::Discarded);
            ev.previous = Some(e.lifecycle());
            ev.reason = Some("another process runs this session; ccd stopped its own copy".into());
            self.events.publish(ev);
        }
        if let Ok(mut m) = self.info_conns.lock() {
            m.remove(id);
        }
        if let Ok(mut f) = self.finished.lock() {
            f.retain(|f| f.meta.id != id);
        }
        self.remove_records(id);
        self.changed.notify_one();
    }

    /// Flags the holders whose child is one of `pids` for a refresh on the
    /// next tick (their registry entries changed: status, session id, or
    /// the program's exit).
    pub fn mark_dirty(&self, pids: &[u32]) {
        if pids.is_empty() {
            return;
        }
        let mut any = false;
        if let Ok(mut m) = self.live.lock() {
            for e in m.values_mut() {
                if e.info.as_ref().is_some_and(|i| pids.contains(&i.child_pid)) {
                    e.dirty = true;
                    any = true;
                }
            }
        }
        if any {
            self.wake();
        }
    }

    /// Flags holder `id` for a refresh at once (a client attached to it
    /// through this daemon, its program or its process ended).
    pub fn mark_dirty_holder(&self, id: &str) {
        self.update(id, |e| e.dirty = true);
        self.wake();
    }

    fn update(&self, id: &str, f: impl FnOnce(&mut HolderEntry)) {
        if let Ok(mut m) = self.live.lock() {
            if let Some(e) = m.get_mut(id) {
                f(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::refresh::activity_of;
    use super::*;

    pub(super) fn info(state: &str, output_bytes: u64) -> InfoResult {
        serde_json::from_value(json!({
            "holder_pid": 10, "child_pid": 11, "session_id": "s", "cwd": "/w",
            "argv": ["claude"], "state": state, "failure": null,
            "needs_attention": null, "status": {"status": "idle", "waiting_for": null, "session_id": "s"},
            "exit": null, "started_at": 0, "size": {"rows": 40, "cols": 120},
            "clients": [], "transitions": [], "output_bytes": output_bytes
        }))
        .expect("an InfoResult")
    }

    pub(super) fn entry(i: InfoResult) -> HolderEntry {
        let meta: HolderMeta = serde_json::from_value(json!({
            "id": "h1", "session_id": "s", "name": null, "cwd": "/w",
            "origin": "new", "created_at": 0
        }))
        .expect("meta");
        let mut e = HolderEntry::new("h1".into(), "/x.sock".into(), meta, Some(i), 1);
        e.refreshed_at = Some(Instant::now());
        e
    }

    #[test]
    fn what_an_old_holder_lacks_is_refused_naming_it_its_version_and_the_lack() {
        let mut e = entry(info("ready", 0));
        // Not asked yet: the holder's reply decides.
        assert!(e.require(1, "serve a direct stream").is_ok());
        e.protocol = Some(h::PRE_VERSIONING);
        let err = e
            .require(h::DIRECT_STREAM_VERSION, "serve a direct stream")
            .expect_err("version 0 is too old");
        assert_eq!(err.code, ccd_protocol::ErrorCode::PermissionDenied.code());
        for part in [
            "session s",
            "holder h1",
            "holder protocol 0",
            "cannot serve a direct stream",
            "version 1",
        ] {
            assert!(err.message.contains(part), "{part:?} in {}", err.message);
        }
        assert_eq!(
            err.data.as_ref().and_then(|d| d.get("holder_protocol")),
            Some(&json!(0))
        );
        e.protocol = Some(h::HOLDER_PROTOCOL_VERSION);
        assert!(e
            .require(h::DIRECT_STREAM_VERSION, "serve a direct stream")
            .is_ok());
    }

    #[test]
    fn holder_errors_keep_their_code_and_data_and_transport_failures_say_what_happened() {
        let e = entry(info("ready", 0));
        let own = ccd_protocol::RpcError::new(ccd_protocol::ErrorCode::InvalidParams, "size 0x0")
            .with_data(json!({"cols": 0}));
        assert_eq!(e.rpc_error(HolderError::Rpc(own.clone())), own);
        let gone = e.rpc_error(HolderError::Closed);
        assert_eq!(gone.code, ccd_protocol::ErrorCode::SessionNotRunning.code());
        assert!(gone.message.contains("h1"), "{}", gone.message);
        assert_eq!(
            gone.data.as_ref().and_then(|d| d.get("session")),
            Some(&json!("s"))
        );
        let exited = e.rpc_error(HolderError::Rpc(
            ccd_protocol::RpcError::new(
                ccd_protocol::ErrorCode::InvalidRequest,
                "the child has exited",
            )
            .with_data(json!({"reason": "exited"})),
        ));
        assert_eq!(
            exited.code,
            ccd_protocol::ErrorCode::SessionNotRunning.code()
        );
        assert!(exited.message.contains("has exited"), "{}", exited.message);
        let slow = e.rpc_error(HolderError::Timeout);
        assert_eq!(slow.code, ccd_protocol::ErrorCode::InternalError.code());
        assert!(slow.message.contains("did not answer"), "{}", slow.message);
    }

    #[test]
    fn output_a_client_or_a_status_counts_as_a_change() {
        let a = info("ready", 100);
        let same = info("ready", 100);
        let more = info("ready", 101);
        assert!(activity_of(&a) == activity_of(&same));
        assert!(activity_of(&a) != activity_of(&more));
        let mut busy = info("ready", 100);
        busy.status = busy.status.map(|mut s| {
            s.status = Some("busy".into());
            s
        });
        assert!(activity_of(&a) != activity_of(&busy));
        let mut attached = info("ready", 100);
        attached.clients = serde_json::from_value(json!([
            {"id": 1, "mode": "interactive", "bytes_dropped": 0, "resyncs": 0, "queued": 0}
        ]))
        .expect("clients");
        assert!(activity_of(&a) != activity_of(&attached));
    }

    /// A stand-in holder on `path` that answers `holder.hello` and the
    /// first `holder.input` of each connection, and reads the second and
    /// closes the connection without answering (as a holder would that
    /// typed the keys and then went away). Counts the inputs it read.
    async fn closing_holder(
        listener: tokio::net::UnixListener,
        inputs: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        while let Ok((stream, _)) = listener.accept().await {
            let inputs = inputs.clone();
            tokio::spawn(async move {
                let (rd, mut wr) = stream.into_split();
                let mut lines = BufReader::new(rd).lines();
                let mut answered = 0;
                while let Ok(Some(line)) = lines.next_line().await {
                    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                    let result = match v["method"].as_str() {
                        Some("holder.hello") => json!({
                            "protocol": h::HOLDER_PROTOCOL_VERSION,
                            "holder_version": "test",
                        }),
                        Some("holder.input") => {
                            inputs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            answered += 1;
                            if answered > 1 {
                                return; // read, acted on, never answered
                            }
                            json!({"ok": true})
                        }
                        _ => return,
                    };
                    let reply = json!({"jsonrpc": "2.0", "id": v["id"], "result": result});
                    let mut out = serde_json::to_vec(&reply).unwrap_or_default();
                    out.push(b'\n');
                    if wr.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    }

    #[tokio::test]
    async fn an_input_written_and_met_by_a_closed_connection_is_not_typed_twice() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let socket = dir.path().join("h1.sock");
        let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
        let inputs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let server = tokio::spawn(closing_holder(listener, inputs.clone()));
        let table = HolderTable::new(dir.path().to_path_buf(), crate::events::EventHub::default());
        let mut e = entry(info("ready", 0));
        e.socket = socket;
        let keys = h::InputParams {
            data: b"\x1b[Z".to_vec(),
        };

        // The first opens the kept connection and is answered.
        table
            .call_serialized::<h::Input>(&e, &keys)
            .await
            .expect("the first input is answered");
        // The second is read by the holder, which then closes the kept
        // connection unanswered: it fails, and is not sent again on a new
        // connection (a Shift-Tab typed twice moves the mode twice).
        let second = table.call_serialized::<h::Input>(&e, &keys).await;
        assert!(
            matches!(second, Err(HolderError::Closed | HolderError::Io(_))),
            "{second:?}"
        );
        assert_eq!(
            inputs.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "the input the holder read was sent again"
        );
        // The failed connection is not kept: the next input goes through
        // on a new one.
        table
            .call_serialized::<h::Input>(&e, &keys)
            .await
            .expect("a new connection after the closed one");
        assert_eq!(inputs.load(std::sync::atomic::Ordering::SeqCst), 3);
        server.abort();
    }
}
