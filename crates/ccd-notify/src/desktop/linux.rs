//! The desktop sink on Linux: the freedesktop notification service
//! (`org.freedesktop.Notifications`) on the session D-Bus, through zbus's
//! blocking API.
//!
//! Threads (see the module header of `desktop`): the worker owns the
//! connection and shows each queued notification (`Notify`, bounded by
//! the connection's method timeout); when the server has the `actions`
//! capability, a signal thread reads `ActionInvoked` and
//! `NotificationClosed` from the server (the proxy matches its sender) and
//! hands each action with its notification to an action thread, which
//! runs the caller's [`Actions`] and shows any follow-up. The shown
//! notifications are kept by server id ([`SHOWN`] at most, oldest
//! forgotten first) until closed.
//!
//! A withdrawal ([`Job::Withdraw`]) closes the session's permission and
//! question notifications still shown (`CloseNotification`, each once,
//! bounded by the method timeout; one the server no longer has is not a
//! failure). They stay remembered until the server's `NotificationClosed`
//! says they went, so an action picked just before (already on its way)
//! is still run, and refused if stale.

use super::{run_action, Actions, DesktopError, DesktopOptions, Job, ServerInfo, Shared, RETRY};
use crate::config::Reason;
use crate::Notification;
use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zbus::blocking::Proxy;
use zbus::zvariant::Value;

const DEST: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// Shown notifications remembered for their actions at most.
pub const SHOWN: usize = 256;
/// Actions waiting for the action thread at most (more are dropped).
const ACTION_QUEUE: usize = 16;

/// The notifications on screen, by the server's id (with whether it was
/// withdrawn).
#[derive(Default)]
struct Shown {
    by_id: HashMap<u32, (Notification, bool)>,
    order: VecDeque<u32>,
}

impl Shown {
    fn insert(&mut self, id: u32, n: Notification) {
        if self.by_id.insert(id, (n, false)).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > SHOWN {
            if let Some(old) = self.order.pop_front() {
                self.by_id.remove(&old);
            }
        }
    }

    fn get(&self, id: u32) -> Option<Notification> {
        self.by_id.get(&id).map(|(n, _)| n.clone())
    }

    fn remove(&mut self, id: u32) -> Option<Notification> {
        let (n, _) = self.by_id.remove(&id)?;
        self.order.retain(|i| *i != id);
        Some(n)
    }

    /// The ids of `session`'s (on `machine`) permission and question
    /// notifications not withdrawn yet, now marked withdrawn.
    fn withdraw(&mut self, machine: &str, session: &str) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .by_id
            .iter_mut()
            .filter(|(_, (n, gone))| {
                !*gone
                    && n.machine == machine
                    && n.session == session
                    && matches!(n.reason, Reason::Permission | Reason::Question)
            })
            .map(|(id, (_, gone))| {
                *gone = true;
                *id
            })
            .collect();
        ids.sort_unstable();
        ids
    }
}

/// A connection to the server with what it offers.
struct Server {
    proxy: Proxy<'static>,
    info: ServerInfo,
}

fn connect(timeout: Duration) -> Result<Server, DesktopError> {
    let conn = zbus::blocking::connection::Builder::session()
        .and_then(|b| b.method_timeout(timeout).build())
        .map_err(|e| DesktopError::NoBus(e.to_string()))?;
    let proxy = Proxy::new(&conn, DEST, PATH, DEST).map_err(no_server)?;
    let caps: Vec<String> = proxy.call("GetCapabilities", &()).map_err(no_server)?;
    let (name, _vendor, version, _spec): (String, String, String, String) =
        proxy.call("GetServerInformation", &()).map_err(no_server)?;
    Ok(Server {
        proxy,
        info: ServerInfo {
            name: format!("{name} {version}"),
            actions: caps.iter().any(|c| c == "actions"),
            markup: caps.iter().any(|c| c == "body-markup"),
        },
    })
}

fn no_server(e: zbus::Error) -> DesktopError {
    DesktopError::NoServer(e.to_string())
}

