//! Everything the screen shows besides the rows: the input mode (list,
//! filter, search, help, a confirm, the new-session machine and directory
//! prompts), the content search ([`super::search::Search`]), the preview's lines, the message line, each machine's
//! daemon's state. Pure data, so render tests build it directly.

use super::model::Model;
use ccd_protocol::methods::session::SessionInfo;
use time::OffsetDateTime;

/// The most preview lines kept (a held session's screen is clipped to the
/// pane anyway; a transcript tail keeps its last lines).
pub const MAX_PREVIEW_LINES: usize = 500;

/// The most bytes of one preview line kept (sanitized, before clipping to
/// the pane).
pub const MAX_PREVIEW_LINE_BYTES: usize = 2_048;

/// What keys do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    List,
    /// Typing the filter.
    Filter,
    /// The content search: its prompt and hits ([`View::search`]).
    Search,
    Help,
    /// Asking before `session.kill` of this session (machine, id, shown
    /// name).
    ConfirmKill {
        host: String,
        session: String,
        label: String,
    },
    /// Asking which machine a new session runs on (the index in
    /// [`View::hosts`]).
    NewHost {
        at: usize,
    },
    /// Asking the new session's directory (on `host`).
    NewDir {
        host: String,
        input: String,
        /// Completions of the last Tab (shown when several).
        choices: Vec<String>,
    },
}

/// Where the preview's lines came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewKind {
    /// A held session's screen (`session.screen`).
    Screen,
    /// The transcript's tail, rendered like `ccd observe`.
    Transcript,
    /// Nothing to show, or why not.
    Note,
}

/// The selected session's preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The machine of the session.
    pub host: String,
    pub session: String,
    pub kind: PreviewKind,
    /// Sanitized lines (see [`Preview::new`]).
    pub lines: Vec<String>,
}

impl Preview {
    /// Lines made safe for the terminal (every control character and
    /// escape removed) and bounded by [`MAX_PREVIEW_LINES`] (the last ones
    /// for a transcript, the first for a screen) and
    /// [`MAX_PREVIEW_LINE_BYTES`].
    pub fn new(host: &str, session: &str, kind: PreviewKind, lines: &[String]) -> Self {
        let keep: &[String] = match kind {
            PreviewKind::Transcript if lines.len() > MAX_PREVIEW_LINES => {
                &lines[lines.len() - MAX_PREVIEW_LINES..]
            }
            _ => &lines[..lines.len().min(MAX_PREVIEW_LINES)],
        };
        let lines = keep
            .iter()
            .map(|l| {
                let mut s = ccd_claude::display::line(l).into_owned();
                if s.len() > MAX_PREVIEW_LINE_BYTES {
                    let mut end = MAX_PREVIEW_LINE_BYTES;
                    while !s.is_char_boundary(end) {
                        end -= 1;
                    }
                    s.truncate(end);
                }
                s
            })
            .collect();
        Preview {
            host: host.to_string(),
            session: session.to_string(),
            kind,
            lines,
        }
    }
}

/// The session the preview shows: the selected row, or in the content
/// search the selected hit (with its row's state when the dashboard lists
/// it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    pub host: String,
    pub session: String,
    /// ccd holds it: the preview is its screen.
    pub held: bool,
    /// Held and running a turn: its screen is fetched more often.
    pub busy: bool,
    /// Its transcript on this machine (the preview of one not held).
    pub transcript: Option<String>,
}

impl Focus {
    fn of(host: &str, session: &str, row: Option<&super::model::Row>) -> Focus {
        let held = row.is_some_and(|r| r.held());
        Focus {
            host: host.to_string(),
            session: session.to_string(),
            held,
            busy: held && row.is_some_and(|r| r.attention() == super::model::Attention::Busy),
            transcript: row.and_then(|r| r.info.transcript.clone()),
        }
    }
}

/// Whether a machine's daemon answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Daemon {
    /// Not reached yet (the first connection is being made).
    Connecting,
    Connected,
    /// Gone or unreachable (why); the dashboard retries. The machine's
    /// rows stay, marked stale.
    Gone(String),
}

/// One machine the dashboard shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostView {
    /// Its `--host` label (`local` for this machine).
    pub label: String,
    pub daemon: Daemon,
    /// A listing of it has arrived.
    pub loaded: bool,
}

