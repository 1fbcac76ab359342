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
//! - events: the `events.subscribe` connection; on its loss it says the
//!   daemon is gone and retries every [`RECONNECT`] (never starting one);
//! - loader: builds the listing on request (requests coalesce);
//! - worker: previews and actions through its own client, one at a time.
//!
//! Every way out (q, a signal, an error, a panic) leaves the alternate
//! screen and raw mode ([`TermGuard`], the panic hook).

use super::data;
use super::model::Applied;
use super::render;
use super::view::{Daemon, Mode, Preview, PreviewKind, View};
use crate::cli::{DetachKeyArg, GlobalArgs};
use crate::settings::Settings;
use crate::term::{attach_loop, AttachExtra, Mode as AttachMode, Outcome};
use ccd_claude::display::line;
use ccd_client::Client;
use ccd_protocol::error_data::LiveElsewhereData;
use ccd_protocol::methods::events::{
    Event as DaemonEvent, EventNotification, EventsSubscribe, SubscribeParams,
};
use ccd_protocol::methods::session::{RespondChoice, SessionInfo};
use ccd_protocol::{ErrorCode, NotificationKind};
use nix::sys::termios::SetArg;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::prelude::CrosstermBackend;
use ratatui::Terminal;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Redraw period for relative times ("3m ago") when nothing else happens.
pub const TICK: Duration = Duration::from_secs(5);
/// How often the selected held session's screen is fetched while busy.
pub const SCREEN_REFRESH: Duration = Duration::from_secs(1);
/// The shortest time between two listings (each reads every transcript's
/// metadata).
pub const RELOAD_EVERY: Duration = Duration::from_secs(1);
/// Messages queued for the main thread. While an attached session has
/// the terminal nothing drains them: the events thread then blocks, the
/// daemon's per-connection queue fills, it drops events and says
/// `events.lagged`, and the dashboard reloads when it is back.
pub const MAX_QUEUED: usize = 1_024;
/// How often a lost daemon is looked for.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// When the process started (set first thing in `main`), for the
/// first-frame figure.
pub static STARTED: OnceLock<Instant> = OnceLock::new();

/// Set to `1`: exit after the first frame that shows the list, printing
/// how long it took from process start (`ccd-bench ui` uses it).
pub const FIRST_FRAME_ENV: &str = "CCD_UI_EXIT_AFTER_FIRST_FRAME";

/// Milliseconds to wait between leaving the dashboard's screen and
/// attaching (tests: a key pressed in that spell).
pub const ATTACH_DELAY_ENV: &str = "CCD_UI_TEST_ATTACH_DELAY_MS";

/// Set to `1`: panic after the first frame that shows the list (the test
/// of the panic path: the terminal must come back).
pub const PANIC_ENV: &str = "CCD_UI_PANIC_FOR_TEST";

enum Msg {
    Input(Event),
    Signal(i32),
    Event(Box<DaemonEvent>),
    /// The events connection is up (again): the listing can be trusted
    /// from here on.
    Subscribed,
    DaemonGone(String),
    Rows(Result<Vec<SessionInfo>, String>),
    /// Every live session's cost, freshly sampled by the daemon.
    Costs(std::collections::HashMap<u32, ccd_protocol::methods::session::SessionCost>),
    Preview(Preview),
    Done(Done),
}

