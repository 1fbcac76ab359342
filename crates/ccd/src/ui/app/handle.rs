//! The main thread: its loop (draw when something changed, wait for the
//! next message or tick), what each message does, and what each key does
//! in each mode.

use super::{
    leave_terminal, App, Done, Job, Msg, Notify, Term, PANIC_ENV, SCREEN_REFRESH, STARTED, TICK,
};
use crate::term::Mode as AttachMode;
use crate::ui::model::Applied;
use crate::ui::render;
use crate::ui::view::{Daemon, Mode, View};
use ccd_claude::display::line;
use ccd_protocol::methods::session::RespondChoice;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::io::Write;
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

impl App {
    pub(super) fn run(
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
                .is_some_and(|r| r.held() && r.attention() == crate::ui::model::Attention::Busy);
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
                    let dir = crate::ui::complete::expand(input.trim(), view.home.as_deref());
                    view.message = Some(format!("starting claude in {}…", dir.display()));
                    let _ = self.jobs.send(Job::New(dir));
                }
                KeyCode::Tab => {
                    let (now, choices) =
                        crate::ui::complete::complete(&input, view.home.as_deref());
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
        use crate::ui::keys::Action as A;
        view.message = None;
        let page = term
            .size()
            .map(|s| (s.height as isize / 2 - 3).max(1))
            .unwrap_or(10);
        let sel = view.model.selected().cloned();
        let Some(action) = crate::ui::keys::action_of(&k) else {
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
                                && r.attention() == crate::ui::model::Attention::Waiting =>
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
}