/// The dashboard's whole state.
#[derive(Debug)]
pub struct View {
    pub model: Model,
    pub mode: Mode,
    /// The last content search (kept while the list shows: `/` shows it
    /// again).
    pub search: super::search::Search,
    pub preview: Option<Preview>,
    /// One line at the bottom (an action's result or error); sanitized when shown.
    pub message: Option<String>,
    /// Every machine shown, in the order given (`--host`), at least one.
    pub hosts: Vec<HostView>,
    /// No machine has answered (rows or a failure) yet.
    pub loading: bool,
    pub colour: bool,
    pub now: OffsetDateTime,
    pub home: Option<String>,
    /// The first visible row of the list (scrolling).
    pub offset: usize,
    /// The detach key's name, for the footer.
    pub detach_key: String,
    /// The note that live sessions run a Claude Code version ccd was not
    /// verified against was shown (it is said once a run).
    pub cli_note_said: bool,
}

impl View {
    /// A view of the machines labelled `hosts` (this one alone when
    /// empty).
    pub fn new(colour: bool, home: Option<String>, detach_key: String, hosts: &[String]) -> Self {
        let mut hosts: Vec<HostView> = hosts
            .iter()
            .map(|h| HostView {
                label: h.clone(),
                daemon: Daemon::Connecting,
                loaded: false,
            })
            .collect();
        if hosts.is_empty() {
            hosts.push(HostView {
                label: crate::hosts::LOCAL.into(),
                daemon: Daemon::Connecting,
                loaded: false,
            });
        }
        View {
            model: Model::default(),
            mode: Mode::List,
            search: Default::default(),
            preview: None,
            message: None,
            hosts,
            loading: true,
            colour,
            now: OffsetDateTime::now_utc(),
            home,
            offset: 0,
            detach_key,
            cli_note_said: false,
        }
    }

    /// A new listing of `host`. The first time a live session in it runs
    /// a Claude Code version ccd was not verified against, the message
    /// line says so (as `ccd ls` does on stderr), when it holds nothing
    /// else.
    pub fn set_rows(&mut self, host: &str, rows: Vec<SessionInfo>) {
        if !self.cli_note_said && self.message.is_none() {
            if let Some(note) = crate::shared::listing::unverified_note(&rows) {
                self.message = Some(note);
                self.cli_note_said = true;
            }
        }
        self.model.set_rows(host, rows);
        self.answered(host);
    }

    /// Sets what `host`'s daemon does now.
    pub fn set_daemon(&mut self, host: &str, daemon: Daemon) {
        let gone = matches!(daemon, Daemon::Gone(_));
        if let Some(h) = self.host_mut(host) {
            h.daemon = daemon;
        }
        if gone && host != crate::hosts::LOCAL {
            // Answered, if only with a failure: the rest can be shown.
            // (This machine's rows come from its files, daemon or not.)
            self.answered(host);
        }
    }

    /// `host` answered (rows, or a failure): the dashboard stops saying
    /// it is loading, and that machine no longer holds up the first frame.
    pub fn answered(&mut self, host: &str) {
        if let Some(h) = self.host_mut(host) {
            h.loaded = true;
        }
        self.loading = false;
    }

    fn host_mut(&mut self, host: &str) -> Option<&mut HostView> {
        self.hosts.iter_mut().find(|h| h.label == host)
    }

    /// `host`'s daemon's state (`Connecting` for a machine not shown).
    pub fn daemon(&self, host: &str) -> &Daemon {
        self.hosts
            .iter()
            .find(|h| h.label == host)
            .map_or(&Daemon::Connecting, |h| &h.daemon)
    }

    /// Why `host`'s rows are stale (its daemon is gone), if they are.
    /// This machine's never are: its rows are read from Claude Code's
    /// files, with a daemon or without.
    pub fn stale(&self, host: &str) -> Option<&str> {
        if host == crate::hosts::LOCAL {
            return None;
        }
        match self.daemon(host) {
            Daemon::Gone(why) => Some(why),
            _ => None,
        }
    }

    /// The session the preview is of: in the content search the selected
    /// hit (a transcript of this machine read from the hit's path when
    /// the dashboard does not list it), else the selected row.
    pub fn focus(&self) -> Option<Focus> {
        if self.mode == Mode::Search {
            let h = self.search.selected_hit()?;
            let mut f = Focus::of(
                &h.host,
                &h.session_id,
                self.model.row(&h.host, &h.session_id),
            );
            if f.transcript.is_none() && h.host == crate::hosts::LOCAL {
                f.transcript = Some(h.path.clone());
            }
            return Some(f);
        }
        let r = self.model.selected()?;
        Some(Focus::of(&r.host, &r.info.session_id, Some(r)))
    }