enum Done {
    Message(String),
    /// Fork or new started this session: attach to it.
    Attach(String),
}

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
    crate::commands::attached::require_terminal("ccd ui")?;
    let settings = Settings::load(global.config.as_deref())?;
    let notify = Notify::parse(settings.ui_notify.as_deref())?;
    let auto_trust = settings.auto_trust.unwrap_or(true);
    let key = crate::commands::attached::detach_key(global, key_arg)?;
    let key_name = key_arg
        .detach_key
        .clone()
        .or(settings.detach_key.clone())
        .unwrap_or_else(|| "ctrl-\\".into());
    let first_frame_only = std::env::var(FIRST_FRAME_ENV).is_ok_and(|v| v == "1");
    let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb");
    let home = std::env::var("HOME").ok();

    let (tx, rx) = mpsc::sync_channel::<Msg>(MAX_QUEUED);
    let input = InputCtl::default();
    spawn_events(global.clone(), tx.clone());
    let load = spawn_loader(global.clone(), tx.clone());
    // The first listing starts at once; another follows the subscription
    // (what changed between the two comes by events from then on).
    let _ = load.send(());
    let jobs = spawn_worker(global.clone(), tx.clone(), auto_trust);
    let signals = spawn_signals(tx.clone());

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
    let mut view = View::new(colour, home, key_name);
    let mut app = App {
        global: global.clone(),
        key,
        notify,
        load,
        jobs,
        input,
        preview_asked: None,
        preview_at: Instant::now(),
        preview_stale: false,
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
    load: Sender<()>,
    jobs: Sender<Job>,
    input: InputCtl,
    /// The session whose preview was asked last, and not answered yet.
    preview_asked: Option<String>,
    preview_at: Instant,
    /// The shown preview is out of date (its session's events, an attach).
    preview_stale: bool,
    quit: Option<ExitCode>,
}

type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

