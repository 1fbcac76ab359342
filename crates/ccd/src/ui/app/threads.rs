//! The threads that feed the main loop, each sending its one kind of
//! [`Msg`]: input (parked while an attached session has the keyboard),
//! signals, the daemon's events, the loader of the listing and the worker
//! (previews, costs and actions on its own connection).

use super::{Done, InputCtl, Job, Msg, RECONNECT, RELOAD_EVERY};
use crate::cli::GlobalArgs;
use crate::ui::data;
use crate::ui::view::{Preview, PreviewKind};
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
                crate::commands::connect(&global)
                    .map(Some)
                    .map_err(|e| e.to_string())
            } else {
                crate::commands::connect_existing(&global).map_err(|e| e.to_string())
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
                if tx.send(Msg::DaemonGone(why)).is_err() {
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
    if tx.send(Msg::Subscribed).is_err() {
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
                if tx.send(Msg::Event(Box::new(e))).is_err() {
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
                client = crate::commands::connect_existing(&global).ok().flatten();
            }
            let mut r = data::listing(&global, client.as_mut());
            if r.is_err() && client.is_some() {
                // The daemon went away mid-call: the files alone.
                client = None;
                r = data::listing(&global, None);
            }
            if tx.send(Msg::Rows(r.map_err(|e| format!("{e:#}")))).is_err() {
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
                client = crate::commands::connect_existing(&global).ok().flatten();
            }
            let size = crate::term::raw::size();
            let mut lost = false;
            let mut note = |e: &ccd_client::ClientError| {
                lost |= e.rpc().is_none();
                e.to_string()
            };
            if matches!(job, Job::Costs) && client.is_none() {
                // Quiet: with no daemon the figures stay as the last
                // listing measured them.
                continue;
            }
            let msg = match (job, client.as_mut()) {
                (
                    Job::Preview {
                        session,
                        held,
                        transcript,
                    },
                    c,
                ) => {
                    let (kind, lines) = match (held, c, transcript) {
                        (true, Some(c), _) => match data::screen(c, &session) {
                            Ok(l) => (PreviewKind::Screen, l),
                            Err(e) => (PreviewKind::Note, vec![note(&e)]),
                        },
                        (_, _, Some(t)) => match data::transcript_tail(std::path::Path::new(&t)) {
                            Ok(l) if l.is_empty() => {
                                (PreviewKind::Note, vec!["(an empty transcript)".into()])
                            }
                            Ok(l) => (PreviewKind::Transcript, l),
                            Err(e) => (PreviewKind::Note, vec![format!("{t}: {e}")]),
                        },
                        (true, None, None) => (
                            PreviewKind::Note,
                            vec!["the daemon is not answering".into()],
                        ),
                        (false, _, None) => (PreviewKind::Note, vec!["no transcript yet".into()]),
                    };
                    Msg::Preview(Preview::new(&session, kind, &lines))
                }
                (_, None) => Msg::Done(Done::Message(
                    "the ccd daemon is not running: nothing was done".into(),
                )),
                (
                    Job::Respond {
                        session,
                        prompt,
                        choice,
                    },
                    Some(c),
                ) => Msg::Done(Done::Message(
                    data::respond(c, &session, prompt.as_deref(), choice).unwrap_or_else(|e| {
                        format!("{}: {}", crate::commands::short_id(&session), note(&e))
                    }),
                )),
                (Job::Kill(session), Some(c)) => {
                    Msg::Done(Done::Message(data::kill(c, &session).unwrap_or_else(|e| {
                        format!("{}: {}", crate::commands::short_id(&session), note(&e))
                    })))
                }
                (Job::Fork(session), Some(c)) => match data::fork(c, &session, size) {
                    Ok(s) => Msg::Done(Done::Attach(s)),
                    Err(e) => Msg::Done(Done::Message(format!(
                        "fork of {}: {e}",
                        crate::commands::short_id(&session)
                    ))),
                },
                (Job::Costs, Some(c)) => match data::costs(c) {
                    Ok(costs) => Msg::Costs(costs),
                    Err(e) => {
                        // Quiet: a failed call leaves the figures.
                        note(&e);
                        if lost {
                            client = None;
                        }
                        continue;
                    }
                },
                (Job::New(dir), Some(c)) => match data::new(c, &dir, auto_trust, size) {
                    Ok(s) => Msg::Done(Done::Attach(s)),
                    Err(e) => Msg::Done(Done::Message(format!("new session: {e}"))),
                },
            };
            if lost {
                // Reconnect for the next job.
                client = None;
            }
            if tx.send(msg).is_err() {
                return;
            }
        }
    });
    jobs
}
