//! How a sink is doing: sends, failures, drops and the last error, shared
//! by the sink's worker (which records) and its owner (which reads it, and
//! the daemon writes it where `ccd doctor` reads it: `notify-<sink>.json`
//! in the state dir).
//!
//! A failure is logged once (`warn`) when it starts or its words change,
//! not at every send; a send that works again after failures is logged
//! once (`info`).
//!
//! [`Queue`]: the front of a daemon sink (`command`, `webhook`): a bounded
//! queue into the sink's worker, whose sends never wait (a full queue
//! drops the notification and counts it in the [`Health`]).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

use crate::notification::Notification;

/// A sink's bounded queue into its worker, and its [`Health`] (see the
/// module doc). Cloning it shares both.
#[derive(Debug, Clone)]
pub struct Queue {
    tx: mpsc::Sender<Notification>,
    health: Health,
}

impl Queue {
    /// A queue of at most `bound` waiting; the worker reads the receiver.
    pub fn new(bound: usize, health: Health) -> (Self, mpsc::Receiver<Notification>) {
        let (tx, rx) = mpsc::channel(bound);
        (Self { tx, health }, rx)
    }

    /// Queues `n` (never waits; a full queue drops it and counts it).
    pub fn send(&self, n: Notification) {
        if self.tx.try_send(n).is_err() {
            self.health.dropped();
        }
    }

    pub fn health(&self) -> &Health {
        &self.health
    }
}

/// A sink's record (the file `ccd doctor` reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkReport {
    /// `command` or `webhook`.
    pub sink: String,
    /// What it sends to (the argv's first word, the webhook's URL).
    pub target: String,
    pub sent: u64,
    pub failed: u64,
    /// Dropped because its queue was full.
    pub dropped: u64,
    /// The last send's failure, while the sink fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ok_at: Option<i64>,
}

/// A sink's shared record; cloned into its worker.
#[derive(Debug, Clone)]
pub struct Health {
    inner: Arc<Mutex<SinkReport>>,
    /// Where the record is written on each change (none: kept in memory).
    file: Option<PathBuf>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Health {
    /// A record for `sink` sending to `target`, written to `file` when
    /// given.
    pub fn new(sink: &str, target: &str, file: Option<PathBuf>) -> Self {
        let h = Self {
            inner: Arc::new(Mutex::new(SinkReport {
                sink: sink.into(),
                target: target.into(),
                ..SinkReport::default()
            })),
            file,
        };
        h.write();
        h
    }

    /// The record now.
    pub fn report(&self) -> SinkReport {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SinkReport> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A send worked.
    pub fn ok(&self) {
        let mut r = self.lock();
        r.sent += 1;
        r.last_ok_at = Some(now_ms());
        if let Some(e) = r.last_error.take() {
            tracing::info!(sink = %r.sink, target = %r.target, after = %e, "notify: sink works again");
        }
        drop(r);
        self.write();
    }

    /// A send failed with `error` (said in the log once while it is the
    /// same).
    pub fn failed(&self, error: &str) {
        let mut r = self.lock();
        r.failed += 1;
        r.last_error_at = Some(now_ms());
        if r.last_error.as_deref() != Some(error) {
            tracing::warn!(sink = %r.sink, target = %r.target, error, "notify: send failed");
            r.last_error = Some(error.to_string());
        }
        drop(r);
        self.write();
    }

    /// A notification dropped: the sink's queue was full.
    pub fn dropped(&self) {
        let mut r = self.lock();
        r.dropped += 1;
        if r.dropped == 1 || r.dropped.is_power_of_two() {
            tracing::warn!(sink = %r.sink, dropped = r.dropped, "notify: queue full, notification dropped");
        }
        drop(r);
        self.write();
    }

    fn write(&self) {
        let Some(file) = &self.file else { return };
        let r = self.report();
        if let Err(e) = write_report(file, &r) {
            tracing::debug!(file = %file.display(), error = %e, "notify: sink record not written");
        }
    }
}

/// Writes `r` to `file` (through a temporary file renamed over it).
pub fn write_report(file: &Path, r: &SinkReport) -> std::io::Result<()> {
    let tmp = file.with_extension("json.tmp");
    let body = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, file)
}

/// Reads a record written by [`Health`] (`None`: absent or unreadable).
pub fn read_report(file: &Path) -> Option<SinkReport> {
    let bytes = std::fs::read(file).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_follows_sends_and_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notify-command.json");
        let h = Health::new("command", "ntfy", Some(file.clone()));
        h.failed("exit status 1");
        h.failed("exit status 1");
        let r = read_report(&file).unwrap();
        assert_eq!((r.sent, r.failed), (0, 2));
        assert_eq!(r.last_error.as_deref(), Some("exit status 1"));
        h.ok();
        h.dropped();
        let r = read_report(&file).unwrap();
        assert_eq!((r.sent, r.failed, r.dropped), (1, 2, 1));
        assert_eq!(r.last_error, None);
    }
}
