//! `ccd notify`: desktop notifications where the person sits, for the
//! sessions of every machine it watches (`--host`, else the config's
//! `ui_hosts`, else this one). Each machine's events come over its socket
//! (`events.subscribe` on a [`Link`]); the same rules the daemon runs
//! ([`ccd_notify::Rules`], the config's `[notify]` table) decide what is
//! shown; the desktop sink ([`ccd_notify::desktop`]) shows it, and its
//! Approve/Deny actions answer that machine's prompt (`session.respond`
//! naming the prompt id: a stale one is refused, and the sink says so).
//!
//! Threads, and who owns what: one thread per machine owns its
//! connection: it connects (only the first attempt starts this machine's
//! daemon when none runs, as `ccd events` does), subscribes, lists
//! the live sessions once (their folders and titles), and waits for the
//! link to close; then it reconnects with backoff ([`BACKOFF_MAX`] at
//! most), saying once that the machine dropped and once that it is back.
//! The link's reader thread only `try_send`s events to the main thread
//! (a bounded queue; when full, events are dropped and counted). The main
//! thread owns the rules (one [`Rules`] per machine) and is the only one
//! to touch them: it folds the events and ticks at the rules' next due
//! time. The current links sit in a map shared with the desktop's action
//! thread, which calls `session.respond` on them (that call may block up
//! to its deadline; nothing else waits for it). A permission or question
//! notification that no longer applies (the prompt answered elsewhere —
//! `ccd attach`, the web page, `ccd approve` — or the session ended) is
//! taken back from the desktop (`Rules::withdrawing`,
//! `Desktop::withdraw`), on every machine watched alike.
//!
//! With `web_public_url`, a prompt's notification carries a link that
//! answers it once on `ccd web` ([`ccd_notify::link`]), minted here (where
//! `ccd web` runs, its key in this machine's state dir) and naming the
//! machine as `ccd web` does (`local`, a `--host` name): so a prompt on
//! another machine opens on this `ccd web`'s route for it.

use crate::cli::{GlobalArgs, NotifyArgs};
use crate::hosts::Target;
use anyhow::Context;
use ccd_client::Link;
use ccd_notify::desktop::{self, Actions, Choice, Desktop, DesktopOptions};
use ccd_notify::{Input, Notification, Rules};
use ccd_protocol::methods::events::{Event, EventNotification, EventsSubscribe, SubscribeParams};
use ccd_protocol::methods::session::{
    ListParams, RespondChoice, RespondParams, SessionRespond, SessionsList,
};
use ccd_protocol::NotificationKind;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Events waiting for the main thread at most (more are dropped).
const QUEUE: usize = 1024;
/// The first wait before connecting to a machine again.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long the desktop is given to answer at start.
const PROBE: Duration = Duration::from_secs(5);

/// What a machine's thread tells the main thread.
enum Msg {
    /// Inputs for the rules of `machine`.
    Inputs(String, Vec<Input>),
}

/// The current link of each machine, by the name its notifications carry.
type Links = Arc<Mutex<HashMap<String, Link>>>;

