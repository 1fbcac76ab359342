//! The threads that feed the main loop, each sending its one kind of
//! [`Msg`]: input (parked while an attached session has the keyboard),
//! signals, and this machine's: the daemon's events, the loader of the
//! listing and the worker (previews, costs and actions on its own
//! connection). Another machine's are its link's (`remote`).

use super::jobs::{self, Tails};
use super::{InputCtl, Job, Msg, RECONNECT, RELOAD_EVERY};
use crate::cli::GlobalArgs;
use crate::hosts::LOCAL;
use crate::ui::data;
use crate::ui::view::Daemon;
use ccd_client::Client;
use ccd_protocol::methods::events::{
    Event as DaemonEvent, EventNotification, EventsSubscribe, SubscribeParams,
};
use ccd_protocol::NotificationKind;
use ratatui::crossterm::event::{self};
use std::sync::mpsc::{self, Sender, SyncSender};
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

/// The events connection: the first one may start a daemon (like every
/// command); after a loss, only a daemon that is back is used.
pub(super) fn spawn_events(global: GlobalArgs, tx: SyncSender<Msg>) {
    std::thread::spawn(move || {
        let mut first = true;
        let mut said_gone = false;
        loop {
            let client = if first {
                first = false;
                crate::shared::connect::connect(&global)
                    .map(Some)
                    .map_err(|e| e.to_string())
            } else {
                crate::shared::connect::connect_existing(&global).map_err(|e| e.to_string())
            };
            let why = match client {
                Ok(Some(mut c)) => match subscribe_and_forward(&mut c, &tx) {
                    Ok(()) => return, // the dashboard is gone
                    Err(e) => e,
                },
                Ok(None) => "no daemon running".to_string(),
                Err(e) => e,
            };
            if !said_gone || !why.is_empty() {
                said_gone = true;
                if tx
                    .send(Msg::Daemon(LOCAL.into(), Daemon::Gone(why)))
                    .is_err()
                {
                    return;
                }
            }
            std::thread::sleep(RECONNECT);
        }
    });
}

/// Subscribes and forwards events until the connection fails (`Err`:
/// why) or the dashboard stops listening (`Ok`).
fn subscribe_and_forward(c: &mut Client, tx: &SyncSender<Msg>) -> Result<(), String> {
    c.call::<EventsSubscribe>(&SubscribeParams { types: None })
        .map_err(|e| e.to_string())?;
    if tx
        .send(Msg::Daemon(LOCAL.into(), Daemon::Connected))
        .is_err()
    {
        return Ok(());
    }
    loop {
        let n = match c.next_notification(None) {
            Ok(Some(n)) => n,
            Ok(None) => continue,
            Err(e) => {
                return Err(match e {
                    ccd_client::ClientError::Io(_) | ccd_client::ClientError::Closed => {
                        "connection closed".to_string()
                    }
                    other => other.to_string(),
                })
            }
        };
        if n.method != EventNotification::NAME {
            continue;
        }
        match n.params_as::<DaemonEvent>() {
            Ok(e) => {
                if tx.send(Msg::Event(LOCAL.into(), Box::new(e))).is_err() {
                    return Ok(());
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "skipping an event that does not read"),
        }
    }
}

/// Builds the listing on request; requests made while one is built are
/// served by one more build.
pub(super) fn spawn_loader(global: GlobalArgs, tx: SyncSender<Msg>) -> Sender<()> {
    let (req, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut client: Option<Client> = None;
        while rx.recv().is_ok() {
            let started = Instant::now();
            while rx.try_recv().is_ok() {}
            if client.is_none() {
                client = crate::shared::connect::connect_existing(&global)
                    .ok()
                    .flatten();
            }
            let mut r = data::listing(&global, client.as_mut());
            if r.is_err() && client.is_some() {
                // The daemon went away mid-call: the files alone.
                client = None;
                r = data::listing(&global, None);
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

pub(super) fn spawn_worker(
    global: GlobalArgs,
    tx: SyncSender<Msg>,
    auto_trust: bool,
) -> Sender<Job> {
    let (jobs, rx) = mpsc::channel::<Job>();
    std::thread::spawn(move || {
        let mut client: Option<Client> = None;
        for job in rx {
            if client.is_none() {
                client = crate::shared::connect::connect_existing(&global)
                    .ok()
                    .flatten();
            }
            let ran = jobs::run(LOCAL, job, client.as_mut(), Tails::Files, auto_trust);
            if ran.lost.is_some() {
                // Reconnect for the next job.
                client = None;
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
