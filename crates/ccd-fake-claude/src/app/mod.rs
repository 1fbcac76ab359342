//! The event loop: one thread polling the terminal and the signal pipe, with timers for the
//! input delay of dialogs, turn progress and the simulated crash. Here: the state, the loop,
//! keys, dialogs and drawing; what a submitted prompt does (turns, `/clear`, `/resume`,
//! floods) is [`turns`].

mod turns;

use turns::{command_of, conversation_entries};

use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;

use crate::args::Args;
use crate::input::{Decoder, Key};
use crate::registry::{Registry, Status};
use crate::session;
use crate::settings::{Settings, Variant};
use crate::signals::Signals;
use crate::term::{self, RawMode};
use crate::transcript::{Meta, Transcript};
use crate::trust;
use crate::tui::dialogs::{self, Menu, MenuAction};
use crate::tui::modes;
use crate::tui::paint::{color, Line, Painter};
use crate::tui::prompt::{Entry, MainView};

/// Exit statuses of the real CLI.
const EXIT_OK: i32 = 0;
const EXIT_ERROR: i32 = 1;
const EXIT_SIGHUP: i32 = 129;
const EXIT_SIGTERM: i32 = 143;
/// Status of a simulated crash (`FAKE_CLAUDE_CRASH_AFTER_MS`).
const EXIT_CRASH: i32 = 3;

enum Phase {
    Trust {
        menu: Menu,
        live_at: Instant,
    },
    ApiKey {
        menu: Menu,
        live_at: Instant,
    },
    Prompt,
    Permission {
        menu: Menu,
    },
    /// The `/resume` picker: `ids[i]` is the conversation of `menu.options[i]`.
    ResumePicker {
        menu: Menu,
        ids: Vec<String>,
    },
}

struct Turn {
    text: String,
    submitted: Instant,
    busy_at: Instant,
    done_at: Instant,
    busy: bool,
    /// A "perm ..." prompt: the registry says `waiting` at `done_at`, the
    /// permission dialog opens `dialog_lag` later.
    permission: bool,
    /// The registry says `waiting` (the dialog may not be drawn yet).
    waiting_told: bool,
    asked: bool,
}

/// What a handler asks of the loop.
type Flow = Option<i32>;

pub struct App {
    s: Settings,
    args: Args,
    cwd: PathBuf,
    raw: RawMode,
    signals: Signals,
    decoder: Decoder,
    rows: u16,
    cols: u16,
    view: MainView,
    phase: Phase,
    fullscreen: bool,
    /// Rows painted by the current inline dialog (erased when it closes).
    dialog_rows: u16,
    registry: Option<Registry>,
    transcript: Option<Transcript>,
    entries: Vec<Entry>,
    input: String,
    turn: Option<Turn>,
    footer_top: u16,
    crash_at: Option<Instant>,
    term_gone: bool,
    /// Memory held on purpose (`hold N`): what a long-lived real CLI grows to.
    ballast: Vec<Vec<u8>>,
}

/// Runs the fake CLI to completion and returns its exit status.
pub fn run(s: Settings, args: Args) -> io::Result<i32> {
    let cwd = std::env::current_dir()?;
    let signals = Signals::install()?;
    let raw = RawMode::enable();
    let (rows, cols) = term::size();
    let view = MainView {
        variant: s.ui,
        version: s.version.clone(),
        model_name: s.model_display_name(),
        cwd: cwd.to_string_lossy().into_owned(),
        mode: crate::mode::Mode::initial(
            args.permission_mode.as_deref(),
            args.skip_permissions,
            s.ui,
        ),
    };
    let crash_at = s.crash_after.map(|d| Instant::now() + d);
    let mut app = App {
        s,
        args,
        cwd,
        raw,
        signals,
        decoder: Decoder::default(),
        rows,
        cols,
        view,
        phase: Phase::Prompt,
        fullscreen: false,
        dialog_rows: 0,
        registry: None,
        transcript: None,
        entries: Vec::new(),
        input: String::new(),
        turn: None,
        footer_top: 1,
        crash_at,
        term_gone: false,
        ballast: Vec::new(),
    };
    let code = app.main();
    app.shutdown();
    Ok(code)
}

impl App {
    fn out(&mut self, s: &str) {
        if !self.term_gone && term::write_out(s.as_bytes()).is_err() {
            self.term_gone = true;
        }
    }

    fn main(&mut self) -> i32 {
        self.out(modes::startup(self.s.ui));
        let flow = if trust::is_trusted(&self.s.global_state, &self.cwd) {
            self.out(modes::queries(self.s.ui));
            self.after_trust()
        } else {
            self.phase = Phase::Trust {
                menu: dialogs::trust_menu(self.s.ui),
                live_at: Instant::now() + self.s.input_delay,
            };
            self.draw_dialog();
            self.out(modes::queries(self.s.ui));
            None
        };
        if let Some(code) = flow {
            return code;
        }
        loop {
            if self.term_gone {
                return EXIT_OK;
            }
            let now = Instant::now();
            if let Some(code) = self.on_timers(now) {
                return code;
            }
            if let Some(code) = self.wait_and_dispatch(now) {
                return code;
            }
        }
    }