impl App {
    fn run(
        &mut self,
        term: &mut Term,
        view: &mut View,
        rx: &Receiver<Msg>,
        first_frame_only: bool,
    ) -> anyhow::Result<ExitCode> {
        let mut dirty = true;
        let mut last_tick = Instant::now();
        loop {
            if dirty {
                term.draw(|f| render::draw(f, view))?;
                dirty = false;
                if !view.loading && std::env::var(PANIC_ENV).is_ok_and(|v| v == "1") {
                    panic!("{PANIC_ENV} is set");
                }
                if first_frame_only && !view.loading {
                    let started = STARTED.get().copied().unwrap_or_else(Instant::now);
                    let ms = started.elapsed().as_secs_f64() * 1e3;
                    let n = view.model.len();
                    leave_terminal();
                    eprintln!("ccd ui: first frame with {n} sessions drawn {ms:.1} ms after process start");
                    return Ok(ExitCode::SUCCESS);
                }
            }
            if let Some(code) = self.quit.take() {
                return Ok(code);
            }
            let busy_preview = view
                .model
                .selected()
                .is_some_and(|r| r.held() && r.attention() == super::model::Attention::Busy);
            let mut wait = TICK.saturating_sub(last_tick.elapsed());
            // With a preview in flight its answer wakes the loop: no
            // shorter wait (a zero one would spin).
            if busy_preview && self.preview_asked.is_none() {
                wait = wait.min(SCREEN_REFRESH.saturating_sub(self.preview_at.elapsed()));
            }
            match rx.recv_timeout(wait) {
                Ok(msg) => {
                    dirty |= self.handle(term, view, msg);
                    // Take whatever else is queued before drawing once.
                    while let Ok(msg) = rx.try_recv() {
                        dirty |= self.handle(term, view, msg);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(ExitCode::FAILURE),
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                view.now = time::OffsetDateTime::now_utc();
                dirty = true;
                if view.daemon == Daemon::Connected && !view.loading {
                    let _ = self.jobs.send(Job::Costs);
                }
            }
            let held_preview = view.model.selected().is_some_and(|r| r.held());
            if (busy_preview && self.preview_at.elapsed() >= SCREEN_REFRESH)
                || (held_preview && self.preview_at.elapsed() >= TICK)
            {
                // A held screen can change without an event (another
                // client typing): refreshed every TICK, every second
                // while busy.
                self.preview_stale = true;
            }
            dirty |= self.ask_preview(view);
        }
    }

    /// Asks the selected session's preview when it is not the one shown or
    /// asked (one request in flight at a time).
    fn ask_preview(&mut self, view: &View) -> bool {
        let Some(r) = view.model.selected() else {
            return false;
        };
        let sid = &r.info.session_id;
        if self.preview_asked.is_some() {
            return false; // one in flight: its answer first, then this
        }
        if view.preview.as_ref().is_some_and(|p| &p.session == sid) && !self.preview_stale {
            return false;
        }
        self.preview_stale = false;
        self.preview_asked = Some(sid.clone());
        self.preview_at = Instant::now();
        let _ = self.jobs.send(Job::Preview {
            session: sid.clone(),
            held: r.held(),
            transcript: r.info.transcript.clone(),
        });
        false
    }

    /// Handles one message; true when the screen changed.
    fn handle(&mut self, term: &mut Term, view: &mut View, msg: Msg) -> bool {
        match msg {
            Msg::Input(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                self.key(term, view, k);
                true
            }
            Msg::Input(Event::Resize(..)) => true,
            Msg::Input(_) => false,
            Msg::Signal(s) => {
                self.quit = Some(ExitCode::from(128u8.wrapping_add(s as u8)));
                false
            }
            Msg::Subscribed => {
                view.daemon = Daemon::Connected;
                let _ = self.load.send(());
                true
            }
            Msg::DaemonGone(why) => {
                view.daemon = Daemon::Gone(why);
                true
            }
            Msg::Event(e) => {
                let Applied {
                    reload,
                    notify,
                    preview,
                } = view.model.apply(&e);
                if reload {
                    let _ = self.load.send(());
                }
                if notify && self.notify != Notify::Off {
                    let sid = e.session.as_deref().unwrap_or("");
                    let text = format!(
                        "ccd: {} needs you{}",
                        crate::commands::short_id(sid),
                        e.tool
                            .as_deref()
                            .map(|t| format!(" ({t})"))
                            .unwrap_or_default()
                    );
                    let mut out = std::io::stdout();
                    let _ = out.write_all(&self.notify.bytes(&line(&text)));
                    let _ = out.flush();
                }
                if preview {
                    // Its screen changed: ask again once the last answer is in.
                    self.preview_stale = true;
                }
                true
            }
            Msg::Rows(Ok(rows)) => {
                view.set_rows(rows);
                true
            }
            Msg::Costs(costs) => {
                view.model.set_costs(&costs);
                true
            }
            Msg::Rows(Err(e)) => {
                view.loading = false;
                view.message = Some(format!("listing failed: {e}"));
                true
            }
            Msg::Preview(p) => {
                self.preview_asked = None;
                self.preview_at = Instant::now();
                view.preview = Some(p);
                true
            }
            Msg::Done(Done::Message(m)) => {
                view.message = Some(m);
                let _ = self.load.send(());
                true
            }
            Msg::Done(Done::Attach(sid)) => {
                view.message = None;
                self.attach(term, view, &sid, AttachMode::Interactive);
                true
            }
        }
    }

    fn key(&mut self, term: &mut Term, view: &mut View, k: KeyEvent) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') && view.mode != Mode::List {
            view.mode = Mode::List;
            return;
        }
        match view.mode.clone() {
            Mode::Help => view.mode = Mode::List,
            Mode::Filter => match k.code {
                KeyCode::Enter => view.mode = Mode::List,
                KeyCode::Esc => {
                    view.model.set_filter("");
                    view.mode = Mode::List;
                }
                KeyCode::Backspace => {
                    let mut f = view.model.filter().to_string();
                    f.pop();
                    view.model.set_filter(&f);
                }
                KeyCode::Up => view.model.move_selection(-1),
                KeyCode::Down => view.model.move_selection(1),
                KeyCode::Char(c) if !ctrl => {
                    let f = format!("{}{c}", view.model.filter());
                    view.model.set_filter(&f);
                }
                _ => {}
            },
            Mode::ConfirmKill { session, label } => {
                view.mode = Mode::List;
                if k.code == KeyCode::Char('y') {
                    view.message = Some(format!("killing {label}…"));
                    let _ = self.jobs.send(Job::Kill(session));
                } else {
                    view.message = Some("kept it".into());
                }
            }
            Mode::NewDir { mut input, .. } => match k.code {
                KeyCode::Esc => view.mode = Mode::List,
                KeyCode::Enter => {
                    view.mode = Mode::List;
                    let dir = super::complete::expand(input.trim(), view.home.as_deref());
                    view.message = Some(format!("starting claude in {}…", dir.display()));
                    let _ = self.jobs.send(Job::New(dir));
                }
                KeyCode::Tab => {
                    let (now, choices) = super::complete::complete(&input, view.home.as_deref());
                    view.mode = Mode::NewDir {
                        input: now,
                        choices,
                    };
                }
                KeyCode::Backspace => {
                    input.pop();
                    view.mode = Mode::NewDir {
                        input,
                        choices: vec![],
                    };
                }
                KeyCode::Char(c) if !ctrl => {
                    input.push(c);
                    view.mode = Mode::NewDir {
                        input,
                        choices: vec![],
                    };
                }
                _ => {}
            },
            Mode::List => self.list_key(term, view, k),
        }
    }

