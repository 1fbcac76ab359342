//! The threads that feed the main loop, each sending its one kind of
//! [`Msg`]: input (parked while an attached session has the keyboard),
//! signals, and this machine's. Another machine's are its link's
//! (`remote`).
//!
//! This machine's daemon is one [`Link`] (while one runs), held in
//! [`Here`]: the connector makes it (the first time starting a daemon
//! like every command; after a loss only a daemon that is back is used,
//! every [`RECONNECT`]), its reader passes the events on
//! ([`super::forward`]), and the loader (the listing from the files, with
//! what the daemon holds) and the worker (previews, costs and actions, one
//! at a time) call through it. Until the connector's first look settles
//! (a daemon answering, or none), the loader and the worker wait for it;
//! after that they take the link as it is (none: the files alone, and
//! "not running").

use super::forward::Forward;
use super::jobs::{self, Tails};
use super::{InputCtl, Job, Msg, RECONNECT, RELOAD_EVERY};
use crate::cli::GlobalArgs;
use crate::hosts::LOCAL;
use crate::ui::data;
use crate::ui::view::Daemon;
use ccd_client::{Client, ClientError, Link};
use ccd_protocol::methods::events::{EventNotification, EventsSubscribe, SubscribeParams};
use ccd_protocol::NotificationKind;
use ratatui::crossterm::event::{self};
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub(super) fn spawn_input(tx: SyncSender<Msg>, ctl: InputCtl) {
    std::thread::spawn(move || loop {
        ctl.park_if_asked();
        match event::poll(Duration::from_millis(200)) {
            Ok(true) => {
                if ctl.paused() {
                    continue;
                }
                match event::read() {
                    Ok(ev) => {
                        if tx.send(Msg::Input(ev)).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                }
            }
            Ok(false) => {}
            Err(_) => return,
        }
    });
}

pub(super) fn spawn_signals(tx: SyncSender<Msg>) -> Option<signal_hook::iterator::Handle> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]).ok()?;
    let handle = signals.handle();
    std::thread::spawn(move || {
        if let Some(s) = signals.forever().next() {
            let _ = tx.send(Msg::Signal(s));
        }
    });
    Some(handle)
}

/// This machine's link, as the connector last left it.
enum HereState {
    /// The connector's first look is not over.
    Looking,
    Up(Link),
    /// No daemon (or none that answers) now.
    Down,
}

/// This machine's link, shared by the connector (who sets it) and the
/// loader and worker (who call through it).
#[derive(Clone)]
pub(super) struct Here(Arc<(Mutex<HereState>, Condvar)>);

impl Here {
    pub(super) fn new() -> Self {
        Here(Arc::new((Mutex::new(HereState::Looking), Condvar::new())))
    }

    fn set(&self, state: HereState) {
        let (m, cv) = &*self.0;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = state;
        cv.notify_all();
    }