pub fn run(global: &GlobalArgs, _args: &NotifyArgs) -> anyhow::Result<ExitCode> {
    let settings = crate::settings::Settings::load(global.config.as_deref())?;
    let targets = hosts(global, &settings)?;
    let cfg = settings.notify.clone();
    let info = desktop::probe(PROBE).context("ccd notify has no desktop to notify on")?;
    let links: Links = Arc::default();
    let machines: Vec<(String, Target)> =
        targets.into_iter().map(|t| (machine_name(&t), t)).collect();
    let sink = Desktop::start(
        Arc::new(Answers {
            links: links.clone(),
            exe: this_exe(),
            global: global.clone(),
            targets: machines
                .iter()
                .map(|(m, t)| (m.clone(), t.clone()))
                .collect(),
        }),
        DesktopOptions {
            send_timeout: Duration::from_secs(cfg.send_timeout_secs.max(1)),
            ..DesktopOptions::default()
        },
    )?;
    eprintln!(
        "ccd notify: watching {} (desktop: {}{})",
        machines
            .iter()
            .map(|(m, _)| ccd_claude::display::line(m).into_owned())
            .collect::<Vec<_>>()
            .join(", "),
        ccd_claude::display::line(&info.name),
        if info.actions { ", with actions" } else { "" }
    );
    let linker = Linker {
        minter: ccd_notify::link::Minter::new(&cfg, &crate::settings::state_dir()),
        routes: machines
            .iter()
            .map(|(m, t)| (m.clone(), t.label().to_string()))
            .collect(),
    };
    let (tx, rx) = mpsc::sync_channel::<Msg>(QUEUE);
    let mut rules: HashMap<String, Rules> = HashMap::new();
    for (name, target) in machines {
        // The desktop takes back what no longer applies (answered
        // elsewhere, ended).
        rules.insert(
            name.clone(),
            Rules::new(cfg.clone(), name.clone()).withdrawing(),
        );
        let mut g = global.clone();
        g.targets = vec![target];
        let (tx, links) = (tx.clone(), links.clone());
        std::thread::Builder::new()
            .name(format!("ccd-notify-{name}"))
            .spawn(move || watch(&name, &g, &tx, &links))?;
    }
    drop(tx);
    fold(rx, &mut rules, &sink, &linker);
    Ok(ExitCode::SUCCESS)
}