    fn list_key(&mut self, term: &mut Term, view: &mut View, k: KeyEvent) {
        use super::keys::Action as A;
        view.message = None;
        let page = term
            .size()
            .map(|s| (s.height as isize / 2 - 3).max(1))
            .unwrap_or(10);
        let sel = view.model.selected().cloned();
        let Some(action) = super::keys::action_of(&k) else {
            return;
        };
        match action {
            A::Quit => self.quit = Some(ExitCode::SUCCESS),
            A::Up => view.model.move_selection(-1),
            A::Down => view.model.move_selection(1),
            A::PageUp => view.model.move_selection(-page),
            A::PageDown => view.model.move_selection(page),
            A::First => view.model.select_index(0),
            A::Last => view
                .model
                .select_index(view.model.visible_len().saturating_sub(1)),
            A::Filter => view.mode = Mode::Filter,
            A::SortByMemory => {
                let on = !view.model.sorted_by_memory();
                view.model.sort_by_memory(on);
                view.message = Some(
                    if on {
                        "sorted by memory, largest first (m: back to what needs you)"
                    } else {
                        "sorted by what needs you"
                    }
                    .into(),
                );
            }
            A::Help => view.mode = Mode::Help,
            A::ClearFilter => view.model.set_filter(""),
            A::Reload => {
                let _ = self.load.send(());
                view.message = Some("reloading…".into());
            }
            A::New => {
                let start = sel
                    .as_ref()
                    .and_then(|r| r.info.cwd.clone())
                    .or_else(|| {
                        std::env::current_dir()
                            .ok()
                            .map(|d| d.to_string_lossy().into_owned())
                    })
                    .unwrap_or_default();
                view.mode = Mode::NewDir {
                    input: format!("{}/", start.trim_end_matches('/')),
                    choices: vec![],
                };
            }
            A::Attach | A::Observe | A::Fork | A::Kill | A::Approve | A::Deny => {
                let Some(r) = sel else {
                    view.message = Some("no session selected".into());
                    return;
                };
                let sid = r.info.session_id.clone();
                let short = crate::commands::short_id(&sid).to_string();
                match action {
                    A::Attach => self.attach(term, view, &sid, AttachMode::Interactive),
                    A::Observe => self.attach(term, view, &sid, AttachMode::Observe),
                    A::Fork => {
                        view.message = Some(format!("forking {short}…"));
                        let _ = self.jobs.send(Job::Fork(sid));
                    }
                    A::Kill if r.held() => {
                        view.mode = Mode::ConfirmKill {
                            session: sid,
                            label: short,
                        };
                    }
                    A::Kill => {
                        view.message = Some(format!(
                            "{short} is not held by ccd: ccd only kills sessions it runs"
                        ))
                    }
                    _ => {
                        let approve = action == A::Approve;
                        match r.prompt() {
                            Some(p) => {
                                view.message = Some(format!(
                                    "{} {short}…",
                                    if approve { "approving" } else { "denying" }
                                ));
                                let _ = self.jobs.send(Job::Respond {
                                    session: sid,
                                    prompt: Some(p.to_string()),
                                    choice: if approve {
                                        RespondChoice::Yes
                                    } else {
                                        RespondChoice::No
                                    },
                                });
                            }
                            None if !r.held()
                                && r.attention() == super::model::Attention::Waiting =>
                            {
                                view.message = Some(format!(
                                    "{short} runs outside ccd: answer it where it runs (o observes it)"
                                ))
                            }
                            None => {
                                view.message = Some(format!("{short} shows no permission prompt"))
                            }
                        }
                    }
                }
            }
        }
    }