    fn wait_and_dispatch(&mut self, now: Instant) -> Flow {
        let timeout = self
            .next_deadline()
            .map(|d| d.saturating_duration_since(now))
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        let stdin = io::stdin();
        let (stdin_ready, sig_ready) = {
            let mut fds = [
                PollFd::new(stdin.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.signals.fd(), PollFlags::POLLIN),
            ];
            let ms = u16::try_from(timeout.as_millis().max(1)).unwrap_or(1000);
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(_) => (
                    fds[0].revents().is_some_and(|r| !r.is_empty()),
                    fds[1].revents().is_some_and(|r| !r.is_empty()),
                ),
                Err(nix::errno::Errno::EINTR) => (false, true),
                Err(_) => (false, false),
            }
        };
        if sig_ready {
            for sig in self.signals.take() {
                if let Some(code) = self.on_signal(sig) {
                    return Some(code);
                }
            }
        }
        if stdin_ready {
            let mut buf = [0u8; 8192];
            match nix::unistd::read(stdin.as_fd(), &mut buf) {
                // The PTY was closed: a graceful exit.
                Ok(0) => return Some(EXIT_OK),
                Ok(n) => {
                    if !self.s.key_lag.is_zero() {
                        // Later keys queue in the PTY meanwhile.
                        std::thread::sleep(self.s.key_lag);
                    }
                    let keys = self.decoder.feed(&buf[..n]);
                    if self.input_live(Instant::now()) {
                        for key in keys {
                            if let Some(code) = self.on_key(key) {
                                return Some(code);
                            }
                        }
                    }
                }
                Err(nix::errno::Errno::EINTR) | Err(nix::errno::Errno::EAGAIN) => {}
                Err(_) => return Some(EXIT_OK),
            }
        }
        None
    }

    /// Keys that arrive before a dialog's input handler is live are lost, as with the real CLI.
    fn input_live(&self, now: Instant) -> bool {
        match &self.phase {
            Phase::Trust { live_at, .. } | Phase::ApiKey { live_at, .. } => now >= *live_at,
            _ => true,
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut d = self.crash_at;
        let mut consider = |t: Instant| d = Some(d.map_or(t, |x| x.min(t)));
        if let Some(turn) = &self.turn {
            if !turn.busy {
                consider(turn.busy_at);
            }
            if !turn.asked {
                consider(if turn.waiting_told {
                    turn.done_at + self.s.dialog_lag
                } else {
                    turn.done_at
                });
            }
        }
        d
    }

    fn on_timers(&mut self, now: Instant) -> Flow {
        if self.crash_at.is_some_and(|t| now >= t) {
            // A crash: nothing is cleaned up, the registry entry stays behind.
            if self.s.crash_signal {
                std::process::abort();
            }
            std::process::exit(EXIT_CRASH);
        }
        let Some(turn) = &mut self.turn else {
            return None;
        };
        if !turn.asked && now >= turn.done_at {
            if turn.permission {
                // The registry first, then the dialog (at once unless
                // `FAKE_CLAUDE_DIALOG_LAG_MS`).
                let tell = !turn.waiting_told;
                turn.waiting_told = true;
                let draw = now >= turn.done_at + self.s.dialog_lag;
                if draw {
                    turn.asked = true;
                }
                let menu =
                    draw.then(|| dialogs::permission_menu(command_of(&turn.text), &self.view.cwd));
                if tell {
                    self.set_status(Status::WaitingPermission);
                }
                if let Some(menu) = menu {
                    self.phase = Phase::Permission { menu };
                    self.redraw();
                }
            } else {
                let reply = format!("echo: {}", turn.text);
                self.finish_turn(Some(reply), None);
            }
        } else if !turn.busy && now >= turn.busy_at {
            turn.busy = true;
            self.set_status(Status::Busy);
        }
        None
    }

    fn on_signal(&mut self, sig: Signal) -> Flow {
        match sig {
            Signal::SIGTERM => Some(EXIT_SIGTERM),
            // The kernel sends SIGHUP when the PTY master closes; that is a closed terminal
            // (status 0), while a SIGHUP sent to a live terminal gives 129.
            Signal::SIGHUP => Some(if stdin_hung_up() {
                EXIT_OK
            } else {
                EXIT_SIGHUP
            }),
            Signal::SIGINT => self.on_key(Key::CtrlC),
            Signal::SIGWINCH => {
                (self.rows, self.cols) = term::size();
                self.redraw();
                None
            }
            _ => None,
        }
    }

    fn on_key(&mut self, key: Key) -> Flow {
        match &mut self.phase {
            Phase::Trust { menu, .. } => {
                if key == Key::CtrlC {
                    return Some(EXIT_OK);
                }
                match menu.handle(&key) {
                    MenuAction::Moved => {
                        self.draw_dialog();
                        None
                    }
                    MenuAction::Chosen(i) if menu.options[i] == dialogs::TRUST_YES => {
                        self.accept_trust()
                    }
                    MenuAction::Chosen(_) | MenuAction::Cancel => self.refuse_trust(),
                    MenuAction::None => None,
                }
            }
            Phase::ApiKey { menu, .. } => {
                if key == Key::CtrlC {
                    return Some(EXIT_OK);
                }
                match menu.handle(&key) {
                    MenuAction::Moved => {
                        self.draw_dialog();
                        None
                    }
                    // Either answer goes on to the prompt.
                    MenuAction::Chosen(_) | MenuAction::Cancel => {
                        self.erase_dialog();
                        self.enter_prompt();
                        None
                    }
                    MenuAction::None => None,
                }
            }
            Phase::Permission { menu } => {
                if key == Key::CtrlC {
                    self.finish_turn(None, Some("Interrupted · What should Claude do instead?"));
                    return None;
                }
                match menu.handle(&key) {
                    MenuAction::Moved => self.redraw(),
                    MenuAction::Chosen(0) | MenuAction::Chosen(1) => {
                        let reply = self.turn.as_ref().map(|t| format!("echo: {}", t.text));
                        self.finish_turn(reply, None);
                    }
                    MenuAction::Chosen(_) | MenuAction::Cancel => {
                        self.finish_turn(None, Some("User rejected the command"));
                    }
                    MenuAction::None => {}
                }
                None
            }
            Phase::ResumePicker { menu, ids } => {
                match menu.handle(&key) {
                    MenuAction::Moved => self.redraw(),
                    MenuAction::Chosen(i) => {
                        let id = ids.get(i).cloned().unwrap_or_default();
                        self.phase = Phase::Prompt;
                        self.resume_in_tui(&format!("/resume {id}"), &id);
                    }
                    MenuAction::Cancel => {
                        self.phase = Phase::Prompt;
                        self.redraw();
                    }
                    MenuAction::None if key == Key::CtrlC => {
                        self.phase = Phase::Prompt;
                        self.redraw();
                    }
                    MenuAction::None => {}
                }
                None
            }
            Phase::Prompt => self.on_prompt_key(key),
        }
    }

    fn on_prompt_key(&mut self, key: Key) -> Flow {
        match key {
            Key::Char(c) => {
                self.input.push(c);
                self.redraw_input();
            }
            Key::Paste(text) => {
                self.input.push_str(&text);
                self.redraw_input();
            }
            Key::Backspace => {
                self.input.pop();
                self.redraw_input();
            }
            Key::Enter => return self.submit(),
            Key::BackTab => {
                let bypass = self.args.skip_permissions
                    || self.args.permission_mode.as_deref() == Some("bypassPermissions");
                self.view.mode = self.view.mode.next(bypass);
                self.redraw();
            }
            Key::Esc if self.turn.is_some() => {
                self.finish_turn(None, Some("Interrupted · What should Claude do instead?"));
            }
            Key::CtrlC => {
                if self.turn.is_some() {
                    self.finish_turn(None, Some("Interrupted · What should Claude do instead?"));
                } else if !self.input.is_empty() {
                    self.input.clear();
                    self.redraw_input();
                } else {
                    return Some(EXIT_OK);
                }
            }
            _ => {}
        }
        None
    }

    // ---- startup: trust, session plan, registry, api-key dialog ----

    fn dialog_lines(&self) -> Vec<Line> {
        match &self.phase {
            Phase::Trust { menu, .. } => dialogs::trust_lines(&self.view.cwd, self.cols, menu),
            Phase::ApiKey { menu, .. } => {
                let key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_default();
                let n = key.chars().count();
                let tail: String = key.chars().skip(n.saturating_sub(20)).collect();
                dialogs::api_key_lines(self.cols, &tail, menu)
            }
            _ => Vec::new(),
        }
    }

    /// Inline dialogs are painted from the top row, as on a fresh terminal.
    fn draw_dialog(&mut self) {
        let lines = self.dialog_lines();
        let mut p = Painter::default();
        let mut row = 1;
        for line in &lines {
            if row > self.rows {
                break;
            }
            p.line(row, line);
            row += 1;
        }
        self.dialog_rows = self.dialog_rows.max(row - 1);
        if row <= self.rows {
            p.goto(row, 1);
        }
        let s = p.take();
        self.out(&s);
    }

    fn erase_dialog(&mut self) {
        let mut p = Painter::default();
        if self.s.ui == Variant::V2_1_332 {
            p.raw(modes::DIALOG_MODES_OFF);
        }
        for row in 1..=self.dialog_rows {
            p.clear_row(row);
        }
        p.goto(1, 1);
        if self.s.ui == Variant::V2_1_332 {
            p.raw(modes::DIALOG_MODES_ON);
        }
        self.dialog_rows = 0;
        let s = p.take();
        self.out(&s);
    }

    fn accept_trust(&mut self) -> Flow {
        let _ = trust::record_trust(&self.s.global_state, &self.cwd);
        self.erase_dialog();
        self.after_trust()
    }

    fn refuse_trust(&mut self) -> Flow {
        self.erase_dialog();
        self.out("Claude Code didn't start because this folder isn't trusted.\r\n");
        Some(EXIT_ERROR)
    }

    fn after_trust(&mut self) -> Flow {
        let start = match session::plan(&self.s, &self.args, &self.cwd) {
            Ok(start) => start,
            Err(msg) => {
                let line = format!("\r\x1b[38;5;{}m{msg}\x1b[39m\r\n", color::ERROR);
                self.out(&line);
                return Some(EXIT_ERROR);
            }
        };
        if let Some(history) = start.history() {
            self.entries = conversation_entries(history);
        }
        self.transcript = Some(start.transcript(&self.s.config_dir, self.meta()));
        self.registry = Registry::create(
            &self.s.config_dir,
            start.session_id(),
            &self.cwd,
            &self.s.version,
        )
        .ok();
        if self.s.api_key_dialog {
            self.phase = Phase::ApiKey {
                menu: dialogs::api_key_menu(),
                live_at: Instant::now() + self.s.input_delay,
            };
            self.draw_dialog();
        } else {
            self.enter_prompt();
        }
        None
    }

    fn meta(&self) -> Meta {
        Meta {
            cwd: self.view.cwd.clone(),
            version: self.s.version.clone(),
            model: self.s.model.clone(),
            usage_base: self.s.usage_input,
        }
    }

    // ---- the main screen ----

    fn enter_prompt(&mut self) {
        self.out(modes::TITLE);
        if self.s.ui == Variant::V2_1_332 {
            self.out(modes::ENTER_FULLSCREEN);
            self.fullscreen = true;
        }
        self.phase = Phase::Prompt;
        self.redraw();
    }

    fn footer(&self) -> Vec<Line> {
        match &self.phase {
            Phase::Permission { menu } => {
                let cmd = self
                    .turn
                    .as_ref()
                    .map(|t| command_of(&t.text))
                    .unwrap_or("");
                dialogs::permission_lines(self.cols, cmd, menu)
            }
            Phase::ResumePicker { menu, .. } => dialogs::resume_picker_lines(self.cols, menu),
            _ => self
                .view
                .input_box(&self.input, self.turn.is_some(), self.cols),
        }
    }

    fn redraw(&mut self) {
        match self.phase {
            Phase::Trust { .. } | Phase::ApiKey { .. } => self.draw_dialog(),
            Phase::Prompt | Phase::Permission { .. } | Phase::ResumePicker { .. } => {
                let footer = self.footer();
                let (mut s, top) = self.view.draw(&self.entries, &footer, self.rows, self.cols);
                self.footer_top = top;
                s.push_str(&self.park_cursor());
                self.out(&s);
            }
        }
    }

    fn park_cursor(&self) -> String {
        let col = 3 + self
            .input
            .chars()
            .count()
            .min(self.cols.saturating_sub(4) as usize) as u16;
        format!("\x1b[{};{}H", self.footer_top + 2, col)
    }

    fn redraw_input(&mut self) {
        if !matches!(self.phase, Phase::Prompt) {
            return;
        }
        let line = self.view.input_line(&self.input, self.cols);
        let mut p = Painter::default();
        p.line(self.footer_top + 2, &line);
        let mut s = p.take();
        s.push_str(&self.park_cursor());
        self.out(&s);
    }

    fn set_status(&mut self, status: Status) {
        if let Some(reg) = &mut self.registry {
            let _ = reg.set_status(status);
        }
    }

    /// Graceful cleanup: remove the registry entry, undo the terminal modes.
    fn shutdown(&mut self) {
        if let Some(reg) = &self.registry {
            reg.remove();
        }
        let seq = modes::exit(self.s.ui, self.fullscreen);
        self.out(&seq);
        self.raw.restore();
    }
}

/// True when stdin's terminal has been hung up (its PTY master closed).
fn stdin_hung_up() -> bool {
    let stdin = io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(_) => fds[0].revents().is_some_and(|r| {
            r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
        }),
        Err(_) => false,
    }
}