    /// Whether rows say which machine they are on: several machines, or
    /// one that is not this one.
    pub fn shows_hosts(&self) -> bool {
        self.hosts.len() > 1 || self.hosts.iter().any(|h| h.label != crate::hosts::LOCAL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_lines_are_sanitized_and_bounded() {
        let hostile = "a\x1b]52;c;ZXZpbA==\x07b\x1b[2Jc\u{202e}d".to_string();
        let p = Preview::new("local", "s", PreviewKind::Screen, &[hostile]);
        assert_eq!(p.lines, ["abcd"]);
        let many: Vec<String> = (0..MAX_PREVIEW_LINES + 7).map(|n| n.to_string()).collect();
        let t = Preview::new("local", "s", PreviewKind::Transcript, &many);
        assert_eq!(t.lines.len(), MAX_PREVIEW_LINES);
        assert_eq!(t.lines[0], "7");
        let s = Preview::new("local", "s", PreviewKind::Screen, &many);
        assert_eq!(s.lines[0], "0");
        let long = "界".repeat(MAX_PREVIEW_LINE_BYTES);
        let p = Preview::new("local", "s", PreviewKind::Screen, &[long]);
        assert!(p.lines[0].len() <= MAX_PREVIEW_LINE_BYTES);
    }

    /// The preview follows the selected row, and in the content search
    /// the selected hit: held as its row says, a transcript from the
    /// hit's path when this machine's dashboard does not list it.
    #[test]
    fn the_preview_follows_the_selected_hit_in_the_search() {
        use crate::ui::model::tests::info;
        use crate::ui::search::tests::hit;
        use ccd_protocol::methods::session::{SearchResult, SessionState};
        let mut v = View::new(false, None, "ctrl-]".into(), &[]);
        v.set_rows(
            "local",
            vec![
                info("listed", "live", Some("busy"), Some("busy"), 5),
                info("other", "dead", None, None, 50),
            ],
        );
        v.model.select_id("local", "other");
        let f = v.focus().unwrap();
        assert_eq!((f.session.as_str(), f.held), ("other", false));
        v.mode = Mode::Search;
        assert_eq!(v.focus(), None, "no hit yet");
        v.search.asked(1, "q", &["local".to_string()]);
        let at = "2026-12-01T10:00:00Z";
        v.search.answer(
            "local",
            1,
            Ok(SearchResult {
                hits: vec![
                    hit("listed", SessionState::Live, 2.0, at, ["", "q", ""]),
                    hit("unlisted", SessionState::Dead, 1.0, at, ["", "q", ""]),
                ],
                ..Default::default()
            }),
        );
        let f = v.focus().unwrap();
        assert_eq!((f.session.as_str(), f.held, f.busy), ("listed", true, true));
        v.search.editing = false;
        let down = ratatui::crossterm::event::KeyEvent::new(
            ratatui::crossterm::event::KeyCode::Down,
            ratatui::crossterm::event::KeyModifiers::NONE,
        );
        v.search.key(&down, 10);
        let f = v.focus().unwrap();
        assert_eq!((f.session.as_str(), f.held), ("unlisted", false));
        assert_eq!(
            f.transcript.as_deref(),
            Some("/home/me/.claude/projects/x/unlisted.jsonl")
        );
        // Back to the list: the selected row again.
        v.mode = Mode::List;
        assert_eq!(v.focus().unwrap().session, "other");
    }

    #[test]
    fn an_unverified_cli_version_is_said_once() {
        let row = |sid: &str, state: &str, version: &str| {
            let mut i = crate::ui::model::tests::info(sid, state, Some("idle"), None, 5);
            i.version = Some(version.into());
            i
        };
        let mut v = View::new(false, None, "ctrl-]".into(), &[]);
        // Verified, or not running: nothing said.
        v.set_rows(
            "local",
            vec![row("a", "live", "2.1.332"), row("b", "dead", "2.1.999")],
        );
        assert_eq!(v.message, None);
        assert!(!v.loading);
        v.set_rows(
            "local",
            vec![row("a", "live", "2.1.332"), row("c", "live", "2.1.999")],
        );
        let m = v.message.clone().expect("the note");
        assert!(
            m.contains("2.1.999") && m.contains("2.1.173, 2.1.332"),
            "{m}"
        );
        assert!(!m.contains("2.1.332,"), "{m}");
        // Once: gone after a key, not said again on the next listing.
        v.message = None;
        v.set_rows(
            "local",
            vec![row("c", "live", "2.1.999"), row("d", "live", "1.0.3")],
        );
        assert_eq!(v.message, None);
    }
}
