//! The dashboard's event loop and the threads that feed it.
//!
//! Threads, each sending [`Msg`] into one channel the main thread blocks
//! on (nothing polls while nothing changes):
//! - main: owns the terminal and the [`View`]; draws when something
//!   changed; wakes every [`TICK`] for relative times, every
//!   [`SCREEN_REFRESH`] only while the selected held session is busy;
//! - input: crossterm key/resize events; parks on request while an
//!   attached session owns the keyboard (see [`InputCtl`]);
//! - signals: SIGTERM / SIGHUP / SIGINT → a clean exit;
//! - every machine's daemon is one [`ccd_client::Link`] (one connection
//!   carrying its events and every call, with its reader thread);
//! - for this machine (when shown): the connector (makes its link: the
//!   first time a daemon may be started; on its loss it says the daemon is
//!   gone and retries every [`RECONNECT`], never starting one), loader
//!   (builds the listing from the files on request, with what the daemon
//!   holds through the link; requests coalesce), worker (previews and
//!   actions through the link, one at a time) (`threads`);
//! - for each other machine (`--host`): its link thread (`remote`): one
//!   ssh connection for the dashboard's lifetime carries that machine's
//!   events, listings, previews and actions; events reach the main thread
//!   through `forward`.
//!
//! Every message and job names its machine ([`Link`]); the main thread
//! never waits for a machine: a key only queues a job, so it is answered
//! at once whatever the network does.
//!
//! Every way out (q, a signal, an error, a panic) leaves the alternate
//! screen and raw mode ([`TermGuard`], the panic hook).
//!
//! Here: the messages, the jobs, the terminal guard, [`run`] (which starts
//! the threads and the main loop) and the dashboard's state. The main
//! thread's handling of messages and keys is in `handle`, stepping aside
//! for an attached session in `attach`, the threads that feed the loop in
//! `threads`.

mod attach;
mod forward;
mod handle;
mod jobs;
mod remote;
mod threads;

use threads::{spawn_connector, spawn_input, spawn_loader, spawn_signals, spawn_worker, Here};

use super::view::{Daemon, Preview, View};
use crate::cli::{DetachKeyArg, GlobalArgs};
use crate::hosts::Target;
use crate::settings::Settings;
use ccd_claude::display::line;
use ccd_protocol::methods::events::Event as DaemonEvent;
use ccd_protocol::methods::session::{RespondChoice, SessionInfo};
use ratatui::crossterm::event::Event;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::prelude::CrosstermBackend;
use ratatui::Terminal;
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Redraw period for relative times ("3m ago") when nothing else happens.
pub const TICK: Duration = Duration::from_secs(5);
/// How often the selected held session's screen is fetched while busy.
pub const SCREEN_REFRESH: Duration = Duration::from_secs(1);
/// How often another machine's selected held session's screen is fetched
/// while idle (this machine's: every [`TICK`]); events and a busy session
/// refresh it sooner.
pub const REMOTE_IDLE_SCREEN_REFRESH: Duration = Duration::from_secs(15);
/// The shortest time between two listings (each reads every transcript's
/// metadata).
pub const RELOAD_EVERY: Duration = Duration::from_secs(1);
/// Messages queued for the main thread. While an attached session has
/// the terminal nothing drains them: a machine's link then drops its
/// events and asks for one listing instead (`forward`), which the
/// dashboard reads when it is back.
pub const MAX_QUEUED: usize = 1_024;
/// How often a lost daemon is looked for.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// When the process started (set first thing in `main`), for the
/// first-frame figure.
pub static STARTED: OnceLock<Instant> = OnceLock::new();

/// A message to the main thread; the `String`s first in a variant are
/// the machine's label.
enum Msg {
    Input(Event),
    Signal(i32),
    Event(String, Box<DaemonEvent>),
    /// A machine's daemon connection changed: up (its events come from
    /// here on: the listing can be trusted), or gone (why).
    Daemon(String, Daemon),
    Rows(String, Result<Vec<SessionInfo>, String>),
    /// Every live session's cost on a machine, freshly sampled by its daemon.
    Costs(
        String,
        std::collections::HashMap<u32, ccd_protocol::methods::session::SessionCost>,
    ),
    Preview(Preview),
    Done(String, Done),
    /// A typed directory completed on a machine: (`typed`, completed,
    /// choices).
    Completed {
        host: String,
        typed: String,
        input: String,
        choices: Vec<String>,
    },
    /// A machine's answer to content search `generation` (or why it
    /// failed).
    Searched {
        host: String,
        generation: u64,
        result: Result<ccd_protocol::methods::session::SearchResult, String>,
    },
    /// A connection for an attach to another machine's session (made off
    /// the main thread), or why not.
    Attachable {
        host: String,
        session: String,
        mode: crate::term::Mode,
        client: Result<Box<ccd_client::Client>, String>,
    },
}

enum Done {
    Message(String),
    /// Fork or new started this session: attach to it.
    Attach(String),
}