    /// The link once the connector's first look is over (`None`: no
    /// daemon now).
    fn link(&self) -> Option<Link> {
        let (m, cv) = &*self.0;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: the first look's connect has its own deadline.
        let until = Instant::now() + LOOK_AT_MOST;
        while matches!(*g, HereState::Looking) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            g = match cv.wait_timeout(g, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        match &*g {
            HereState::Up(l) => Some(l.clone()),
            _ => None,
        }
    }
}

/// The longest the loader or worker waits for the connector's first look.
const LOOK_AT_MOST: Duration = Duration::from_secs(30);

/// The connector of this machine's link: the first look takes a daemon
/// already running, else starts one (like every command); after a loss,
/// only a daemon that is back is used.
pub(super) fn spawn_connector(
    global: GlobalArgs,
    tx: SyncSender<Msg>,
    load: Sender<()>,
    here: Here,
) {
    std::thread::spawn(move || {
        let mut first = true;
        loop {
            let client = if first {
                first = false;
                match crate::shared::connect::connect_existing(&global) {
                    Ok(Some(c)) => Ok(c),
                    Ok(None) => {
                        // Nothing to wait for: the files alone until the
                        // daemon started here answers.
                        here.set(HereState::Down);
                        crate::shared::connect::connect(&global).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                }
                .map(Some)
            } else {
                crate::shared::connect::connect_existing(&global).map_err(|e| e.to_string())
            };
            let why = match client {
                Ok(Some(c)) => match serve_here(c, &tx, &load, &here) {
                    Some(why) => why,
                    None => return, // the dashboard is gone
                },
                Ok(None) => "no daemon running".to_string(),
                Err(e) => e,
            };
            here.set(HereState::Down);
            if tx
                .send(Msg::Daemon(LOCAL.into(), Daemon::Gone(why)))
                .is_err()
            {
                return;
            }
            std::thread::sleep(RECONNECT);
        }
    });
}

/// Runs `client` as this machine's link (events to the main loop, calls
/// for the loader and the worker) until it closes: why; `None` when the
/// dashboard is gone.
fn serve_here(c: Client, tx: &SyncSender<Msg>, load: &Sender<()>, here: &Here) -> Option<String> {
    let reload = load.clone();
    let events = Forward::new(
        LOCAL,
        tx.clone(),
        Box::new(move || {
            let _ = reload.send(());
        }),
        false,
    );
    let (closed_tx, closed) = mpsc::channel::<String>();
    let link = Link::builder()
        .subscribe(EventNotification::NAME, Forward::sink(events))
        .on_close(move |why| {
            let _ = closed_tx.send(why.to_string());
        })
        .start(c);
    let link = match link {
        Ok(l) => l,
        Err(e) => return Some(lost(&e)),
    };
    if let Err(e) = link.call::<EventsSubscribe>(&SubscribeParams { types: None }) {
        link.close();
        return Some(lost(&e));
    }
    here.set(HereState::Up(link.clone()));
    if tx
        .send(Msg::Daemon(LOCAL.into(), Daemon::Connected))
        .is_err()
    {
        return None;
    }
    let why = closed.recv().unwrap_or_default();
    here.set(HereState::Down);
    Some(match why.as_str() {
        "the connection closed" => "connection closed".to_string(),
        w if w.starts_with("connection to the ccd daemon") => "connection closed".to_string(),
        w => w.to_string(),
    })
}

/// Why this machine's connection was lost, as the dashboard says it.
fn lost(e: &ClientError) -> String {
    match e {
        ClientError::Io(_) | ClientError::Closed | ClientError::LinkClosed { .. } => {
            "connection closed".to_string()
        }
        other => other.to_string(),
    }
}

/// Builds the listing on request; requests made while one is built are
/// served by one more build.
pub(super) fn spawn_loader(global: GlobalArgs, tx: SyncSender<Msg>, here: Here) -> Sender<()> {
    let (req, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        while rx.recv().is_ok() {
            let started = Instant::now();
            while rx.try_recv().is_ok() {}
            let mut link = here.link();
            let mut r = data::listing(&global, link.as_mut());
            if r.is_err() && link.is_some() {
                // The daemon went away mid-call: the files alone.
                r = data::listing::<Link>(&global, None);
            }
            let rows = Msg::Rows(LOCAL.into(), r.map_err(|e| format!("{e:#}")));
            if tx.send(rows).is_err() {
                return;
            }
            // A storm of events cannot keep the index building: at most
            // one listing per RELOAD_EVERY.
            std::thread::sleep(RELOAD_EVERY.saturating_sub(started.elapsed()));
        }
    });
    req
}

/// The worker: this machine's jobs, one at a time, through its link.
pub(super) fn spawn_worker(tx: SyncSender<Msg>, auto_trust: bool, here: Here) -> Sender<Job> {
    let (jobs, rx) = mpsc::channel::<Job>();
    std::thread::spawn(move || {
        for job in rx {
            let mut link = here.link();
            let ran = jobs::run(LOCAL, job, link.as_mut(), Tails::Files, auto_trust);
            if let Some(why) = ran.lost {
                // The link's reader sees a connection that ended; a call
                // past its deadline leaves it for the next job.
                tracing::debug!(%why, "a call to this machine's daemon failed");
            }
            if let Some(msg) = ran.msg {
                if tx.send(msg).is_err() {
                    return;
                }
            }
        }
    });
    jobs
}