pub(super) fn probe(timeout: Duration) -> Result<ServerInfo, DesktopError> {
    connect(timeout).map(|s| s.info)
}

/// `s` for a server that reads markup in the body: `&`, `<`, `>` escaped.
fn escape(s: &str, markup: bool) -> String {
    if !markup {
        return s.to_string();
    }
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Shows one notification; its server id.
fn show(
    proxy: &Proxy<'_>,
    info: &ServerInfo,
    app: &str,
    summary: &str,
    body: &str,
    actions: &[(&str, &str)],
) -> Result<u32, DesktopError> {
    let flat: Vec<&str> = if info.actions {
        actions.iter().flat_map(|(k, l)| [*k, *l]).collect()
    } else {
        Vec::new()
    };
    let hints: HashMap<&str, Value<'_>> = HashMap::new();
    proxy
        .call(
            "Notify",
            &(
                app,
                0u32,
                "",
                summary,
                escape(body, info.markup),
                flat,
                hints,
                -1i32,
            ),
        )
        .map_err(no_server)
}

/// Takes notification `id` off the screen; `false` when the server refused
/// (it may have closed it already: not a failure of the server).
fn close(proxy: &Proxy<'_>, id: u32) -> bool {
    match proxy.call::<_, _, ()>("CloseNotification", &(id,)) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(id, error = %e, "the server did not close a notification");
            false
        }
    }
}

pub(super) fn spawn(
    rx: Receiver<Job>,
    actions: Arc<dyn Actions>,
    opts: DesktopOptions,
    shared: Arc<Shared>,
) -> Result<(), DesktopError> {
    std::thread::Builder::new()
        .name("ccd-notify-desktop".into())
        .spawn(move || worker(rx, actions, opts, shared))
        .map(|_| ())
        .map_err(|e| DesktopError::NoServer(format!("cannot start a thread: {e}")))
}

fn worker(rx: Receiver<Job>, actions: Arc<dyn Actions>, opts: DesktopOptions, shared: Arc<Shared>) {
    let shown = Arc::new(Mutex::new(Shown::default()));
    let mut server: Option<Server> = None;
    let mut failed_at: Option<Instant> = None;
    while let Ok(job) = rx.recv() {
        let n = match job {
            Job::Show(n) => n,
            Job::Withdraw { machine, session } => {
                let ids = shown
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .withdraw(&machine, &session);
                let Some(s) = &server else { continue };
                for id in ids {
                    let closed = close(&s.proxy, id);
                    tracing::info!(id, %session, %machine, closed, "desktop notification withdrawn: it no longer applies");
                    if !s.info.actions {
                        // No signal thread forgets it on `NotificationClosed`.
                        shown.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
                    }
                }
                continue;
            }
        };
        if server.is_none() {
            if failed_at.is_some_and(|t| t.elapsed() < RETRY) {
                continue; // said already; dropped until the retry
            }
            match connect(opts.send_timeout) {
                Ok(s) => {
                    tracing::info!(server = %s.info.name, actions = s.info.actions, "desktop notifications through the session bus");
                    *shared.server.lock().unwrap_or_else(|p| p.into_inner()) = Some(s.info.clone());
                    if s.info.actions {
                        start_action_threads(&s, &actions, &opts, &shown);
                    }
                    server = Some(s);
                }
                Err(e) => {
                    shared.fail(e);
                    failed_at = Some(Instant::now());
                    continue;
                }
            }
        }
        let Some(s) = &server else { continue };
        let (summary, body) = super::text(&n);
        match show(
            &s.proxy,
            &s.info,
            &opts.app_name,
            &summary,
            &body,
            &super::actions_for(&n),
        ) {
            Ok(id) => {
                shared.ok();
                tracing::debug!(id, session = %n.session, reason = %n.reason, "desktop notification shown");
                shown
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id, n);
            }
            Err(e) => {
                // The server went away (or hangs): connect again later.
                shared.fail(e);
                failed_at = Some(Instant::now());
                server = None;
            }
        }
    }
}

