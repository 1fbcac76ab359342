//! What every connection shares: the aggregate [`Daemon`], made once by
//! the server and handed (behind an `Arc`) to every connection.
//!
//! Only the layers above it (the connection context, the session
//! operations, the handlers, the router, the connection loop, the
//! server) import this module; the tasks and services below it are given
//! the fields they use instead (see `docs/architecture.md`, "The daemon's
//! modules").

use crate::cost::CostBoard;
use crate::events::EventHub;
use crate::holders::HolderTable;
pub use crate::options::DaemonOptions;
use crate::usage::UsageBoard;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// The longest a stop waits (the server's drain, `daemon.stop`'s reply) for the connections to write what is queued
/// for their clients (a client that reads nothing is cut off then).
pub const DRAIN_BOUND: Duration = Duration::from_secs(2);

/// The daemon's shared state. Fields are immutable or internally locked;
/// no lock is held across an `.await`.
pub struct Daemon {
    pub options: DaemonOptions,
    pub started_at: SystemTime,
    pub holders: Arc<HolderTable>,
    /// Open client connections.
    pub clients: AtomicUsize,
    /// Connections refused for a wrong peer uid.
    pub refused: AtomicU64,
    /// Set to true when the daemon is stopping.
    pub shutdown: watch::Sender<bool>,
    /// Set the moment `daemon.stop` is accepted: new requests are refused
    /// from then on, while the reply still goes out.
    /// Shared with the tasks that must stop with it (the reaper).
    pub stopping: Arc<AtomicBool>,
    /// Where events are published.
    pub events: EventHub,
    /// What each live session costs, as last sampled.
    pub costs: Arc<CostBoard>,
    /// What each conversation cost in tokens and dollars, as last read.
    pub usage: Arc<UsageBoard>,
    /// The restore record (what ccd holds, durably) and lost sessions.
    pub restore: Arc<crate::restore::Restore>,
    /// The search index kept open for `sessions.search`, and its slots.
    pub search: Arc<crate::search::SearchService>,
}

impl Daemon {
    pub fn new(options: DaemonOptions) -> Self {
        let events = EventHub::default();
        let holders = Arc::new(HolderTable::new(
            options.socket_dir.holders_dir(),
            events.clone(),
        ));
        let restore = Arc::new(
            crate::restore::Restore::open(
                options.state_dir.clone(),
                options.restore,
                options.restore_at_once,
            )
            .with_projects(options.claude_config.projects_dir()),
        );
        let search = Arc::new(crate::search::SearchService::new(
            options.state_dir.clone(),
            options.claude_config.clone(),
            options.context_windows.clone(),
        ));
        Self {
            restore,
            search,
            options,
            started_at: SystemTime::now(),
            holders,
            clients: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            shutdown: watch::channel(false).0,
            stopping: Arc::new(AtomicBool::new(false)),
            events,
            costs: Default::default(),
            usage: Default::default(),
        }
    }

    pub fn is_stopping(&self) -> bool {
        *self.shutdown.borrow() || self.stopping.load(Ordering::Acquire)
    }
}