/// Work for a machine's worker (this one's) or link (another's).
enum Job {
    Preview {
        session: String,
        held: bool,
        transcript: Option<String>,
    },
    Respond {
        session: String,
        prompt: Option<String>,
        choice: RespondChoice,
    },
    Kill(String),
    Fork(String),
    New(std::path::PathBuf),
    /// What the live sessions cost now (each TICK, no listing built).
    Costs,
    /// Complete a typed directory there (Tab in the new-session prompt).
    Complete(String),
    /// Search what was said there (`sessions.search`): search
    /// `generation` of `query`, skipped when `latest` has moved past it
    /// (a newer search was asked while it queued).
    Search {
        generation: u64,
        query: String,
        latest: Arc<std::sync::atomic::AtomicU64>,
    },
    /// List the machine's sessions again (another machine's link; this
    /// one's loader has its own channel).
    Reload,
    /// The connection of this generation ended (why): sent by a link's
    /// reader to its link.
    Lost {
        generation: u64,
        why: String,
    },
}

/// One machine the dashboard shows: where its jobs go.
struct Link {
    label: String,
    target: Target,
    jobs: Sender<Job>,
    /// This machine's loader; another machine lists through its link
    /// ([`Job::Reload`]).
    load: Option<Sender<()>>,
}

/// How the dashboard notifies a session that starts waiting
/// (`ui_notify` in the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    Off,
    Bell,
    Osc9,
    Osc777,
}

impl Notify {
    pub fn parse(s: Option<&str>) -> anyhow::Result<Self> {
        Ok(match s {
            None | Some("off") => Notify::Off,
            Some("bell") => Notify::Bell,
            Some("osc9") => Notify::Osc9,
            Some("osc777") => Notify::Osc777,
            Some(other) => anyhow::bail!(
                "ui_notify must be off, bell, osc9 or osc777 (got {:?})",
                line(other)
            ),
        })
    }

    /// The bytes to write for `text` (already sanitized: no control
    /// character can end the sequence early).
    pub fn bytes(self, text: &str) -> Vec<u8> {
        match self {
            Notify::Off => vec![],
            Notify::Bell => b"\x07".to_vec(),
            Notify::Osc9 => format!("\x1b]9;{text}\x1b\\").into_bytes(),
            Notify::Osc777 => format!("\x1b]777;notify;ccd;{text}\x1b\\").into_bytes(),
        }
    }
}

/// Parks the input thread while an attached session reads the keyboard.
#[derive(Clone, Default)]
struct InputCtl(Arc<(Mutex<(bool, bool)>, Condvar)>);

impl InputCtl {
    /// Asks the input thread to stop reading and waits until it has.
    fn pause(&self) {
        let (m, cv) = &*self.0;
        let Ok(mut g) = m.lock() else { return };
        g.0 = true;
        while !g.1 {
            match cv.wait_timeout(g, Duration::from_secs(2)) {
                Ok((ng, t)) => {
                    g = ng;
                    if t.timed_out() {
                        break;
                    }
                }
                Err(_) => return,
            }
        }
    }

    fn resume(&self) {
        let (m, cv) = &*self.0;
        if let Ok(mut g) = m.lock() {
            g.0 = false;
        }
        cv.notify_all();
    }

    /// In the input thread: parks here while paused.
    fn park_if_asked(&self) {
        let (m, cv) = &*self.0;
        let Ok(mut g) = m.lock() else { return };
        if !g.0 {
            return;
        }
        g.1 = true;
        cv.notify_all();
        while g.0 {
            match cv.wait(g) {
                Ok(ng) => g = ng,
                Err(_) => return,
            }
        }
        g.1 = false;
    }

    fn paused(&self) -> bool {
        self.0 .0.lock().map(|g| g.0).unwrap_or(false)
    }
}

/// Raw mode and the alternate screen while alive.
struct TermGuard;

impl TermGuard {
    fn enter() -> std::io::Result<Self> {
        terminal::enable_raw_mode()?;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )?;
        Ok(TermGuard)
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        leave_terminal();
    }
}

fn leave_terminal() {
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
}