    /// Steps aside for an attached (or observing) session, then comes
    /// back with the selection on it.
    fn attach(&mut self, term: &mut Term, view: &mut View, sid: &str, mode: AttachMode) {
        self.input.pause();
        leave_terminal();
        // Until the attach client's raw mode, the terminal is cooked: a
        // detach key (Ctrl-\ is QUIT) or Ctrl-C pressed then must stay a
        // key, not kill the dashboard. Signal keys are off for the spell.
        let cooked = without_signal_keys();
        if let Some(ms) = std::env::var(ATTACH_DELAY_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms.min(10_000)));
        }
        let r = crate::commands::connect(&self.global)
            .map_err(|e| e.to_string())
            .and_then(|client| {
                attach_loop(
                    client,
                    sid,
                    mode,
                    self.key,
                    AttachExtra {
                        fresh_on_failure: false,
                        last: (mode == AttachMode::Observe).then_some(20),
                    },
                    &mut |_| {},
                )
                .map_err(|e| attach_error(sid, &e))
            });
        if let Some(t) = &cooked {
            let _ = nix::sys::termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, t);
        }
        let back = terminal::enable_raw_mode().and_then(|_| {
            execute!(
                std::io::stdout(),
                terminal::EnterAlternateScreen,
                cursor::Hide
            )
        });
        let _ = term.clear();
        self.input.resume();
        if let Err(e) = back {
            view.message = Some(format!("cannot take the terminal back: {e}"));
        }
        let short = crate::commands::short_id(sid).to_string();
        view.message = Some(match r {
            Ok((outcome, attached)) => {
                view.model.select_id(&attached.session);
                match outcome {
                    Outcome::Detached => format!("detached from {short}"),
                    Outcome::Exited { code, signal } => match (code, signal) {
                        (Some(c), _) => format!("{short} exited with status {c}"),
                        (None, Some(s)) => format!("{short} was killed by signal {s}"),
                        _ => format!("{short} ended"),
                    },
                    Outcome::DaemonGone => "the ccd daemon went away".into(),
                    Outcome::HolderGone => format!("lost {short}: its ccd holder is gone"),
                    Outcome::Signalled(s) => {
                        self.quit = Some(ExitCode::from(128u8.wrapping_add(s as u8)));
                        format!("signal {s}")
                    }
                }
            }
            Err(e) => e,
        });
        self.preview_stale = true;
        let _ = self.load.send(());
    }
}

/// Turns the terminal's signal keys (ISIG: Ctrl-C, Ctrl-\, Ctrl-Z) off;
/// returns the settings to restore.
fn without_signal_keys() -> Option<nix::sys::termios::Termios> {
    use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags};
    let saved = tcgetattr(std::io::stdin()).ok()?;
    let mut t = saved.clone();
    t.local_flags.remove(LocalFlags::ISIG);
    tcsetattr(std::io::stdin(), SetArg::TCSANOW, &t).ok()?;
    Some(saved)
}

/// One line for a refused or failed attach.
fn attach_error(sid: &str, e: &ccd_client::ClientError) -> String {
    let short = crate::commands::short_id(sid);
    match e.rpc() {
        Some(rpc) if rpc.code == ErrorCode::SessionLiveElsewhere.code() => {
            let pid = rpc
                .data_as::<LiveElsewhereData>()
                .and_then(|d| d.pid)
                .map(|p| format!(" (pid {p})"))
                .unwrap_or_default();
            format!("{short} runs outside ccd{pid}: o observes it, f forks it")
        }
        Some(rpc) => format!("{short}: {}", rpc.message),
        None => format!("{short}: {e}"),
    }
}

fn spawn_input(tx: SyncSender<Msg>, ctl: InputCtl) {
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

fn spawn_signals(tx: SyncSender<Msg>) -> Option<signal_hook::iterator::Handle> {
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
fn spawn_events(global: GlobalArgs, tx: SyncSender<Msg>) {
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
fn spawn_loader(global: GlobalArgs, tx: SyncSender<Msg>) -> Sender<()> {
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

fn spawn_worker(global: GlobalArgs, tx: SyncSender<Msg>, auto_trust: bool) -> Sender<Job> {
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

/// Whether `ccd` with no arguments should open the dashboard.
pub fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
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