/// The main thread: folds each machine's inputs into its rules and hands
/// what is due to the sink, ticking at the rules' next due time. Returns
/// when every machine's thread ended (never, in practice).
fn fold(rx: Receiver<Msg>, rules: &mut HashMap<String, Rules>, sink: &Desktop, linker: &Linker) {
    loop {
        let now = now_ms();
        let next = rules.values().filter_map(|r| r.next_due()).min();
        let wait = next.map_or(Duration::from_secs(3600), |due| {
            Duration::from_millis(u64::try_from(due.saturating_sub(now)).unwrap_or(0))
        });
        match rx.recv_timeout(wait) {
            Ok(Msg::Inputs(machine, inputs)) => {
                let Some(r) = rules.get_mut(&machine) else {
                    continue;
                };
                for input in inputs {
                    let due = r.observe(input, now_ms());
                    // Taken back before anything new of the session shows.
                    for w in r.take_withdrawals() {
                        sink.withdraw(&w.machine, &w.session);
                    }
                    for n in due {
                        show(sink, n, linker);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let now = now_ms();
        for r in rules.values_mut() {
            for n in r.tick(now) {
                show(sink, n, linker);
            }
        }
    }
}

/// Prompt links: the minter (`web_public_url` set), and the name `ccd
/// web` gives each machine, by the name its notifications carry.
struct Linker {
    minter: Option<ccd_notify::link::Minter>,
    routes: HashMap<String, String>,
}

impl Linker {
    /// Puts a prompt link on `n` (when it names a prompt and
    /// `web_public_url` is set), naming its machine as `ccd web` does.
    fn apply(&self, n: &mut Notification, now: i64) {
        if let (Some(m), Some(route)) = (&self.minter, self.routes.get(&n.machine)) {
            m.apply(n, route, now);
        }
    }
}

fn show(sink: &Desktop, mut n: Notification, linker: &Linker) {
    linker.apply(&mut n, now_ms());
    tracing::info!(machine = %n.machine, session = %n.session, reason = %n.reason, prompt = ?n.prompt_id, "notifying");
    sink.send(n);
}

/// One machine's thread: connect, subscribe, seed, wait for the end;
/// again with backoff. Says once that it dropped and once that it is back.
fn watch(name: &str, global: &GlobalArgs, tx: &SyncSender<Msg>, links: &Links) {
    let mut backoff = BACKOFF_MIN;
    let mut down: Option<String> = None;
    let mut first = true;
    loop {
        let served = serve(name, first, global, tx, links);
        first = false;
        match served {
            Ok(why) => {
                // It was up: a new drop is said, and retried soon.
                backoff = BACKOFF_MIN;
                eprintln!(
                    "ccd notify: {}: connection lost ({}); reconnecting",
                    ccd_claude::display::line(name),
                    ccd_claude::display::line(&why)
                );
                tracing::warn!(machine = %name, %why, "machine dropped");
                down = Some(why);
            }
            Err(e) => {
                let why = format!("{e:#}");
                if down.is_none() {
                    eprintln!(
                        "ccd notify: {}: {}; retrying",
                        ccd_claude::display::line(name),
                        ccd_claude::display::line(&why)
                    );
                    tracing::warn!(machine = %name, %why, "cannot reach the machine");
                    down = Some(why);
                }
            }
        }
        if tx.send(Msg::Inputs(name.to_string(), Vec::new())).is_err() {
            return; // the main thread is gone
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// One connection to `name` (the `first` may start this machine's
/// daemon): `Ok(why it closed)` after it was up, `Err` when it could not
/// be made.
fn serve(
    name: &str,
    first: bool,
    global: &GlobalArgs,
    tx: &SyncSender<Msg>,
    links: &Links,
) -> anyhow::Result<String> {
    // The first connection starts this machine's daemon when none runs
    // (as `ccd events`); later ones leave a stopped daemon stopped.
    let client = if first {
        crate::shared::connect::connect(global)?
    } else {
        crate::shared::connect::connect_existing(global)?
            .ok_or_else(|| anyhow::anyhow!("no daemon running"))?
    };
    let (closed_tx, closed) = mpsc::channel::<String>();
    let events_tx = tx.clone();
    let machine = name.to_string();
    let mut lost = 0u64;
    let link = Link::builder()
        .subscribe(EventNotification::NAME, move |n| {
            let Ok(e) = n.params_as::<Event>() else {
                return true;
            };
            let inputs = Input::from_event(&e);
            if inputs.is_empty() {
                return true;
            }
            match events_tx.try_send(Msg::Inputs(machine.clone(), inputs)) {
                Ok(()) => true,
                Err(mpsc::TrySendError::Full(_)) => {
                    lost += 1;
                    if lost == 1 {
                        tracing::warn!(machine = %machine, "ccd notify is behind: events dropped");
                    }
                    true
                }
                Err(mpsc::TrySendError::Disconnected(_)) => false,
            }
        })
        .on_close(move |why| {
            let _ = closed_tx.send(why.to_string());
        })
        .start(client)?;
    link.call::<EventsSubscribe>(&SubscribeParams { types: None })?;
    // The sessions already running: their folders and titles.
    let listed = link.call::<SessionsList>(&ListParams {
        live_only: true,
        ..ListParams::default()
    })?;
    let seen: Vec<Input> = listed
        .sessions
        .into_iter()
        .map(|s| Input::Seen {
            session: s.session_id,
            cwd: s.cwd,
            title: s.title,
        })
        .collect();
    let _ = tx.send(Msg::Inputs(name.to_string(), seen));
    links
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(name.to_string(), link.clone());
    eprintln!("ccd notify: {}: connected", ccd_claude::display::line(name));
    let why = closed.recv().unwrap_or_else(|_| "closed".into());
    links.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
    Ok(why)
}

/// The desktop's actions: answers through the machine's current link, and
/// `ccd attach` on the machine.
struct Answers {
    links: Links,
    /// This ccd, for `attach` (read at start).
    exe: String,
    global: GlobalArgs,
    targets: HashMap<String, Target>,
}

impl Actions for Answers {
    fn respond(&self, n: &Notification, choice: Choice) -> Result<String, String> {
        let link = self
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&n.machine)
            .cloned()
            .ok_or_else(|| format!("{} is not connected", n.machine))?;
        let prompt = n
            .prompt_id
            .clone()
            .ok_or_else(|| "this notification names no prompt".to_string())?;
        let params = RespondParams {
            session: n.session.clone(),
            choice: match choice {
                Choice::Approve => RespondChoice::Yes,
                Choice::Deny => RespondChoice::No,
            },
            message: None,
            prompt: Some(prompt),
        };
        link.call::<SessionRespond>(&params)
            .map(|r| r.option)
            .map_err(|e| e.to_string())
    }

    fn attach_argv(&self, n: &Notification) -> Vec<String> {
        let mut v = vec![self.exe.clone()];
        if let Some(dir) = &self.global.socket_dir {
            v.push("--socket-dir".into());
            v.push(dir.to_string_lossy().into_owned());
        }
        if let Some(Target::Remote(r)) = self.targets.get(&n.machine) {
            v.push("--host".into());
            v.push(r.label.clone());
        }
        v.push("attach".into());
        v.push(n.session.clone());
        v
    }
}

/// This ccd's path; a binary replaced since it started (Linux says
/// "<path> (deleted)") is the new one at the same path.
fn this_exe() -> String {
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "ccd".into());
    match exe.strip_suffix(" (deleted)") {
        Some(p) => p.to_string(),
        None => exe,
    }
}

/// The name a machine's notifications carry: its `--host` label, or this
/// machine's host name.
fn machine_name(t: &Target) -> String {
    match t {
        Target::Remote(r) => r.label.clone(),
        Target::Local => nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| crate::hosts::LOCAL.to_string()),
    }
}

/// The machines watched: `--host` (or `$CCD_HOST`), else the config's
/// `ui_hosts`, else this one (as `ccd ui`).
fn hosts(global: &GlobalArgs, settings: &crate::settings::Settings) -> anyhow::Result<Vec<Target>> {
    let named =
        !global.hosts.is_empty() || std::env::var("CCD_HOST").is_ok_and(|v| !v.trim().is_empty());
    match &settings.ui_hosts {
        Some(hosts) if !named && !hosts.is_empty() => crate::hosts::resolve_names(global, hosts),
        _ => crate::hosts::resolve(global),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prompt on another machine gets a link naming that machine as
    /// `ccd web --host` does (its label), minted with this machine's key;
    /// no link without `web_public_url`.
    #[test]
    fn a_prompt_link_names_the_machine_as_ccd_web_does() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = || Notification {
            machine: "devbox".into(),
            session: "9b1d4c2e".into(),
            title: "proj".into(),
            cwd: None,
            reason: ccd_notify::Reason::Permission,
            tool: Some("Bash command".into()),
            detail: Some("ls".into()),
            prompt_id: Some("5f1c".into()),
            options: None,
            link: None,
            at: 0,
        };
        let routes: HashMap<String, String> =
            [("devbox".to_string(), "me@devbox:2222".to_string())].into();
        let cfg = ccd_notify::NotifyConfig {
            web_public_url: Some("https://ccd.example".into()),
            ..ccd_notify::NotifyConfig::default()
        };
        let linker = Linker {
            minter: ccd_notify::link::Minter::new(&cfg, dir.path()),
            routes: routes.clone(),
        };
        let mut n = prompt();
        linker.apply(&mut n, 1_000);
        let link = n.link.expect("a link");
        let token = link.strip_prefix("https://ccd.example/p#").expect(&link);
        let key = ccd_notify::link::KeyFile::in_dir(dir.path())
            .read()
            .unwrap();
        let c = key.verify(token, 1_000).unwrap();
        assert_eq!(
            (c.m.as_str(), c.s.as_str(), c.p.as_str()),
            ("me@devbox:2222", "9b1d4c2e", "5f1c")
        );
        let off = Linker {
            minter: ccd_notify::link::Minter::new(&ccd_notify::NotifyConfig::default(), dir.path()),
            routes,
        };
        let mut n = prompt();
        off.apply(&mut n, 1_000);
        assert_eq!(n.link, None);
    }
}