pub fn run(global: &GlobalArgs, key_arg: &DetachKeyArg) -> anyhow::Result<ExitCode> {
    crate::shared::terminal::require_terminal("ccd ui")?;
    let settings = Settings::load(global.config.as_deref())?;
    let notify = Notify::parse(settings.ui_notify.as_deref())?;
    let auto_trust = settings.auto_trust.unwrap_or(true);
    let key = crate::shared::terminal::detach_key(global, key_arg)?;
    let key_name = key_arg
        .detach_key
        .clone()
        .or(settings.detach_key.clone())
        .unwrap_or_else(|| "ctrl-\\".into());
    // Test hooks (ccd_test_hooks): `ccd-bench ui` times the first frame.
    let first_frame_only = ccd_test_hooks::Hook::UiExitAfterFirstFrame.is_on();
    let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb");
    let home = std::env::var("HOME").ok();

    let targets = crate::hosts::dashboard(global, &settings)?;
    let labels: Vec<String> = targets.iter().map(|t| t.label().to_string()).collect();

    let (tx, rx) = mpsc::sync_channel::<Msg>(MAX_QUEUED);
    let input = InputCtl::default();
    let mut links = Vec::new();
    for target in targets {
        let label = target.label().to_string();
        let link = match &target {
            Target::Local => {
                let mut here = global.clone();
                here.targets = vec![Target::Local];
                let link = Here::new();
                let load = spawn_loader(here.clone(), tx.clone(), link.clone());
                spawn_connector(here, tx.clone(), load.clone(), link.clone());
                // The first listing starts once the connector has looked
                // for a daemon; another follows the subscription (what
                // changed between the two comes by events from then on).
                let _ = load.send(());
                let jobs = spawn_worker(tx.clone(), auto_trust, link);
                Link {
                    label,
                    target,
                    jobs,
                    load: Some(load),
                }
            }
            Target::Remote(r) => Link {
                label,
                jobs: remote::spawn(remote::quiet(r), tx.clone(), auto_trust),
                target,
                load: None,
            },
        };
        links.push(link);
    }
    let signals = spawn_signals(tx.clone());
    let to_main = tx.clone();
    // Claude Code's retention sweep on this machine: said once, on the
    // message line, when something is at risk now or within a week (as
    // `ccd ls` says it on stderr).
    let retention_notice = labels
        .iter()
        .any(|l| l == crate::hosts::LOCAL)
        .then(|| ccd_claude::ClaudeConfigDir::resolve(global.claude_config_dir.as_deref()).ok())
        .flatten()
        .and_then(|c| crate::shared::retention::assess_here(&c).ok())
        .and_then(|a| crate::shared::retention::notice(&a));

    let previous = std::panic::take_hook();
    // A panic on any thread ends the dashboard: the terminal comes back
    // first, then the message, then exit status 101 (a dashboard missing a
    // thread would hang or draw stale rows).
    std::panic::set_hook(Box::new(move |info| {
        leave_terminal();
        previous(info);
        std::process::exit(101);
    }));
    let guard = TermGuard::enter()?;
    spawn_input(tx.clone(), input.clone());
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut view = View::new(colour, home, key_name, &labels);
    view.message = retention_notice;
    let mut app = App {
        global: global.clone(),
        key,
        notify,
        links,
        tx: to_main,
        attaching: None,
        input,
        preview_asked: None,
        preview_at: Instant::now(),
        preview_stale: false,
        search_latest: Arc::default(),
        quit: None,
    };
    let code = app.run(&mut term, &mut view, &rx, first_frame_only);
    drop(term);
    drop(guard);
    if let Some(h) = signals {
        h.close();
    }
    code
}

struct App {
    global: GlobalArgs,
    key: crate::term::DetachKey,
    notify: Notify,
    /// Every machine shown, in the order given.
    links: Vec<Link>,
    /// To the main thread itself (a connection made for an attach).
    tx: mpsc::SyncSender<Msg>,
    /// The other machine's session a connection is being made for (an
    /// attach), until it comes or Esc gives up.
    attaching: Option<crate::ui::model::RowKey>,
    input: InputCtl,
    /// The session whose preview was asked last, and not answered yet.
    preview_asked: Option<crate::ui::model::RowKey>,
    preview_at: Instant,
    /// The shown preview is out of date (its session's events, an attach).
    preview_stale: bool,
    /// The newest content search asked (queued older ones are skipped).
    search_latest: Arc<std::sync::atomic::AtomicU64>,
    quit: Option<ExitCode>,
}

type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

impl App {
    fn link(&self, host: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.label == host)
    }

    /// Queues `job` for `host`'s worker or link (never waits).
    fn job(&self, host: &str, job: Job) {
        if let Some(l) = self.link(host) {
            let _ = l.jobs.send(job);
        }
    }

    /// Asks `host`'s listing again.
    fn reload(&self, host: &str) {
        match self.link(host) {
            Some(Link { load: Some(l), .. }) => {
                let _ = l.send(());
            }
            Some(l) => {
                let _ = l.jobs.send(Job::Reload);
            }
            None => {}
        }
    }

    fn reload_all(&self) {
        for l in &self.links {
            self.reload(&l.label);
        }
    }

    /// This invocation's options, talking to `host` alone (an attach).
    fn global_for(&self, host: &str) -> GlobalArgs {
        let mut g = self.global.clone();
        g.targets = vec![self.link(host).map_or(Target::Local, |l| l.target.clone())];
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_are_one_sequence_each_and_the_key_is_checked() {
        assert_eq!(Notify::parse(None).unwrap(), Notify::Off);
        assert_eq!(Notify::parse(Some("osc9")).unwrap(), Notify::Osc9);
        let e = Notify::parse(Some("loud\x1b[2J")).unwrap_err().to_string();
        assert!(e.contains("ui_notify") && !e.contains('\x1b'), "{e}");
        assert_eq!(Notify::Bell.bytes("x"), b"\x07");
        assert!(Notify::Off.bytes("x").is_empty());
        assert_eq!(
            Notify::Osc9.bytes("ccd: 3c5e needs you"),
            b"\x1b]9;ccd: 3c5e needs you\x1b\\"
        );
        assert_eq!(Notify::Osc777.bytes("t"), b"\x1b]777;notify;ccd;t\x1b\\");
    }
}
