//! The main thread: its loop (draw when something changed, wait for the
//! next message or tick), what each message does, and what each key does
//! in each mode.

use super::{
    leave_terminal, App, Done, Job, Msg, Notify, Term, REMOTE_IDLE_SCREEN_REFRESH, SCREEN_REFRESH,
    STARTED, TICK,
};
use crate::hosts::LOCAL;
use crate::term::Mode as AttachMode;
use crate::ui::keys::Action;
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
                if !view.loading && ccd_test_hooks::Hook::UiPanic.is_on() {
                    panic!("{} is set", ccd_test_hooks::Hook::UiPanic.name());
                }
                // The first frame that shows every machine (each listed,
                // or said unreachable).
                if first_frame_only && !view.loading && view.hosts.iter().all(|h| h.loaded) {
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
            let focus = view.focus();
            let busy_preview = focus.as_ref().is_some_and(|f| f.busy);
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
                if !view.loading {
                    for h in &view.hosts {
                        if h.daemon == Daemon::Connected {
                            self.job(&h.label, Job::Costs);
                        }
                    }
                }
            }
            let held_every = focus.filter(|f| f.held).map(|f| {
                if f.host == LOCAL {
                    TICK
                } else {
                    REMOTE_IDLE_SCREEN_REFRESH
                }
            });
            if (busy_preview && self.preview_at.elapsed() >= SCREEN_REFRESH)
                || held_every.is_some_and(|every| self.preview_at.elapsed() >= every)
            {
                // A held screen can change without an event (another
                // client typing): refreshed every TICK (another
                // machine's, every REMOTE_IDLE_SCREEN_REFRESH: each look
                // crosses the network), every second while busy.
                self.preview_stale = true;
            }
            dirty |= self.ask_preview(view);
        }
    }

    /// Asks the preview of the selected session (or search hit:
    /// [`View::focus`]) when it is not the one shown or asked (one request
    /// in flight at a time).
    fn ask_preview(&mut self, view: &mut View) -> bool {
        let Some(f) = view.focus() else {
            return false;
        };
        if self.preview_asked.is_some() {
            return false; // one in flight: its answer first, then this
        }
        let shown = view
            .preview
            .as_ref()
            .is_some_and(|p| p.session == f.session && p.host == f.host);
        if shown && !self.preview_stale {
            return false;
        }
        self.preview_stale = false;
        self.preview_at = Instant::now();
        if let Some(why) = view.stale(&f.host) {
            // Its machine is unreachable: said here, nothing asked.
            view.preview = Some(super::jobs::unreachable_preview(&f.host, &f.session, why));
            return true;
        }
        self.preview_asked = Some(crate::ui::model::RowKey::new(&f.host, &f.session));
        self.job(
            &f.host,
            Job::Preview {
                session: f.session,
                held: f.held,
                transcript: f.transcript,
            },
        );
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
            Msg::Daemon(host, d) => {
                let up = d == Daemon::Connected;
                let was_up = *view.daemon(&host) == Daemon::Connected;
                view.set_daemon(&host, d);
                if up && self.link(&host).is_some_and(|l| l.load.is_some()) {
                    // This machine's listing is read again once its events
                    // come (another machine's link lists right after).
                    self.reload(&host);
                }
                if up != was_up {
                    // The selected row's preview may say it was unreachable.
                    self.preview_stale = true;
                }
                true
            }
            Msg::Event(host, e) => {
                let Applied {
                    reload,
                    notify,
                    preview,
                } = view.model.apply(&host, &e);
                if reload {
                    self.reload(&host);
                }
                if notify && self.notify != Notify::Off {
                    let sid = e.session.as_deref().unwrap_or("");
                    let on = if view.shows_hosts() {
                        format!("{host} ")
                    } else {
                        String::new()
                    };
                    let text = format!(
                        "ccd: {on}{} needs you{}",
                        crate::shared::cells::short_id(sid),
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
            Msg::Rows(host, Ok(rows)) => {
                view.set_rows(&host, rows);
                true
            }
            Msg::Costs(host, costs) => {
                view.model.set_costs(&host, &costs);
                true
            }
            Msg::Rows(host, Err(e)) => {
                view.answered(&host);
                view.message = Some(if view.shows_hosts() {
                    format!("listing {host} failed: {e}")
                } else {
                    format!("listing failed: {e}")
                });
                true
            }
            Msg::Preview(p) => {
                self.preview_asked = None;
                self.preview_at = Instant::now();
                view.preview = Some(p);
                true
            }
            Msg::Done(host, Done::Message(m)) => {
                view.message = Some(m);
                self.reload(&host);
                true
            }
            Msg::Completed {
                host,
                typed,
                input,
                choices,
            } => {
                let current = matches!(&view.mode, Mode::NewDir { host: h, input: i, .. } if *h == host && *i == typed);
                if current {
                    view.mode = Mode::NewDir {
                        host,
                        input,
                        choices,
                    };
                }
                current
            }
            Msg::Searched {
                host,
                generation,
                result,
            } => view.search.answer(&host, generation, result) && view.mode == Mode::Search,
            Msg::Attachable {
                host,
                session,
                mode,
                client,
            } => {
                let key = crate::ui::model::RowKey::new(&host, &session);
                self.attachable(term, view, key, mode, client);
                true
            }
            Msg::Done(host, Done::Attach(sid)) => {
                view.message = None;
                self.attach(term, view, &host, &sid, AttachMode::Interactive);
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
            Mode::Search => self.search_key(term, view, k),
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
            Mode::ConfirmKill {
                host,
                session,
                label,
            } => {
                view.mode = Mode::List;
                if k.code == KeyCode::Char('y') {
                    view.message = Some(format!("killing {label}…"));
                    self.job(&host, Job::Kill(session));
                } else {
                    view.message = Some("kept it".into());
                }
            }
            Mode::NewHost { at } => match k.code {
                KeyCode::Esc => view.mode = Mode::List,
                KeyCode::Up | KeyCode::Char('k' | 'K') => {
                    view.mode = Mode::NewHost {
                        at: at.saturating_sub(1),
                    }
                }
                KeyCode::Down | KeyCode::Char('j' | 'J') => {
                    view.mode = Mode::NewHost {
                        at: (at + 1).min(view.hosts.len().saturating_sub(1)),
                    }
                }
                KeyCode::Enter => {
                    let host = view.hosts.get(at).map(|h| h.label.clone());
                    match host {
                        Some(h) => new_dir(view, &h),
                        None => view.mode = Mode::List,
                    }
                }
                _ => {}
            },
            Mode::NewDir {
                host, mut input, ..
            } => match k.code {
                KeyCode::Esc => view.mode = Mode::List,
                KeyCode::Enter => {
                    view.mode = Mode::List;
                    let dir = if host == LOCAL {
                        ccd_daemon::complete::expand(input.trim(), view.home.as_deref())
                    } else {
                        // A path there: its daemon checks it (and says
                        // why not).
                        std::path::PathBuf::from(input.trim())
                    };
                    if let Some(why) = view.stale(&host) {
                        view.message = Some(super::jobs::unreachable(&host, why));
                        return;
                    }
                    let on = if view.shows_hosts() {
                        format!(" on {host}")
                    } else {
                        String::new()
                    };
                    view.message = Some(format!("starting claude{on} in {}…", dir.display()));
                    self.job(&host, Job::New(dir));
                }
                KeyCode::Tab if host == LOCAL => {
                    let (now, choices) =
                        ccd_daemon::complete::complete(&input, view.home.as_deref());
                    view.mode = Mode::NewDir {
                        host,
                        input: now,
                        choices,
                    };
                }
                KeyCode::Tab => {
                    // Completed there (`dirs.complete`); the answer lands
                    // if the prompt still holds what was typed.
                    self.job(&host, Job::Complete(input.clone()));
                    view.mode = Mode::NewDir {
                        host,
                        input,
                        choices: vec![],
                    };
                }
                KeyCode::Backspace => {
                    input.pop();
                    view.mode = Mode::NewDir {
                        host,
                        input,
                        choices: vec![],
                    };
                }
                KeyCode::Char(c) if !ctrl => {
                    input.push(c);
                    view.mode = Mode::NewDir {
                        host,
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
        if k.code == KeyCode::Esc && self.give_up_attaching(view) {
            return;
        }
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
            A::Search => {
                view.search.open();
                view.mode = Mode::Search;
            }
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
                self.reload_all();
                view.message = Some("reloading…".into());
            }
            A::New if view.hosts.len() > 1 => {
                // Which machine first: the selected row's by default.
                let at = sel
                    .as_ref()
                    .and_then(|r| view.hosts.iter().position(|h| h.label == r.host))
                    .unwrap_or(0);
                view.mode = Mode::NewHost { at };
            }
            A::New => {
                let host = view.hosts[0].label.clone();
                new_dir(view, &host);
            }
            A::Attach | A::Observe | A::Fork | A::Kill | A::Approve | A::Deny => {
                let Some(r) = sel else {
                    view.message = Some("no session selected".into());
                    return;
                };
                let sid = r.info.session_id.clone();
                let host = r.host.clone();
                let short = crate::shared::cells::short_id(&sid).to_string();
                if let Some(why) = view.stale(&host) {
                    // Answered at once: nothing can reach it now.
                    view.message = Some(super::jobs::unreachable(&host, why));
                    return;
                }
                match action {
                    A::Attach | A::Observe | A::Fork => self.go(term, view, action, &host, &sid),
                    A::Kill if r.held() => {
                        view.mode = Mode::ConfirmKill {
                            host,
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
                                self.job(
                                    &host,
                                    Job::Respond {
                                        session: sid,
                                        prompt: Some(p.to_string()),
                                        choice: if approve {
                                            RespondChoice::Yes
                                        } else {
                                            RespondChoice::No
                                        },
                                    },
                                );
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

impl App {
    /// Goes into a session (a row of the list, or a search hit: one
    /// code): `Enter` attaches, which is ccd's one rule (attach if held,
    /// refused with what to do if it runs elsewhere, resumed in its own
    /// folder if dead, an archived one put back first); `o` observes;
    /// `f` forks and attaches to the fork.
    fn go(&mut self, term: &mut Term, view: &mut View, action: Action, host: &str, sid: &str) {
        if let Some(why) = view.stale(host) {
            // Answered at once: nothing can reach it now.
            view.message = Some(super::jobs::unreachable(host, why));
            return;
        }
        match action {
            Action::Attach => self.attach(term, view, host, sid, AttachMode::Interactive),
            Action::Observe => self.attach(term, view, host, sid, AttachMode::Observe),
            Action::Fork => {
                view.message = Some(format!("forking {}…", crate::shared::cells::short_id(sid)));
                self.job(host, Job::Fork(sid.to_string()));
            }
            _ => {}
        }
    }

    /// A key in the content search: typing, moving among the hits,
    /// searching (every machine shown, in the background), going into a
    /// hit, or back to the list.
    fn search_key(&mut self, term: &mut Term, view: &mut View, k: KeyEvent) {
        use crate::ui::search::Step;
        if k.code == KeyCode::Esc && self.give_up_attaching(view) {
            return;
        }
        if !view.search.editing {
            view.message = None;
        }
        let page = term
            .size()
            .map(|s| (s.height as isize / 2 - 3).max(1))
            .unwrap_or(10);
        match view.search.key(&k, page) {
            Step::Stay => {}
            Step::Leave => view.mode = Mode::List,
            Step::Quit => self.quit = Some(ExitCode::SUCCESS),
            Step::Ask { generation, query } => self.search(view, generation, &query),
            Step::Go(action, key) => self.go(term, view, action, &key.host, &key.session),
            Step::NotHere(_) => {
                view.message = Some(
                    "on a hit: Enter goes in, o observes, f forks; Esc back to the list".into(),
                )
            }
        }
    }

    /// Sends search `generation` of `query` to every machine shown (an
    /// unreachable one answers at once); the hits come as
    /// [`Msg::Searched`], the dashboard never waits.
    fn search(&mut self, view: &mut View, generation: u64, query: &str) {
        self.search_latest
            .store(generation, std::sync::atomic::Ordering::Relaxed);
        let hosts: Vec<String> = view.hosts.iter().map(|h| h.label.clone()).collect();
        view.search.asked(generation, query, &hosts);
        for host in &hosts {
            if let Some(why) = view.stale(host).map(str::to_string) {
                view.search
                    .answer(host, generation, Err(format!("unreachable ({why})")));
                continue;
            }
            self.job(
                host,
                Job::Search {
                    generation,
                    query: query.to_string(),
                    latest: self.search_latest.clone(),
                },
            );
        }
    }
}

/// Asks the new session's directory on `host`: the selected row's folder
/// when it is on that machine, else that machine's most recent row's, else
/// (this machine) the current directory, else `/`.
fn new_dir(view: &mut View, host: &str) {
    let sel = view
        .model
        .selected()
        .filter(|r| r.host == host)
        .and_then(|r| r.info.cwd.clone());
    let any = || {
        view.model
            .visible_rows()
            .filter(|r| r.host == host)
            .find_map(|r| r.info.cwd.clone())
    };
    let here = || {
        (host == LOCAL)
            .then(|| std::env::current_dir().ok())
            .flatten()
            .map(|d| d.to_string_lossy().into_owned())
    };
    let start = sel.or_else(any).or_else(here).unwrap_or_default();
    view.mode = Mode::NewDir {
        host: host.to_string(),
        input: format!("{}/", start.trim_end_matches('/')),
        choices: vec![],
    };
}