/// The signal thread and the action thread of a server with actions.
fn start_action_threads(
    s: &Server,
    actions: &Arc<dyn Actions>,
    opts: &DesktopOptions,
    shown: &Arc<Mutex<Shown>>,
) {
    let signals = match s.proxy.receive_all_signals() {
        Ok(it) => it,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the notification server's signals: no actions");
            return;
        }
    };
    let (tx, rx) = mpsc::sync_channel::<(String, Notification)>(ACTION_QUEUE);
    let shown_r = shown.clone();
    let spawned = std::thread::Builder::new()
        .name("ccd-notify-signals".into())
        .spawn(move || {
            for msg in signals {
                let header = msg.header();
                let Some(member) = header.member() else {
                    continue;
                };
                match member.as_str() {
                    "ActionInvoked" => {
                        let Ok((id, key)) = msg.body().deserialize::<(u32, String)>() else {
                            continue;
                        };
                        // Kept until the server says it closed: a
                        // withdrawal still takes it off the screen
                        // (servers leave a notification up after an
                        // action; the client closes it).
                        let n = shown_r.lock().unwrap_or_else(|p| p.into_inner()).get(id);
                        if let Some(n) = n {
                            if tx.try_send((key, n)).is_err() {
                                tracing::warn!(
                                    id,
                                    "too many notification actions at once: one dropped"
                                );
                            }
                        }
                    }
                    "NotificationClosed" => {
                        if let Ok((id, _why)) = msg.body().deserialize::<(u32, u32)>() {
                            shown_r.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
                        }
                    }
                    _ => {}
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the notification signal thread: no actions");
        return;
    }
    let proxy = s.proxy.clone();
    let info = s.info.clone();
    let actions = actions.clone();
    let app = opts.app_name.clone();
    let spawned = std::thread::Builder::new()
        .name("ccd-notify-actions".into())
        .spawn(move || {
            while let Ok((key, n)) = rx.recv() {
                if let Some((summary, body)) = run_action(actions.as_ref(), &key, &n, "xdg-open") {
                    if let Err(e) = show(&proxy, &info, &app, &summary, &body, &[]) {
                        tracing::warn!(error = %e, "cannot show a follow-up notification");
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the notification action thread: no actions");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_only_for_a_server_that_reads_it() {
        assert_eq!(escape("a <b> & c", true), "a &lt;b&gt; &amp; c");
        assert_eq!(escape("a <b> & c", false), "a <b> & c");
    }

    #[test]
    fn shown_notifications_are_bounded_oldest_first() {
        let n = Notification {
            machine: "m".into(),
            session: "s".into(),
            title: "t".into(),
            cwd: None,
            reason: crate::Reason::Exited,
            tool: None,
            detail: None,
            prompt_id: None,
            options: None,
            link: None,
            at: 0,
        };
        let mut s = Shown::default();
        for id in 0..(SHOWN as u32 + 2) {
            s.insert(id, n.clone());
        }
        assert_eq!(s.by_id.len(), SHOWN);
        assert!(s.remove(0).is_none() && s.remove(1).is_none());
        assert!(s.remove(2).is_some());
        assert_eq!(s.order.len(), SHOWN - 1);
    }

    #[test]
    fn a_withdrawal_names_the_session_s_prompts_and_questions_once() {
        let n = crate::notification::sample_prompt();
        let mut s = Shown::default();
        s.insert(1, n.clone());
        let mut other_machine = n.clone();
        other_machine.machine = "devbox".into();
        s.insert(2, other_machine);
        let mut done = n.clone();
        done.reason = Reason::TurnDone;
        s.insert(3, done);
        let mut question = n.clone();
        question.reason = Reason::Question;
        s.insert(4, question);
        assert_eq!(s.withdraw(&n.machine, &n.session), [1, 4]);
        assert!(s.withdraw(&n.machine, &n.session).is_empty(), "once");
        // Still known until the server says it closed (an action on its
        // way is run).
        assert!(s.remove(1).is_some());
        assert_eq!(s.withdraw("devbox", &n.session), [2]);
    }
}
