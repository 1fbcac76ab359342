//! The dashboard's content search (`/`, issue 55), pure: the query being
//! typed, each machine's answer to `sessions.search` (waiting, its hits,
//! or why it failed), the hits of every machine merged in one order (best
//! first, ties newest first, as `ccd search --host` merges them), the
//! selection among them, and what each key asks for ([`Step`]). No
//! terminal and no socket here: the app sends the query to every machine
//! ([`Step::Ask`]) and goes into a hit ([`Step::Go`]) by the same code as
//! a row of the list.
//!
//! A search has a generation: an answer to an earlier one (a slow
//! machine, a query typed again meanwhile) is dropped, so the hits shown
//! are always those of the query shown.

use super::keys::{action_of, Action};
use super::model::RowKey;
use ccd_protocol::methods::session::SearchResult;
use ccd_protocol::search::SearchHit;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The most hits asked of each machine (`sessions.search`'s `limit`);
/// the merged list holds at most this many per machine shown.
pub const HITS_PER_MACHINE: u32 = 50;

/// The longest query typed, in characters (longer keys are ignored).
pub const MAX_QUERY_CHARS: usize = 256;

/// What a machine said to the search shown.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Asked, not answered yet.
    Pending,
    /// Its hits (already in the merged list); `truncated`: more matched.
    Hits { count: usize, truncated: bool },
    /// Why it could not answer; the other machines' hits still show.
    Failed(String),
}

/// What a key in the search asks of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Handled here (typing, moving) or nothing to do.
    Stay,
    /// Send `query` to every machine as search `generation`.
    Ask { generation: u64, query: String },
    /// Back to the list.
    Leave,
    /// Quit the dashboard.
    Quit,
    /// Do `action` (attach, observe, fork) on this session, as on a row
    /// of the list.
    Go(Action, RowKey),
    /// A key of the list that does nothing on a search hit.
    NotHere(Action),
}

/// The search: the query, the answers, the merged hits, the selection.
#[derive(Debug, Default)]
pub struct Search {
    /// The query as typed (the prompt's text).
    pub query: String,
    /// Typing the query (else moving among the hits).
    pub editing: bool,
    /// The query the hits shown answer (`None`: not searched yet).
    pub asked: Option<String>,
    generation: u64,
    /// Every machine asked, in the dashboard's order, with its answer.
    answers: Vec<(String, Answer)>,
    /// Every machine's hits (`host` set to the machine), best first.
    hits: Vec<SearchHit>,
    selected: usize,
    /// The first hit on screen (scrolling; kept by the renderer).
    pub offset: usize,
}

impl Search {
    /// Opens the prompt (the last query kept, to edit or search again).
    pub fn open(&mut self) {
        self.editing = true;
    }

    /// A key while the search is shown; `page`: how far PgUp/PgDn move.
    pub fn key(&mut self, k: &KeyEvent, page: isize) -> Step {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if self.editing {
            return match k.code {
                KeyCode::Esc => Step::Leave,
                KeyCode::Enter => self.submit(),
                KeyCode::Backspace => {
                    self.query.pop();
                    Step::Stay
                }
                KeyCode::Up => self.step(-1),
                KeyCode::Down => self.step(1),
                KeyCode::Char('u') if ctrl => {
                    self.query.clear();
                    Step::Stay
                }
                KeyCode::Char(c) if !ctrl && !c.is_control() => {
                    if self.query.chars().count() < MAX_QUERY_CHARS {
                        self.query.push(c);
                    }
                    Step::Stay
                }
                _ => Step::Stay,
            };
        }
        let Some(action) = action_of(k) else {
            return Step::Stay;
        };
        match action {
            Action::Up => self.step(-1),
            Action::Down => self.step(1),
            Action::PageUp => self.step(-page),
            Action::PageDown => self.step(page),
            Action::First => {
                self.selected = 0;
                Step::Stay
            }
            Action::Last => {
                self.selected = self.hits.len().saturating_sub(1);
                Step::Stay
            }
            Action::Search => {
                self.editing = true;
                Step::Stay
            }
            // Esc: back to the list (the name filter is not the search's).
            Action::ClearFilter => Step::Leave,
            Action::Quit => Step::Quit,
            Action::Attach | Action::Observe | Action::Fork => match self.selected_hit() {
                Some(h) => Step::Go(action, RowKey::new(&h.host, &h.session_id)),
                None => Step::Stay,
            },
            other => Step::NotHere(other),
        }
    }

    /// Enter in the prompt: a new search of what is typed (nothing for
    /// an empty query).
    fn submit(&mut self) -> Step {
        let query = self.query.trim().to_string();
        if query.is_empty() {
            return Step::Stay;
        }
        self.editing = false;
        self.generation += 1;
        Step::Ask {
            generation: self.generation,
            query,
        }
    }

    fn step(&mut self, by: isize) -> Step {
        let last = self.hits.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(by).min(last);
        Step::Stay
    }

    /// Search `generation` of `query` was sent to `hosts` (each answers
    /// through [`Search::answer`]): the earlier hits go.
    pub fn asked(&mut self, generation: u64, query: &str, hosts: &[String]) {
        self.generation = generation;
        self.asked = Some(query.to_string());
        self.answers = hosts.iter().map(|h| (h.clone(), Answer::Pending)).collect();
        self.hits.clear();
        self.selected = 0;
        self.offset = 0;
    }

    /// `host`'s answer to search `generation`; false (dropped) when it
    /// answers another search or a machine not asked.
    pub fn answer(
        &mut self,
        host: &str,
        generation: u64,
        result: Result<SearchResult, String>,
    ) -> bool {
        if generation != self.generation {
            return false;
        }
        let Some(at) = self.answers.iter().position(|(h, _)| h == host) else {
            return false;
        };
        // The hit under the selection stays selected as others arrive.
        let keep = self
            .selected_hit()
            .map(|h| (h.host.clone(), h.session_id.clone()));
        self.answers[at].1 = match result {
            Ok(r) => {
                let mut hits = r.hits;
                hits.truncate(HITS_PER_MACHINE as usize);
                let count = hits.len();
                for mut h in hits {
                    h.host = host.to_string();
                    self.hits.push(h);
                }
                Answer::Hits {
                    count,
                    truncated: r.truncated,
                }
            }
            Err(why) => Answer::Failed(why),
        };
        self.hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| b.timestamp.cmp(&a.timestamp))
        });
        if let Some((host, sid)) = keep {
            if let Some(n) = self
                .hits
                .iter()
                .position(|h| h.host == host && h.session_id == sid)
            {
                self.selected = n;
            }
        }
        true
    }

    /// Every hit, best first.
    pub fn hits(&self) -> &[SearchHit] {
        &self.hits
    }

    pub fn selected_index(&self) -> Option<usize> {
        (!self.hits.is_empty()).then(|| self.selected.min(self.hits.len() - 1))
    }

    pub fn selected_hit(&self) -> Option<&SearchHit> {
        self.selected_index().and_then(|n| self.hits.get(n))
    }

    /// The machines not answered yet.
    pub fn pending(&self) -> impl Iterator<Item = &str> {
        self.answers
            .iter()
            .filter(|(_, a)| *a == Answer::Pending)
            .map(|(h, _)| h.as_str())
    }

    /// The machines that failed, with why.
    pub fn failed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.answers.iter().filter_map(|(h, a)| match a {
            Answer::Failed(why) => Some((h.as_str(), why.as_str())),
            _ => None,
        })
    }

    /// Whether some machine found more than it answered with.
    pub fn truncated(&self) -> bool {
        self.answers.iter().any(|(_, a)| {
            matches!(
                a,
                Answer::Hits {
                    truncated: true,
                    ..
                }
            )
        })
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use ccd_protocol::methods::session::SessionState;
    use ccd_protocol::search::SearchSnippet;
    use ratatui::crossterm::event::KeyEventKind;

    fn key(code: KeyCode) -> KeyEvent {
        let mut k = KeyEvent::new(code, KeyModifiers::NONE);
        k.kind = KeyEventKind::Press;
        k
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn typed(s: &mut Search, text: &str) {
        for c in text.chars() {
            assert_eq!(s.key(&key(KeyCode::Char(c)), 10), Step::Stay);
        }
    }

    /// A hit for tests.
    pub fn hit(
        sid: &str,
        state: SessionState,
        score: f64,
        at: &str,
        snippet: [&str; 3],
    ) -> SearchHit {
        SearchHit {
            host: "local".into(),
            session_id: sid.into(),
            state,
            folder: Some(format!("/home/me/src/{sid}")),
            path: format!("/home/me/.claude/projects/x/{sid}.jsonl"),
            role: "user".into(),
            timestamp: Some(at.into()),
            offset: 0,
            snippet: SearchSnippet {
                before: snippet[0].into(),
                matched: snippet[1].into(),
                after: snippet[2].into(),
            },
            matches: 1,
            score,
        }
    }

    fn result(hits: Vec<SearchHit>) -> Result<SearchResult, String> {
        Ok(SearchResult {
            hits,
            sessions: 10,
            truncated: false,
            indexed: true,
        })
    }

    fn ids(s: &Search) -> Vec<(String, String)> {
        s.hits()
            .iter()
            .map(|h| (h.host.clone(), h.session_id.clone()))
            .collect()
    }

    #[test]
    fn typing_then_enter_asks_every_machine_and_an_empty_query_asks_nothing() {
        let mut s = Search::default();
        s.open();
        assert_eq!(s.key(&key(KeyCode::Enter), 10), Step::Stay, "nothing typed");
        typed(&mut s, "  auth bugx");
        assert_eq!(s.key(&key(KeyCode::Backspace), 10), Step::Stay);
        // Letters the list binds (q, k, j, /) are text while typing.
        typed(&mut s, " q/k");
        assert_eq!(s.query, "  auth bug q/k");
        assert_eq!(
            s.key(&key(KeyCode::Enter), 10),
            Step::Ask {
                generation: 1,
                query: "auth bug q/k".into()
            }
        );
        assert!(!s.editing);
        // `/` edits the query again; Ctrl-U clears it; Enter is search 2.
        assert_eq!(s.key(&key(KeyCode::Char('/')), 10), Step::Stay);
        assert!(s.editing);
        assert_eq!(s.key(&ctrl('u'), 10), Step::Stay);
        typed(&mut s, "zebra");
        assert_eq!(
            s.key(&key(KeyCode::Enter), 10),
            Step::Ask {
                generation: 2,
                query: "zebra".into()
            }
        );
        // Esc while typing, and Esc on the hits: back to the list.
        s.open();
        assert_eq!(s.key(&key(KeyCode::Esc), 10), Step::Leave);
        s.editing = false;
        assert_eq!(s.key(&key(KeyCode::Esc), 10), Step::Leave);
        // The query is bounded.
        let mut s = Search::default();
        s.open();
        typed(&mut s, &"x".repeat(MAX_QUERY_CHARS + 5));
        assert_eq!(s.query.chars().count(), MAX_QUERY_CHARS);
    }

    #[test]
    fn answers_merge_best_first_late_ones_are_dropped_and_a_failure_is_named() {
        let mut s = Search::default();
        let hosts = ["local".to_string(), "devbox".into(), "far".into()];
        s.asked(1, "auth", &hosts);
        assert_eq!(s.pending().collect::<Vec<_>>(), ["local", "devbox", "far"]);
        let dead = SessionState::Dead;
        assert!(s.answer(
            "local",
            1,
            result(vec![
                hit("a", dead, 2.0, "2026-12-01T10:00:00Z", ["", "auth", ""]),
                hit("b", dead, 1.0, "2026-12-01T10:00:00Z", ["", "auth", ""]),
            ])
        ));
        // Move to b; devbox's better hit arrives: b stays selected.
        s.key(&key(KeyCode::Down), 10);
        assert_eq!(s.selected_hit().unwrap().session_id, "b");
        assert!(s.answer(
            "devbox",
            1,
            result(vec![
                hit("c", dead, 3.0, "2026-12-01T09:00:00Z", ["", "auth", ""]),
                // Same score as a: the newer first.
                hit("d", dead, 2.0, "2026-12-01T11:00:00Z", ["", "auth", ""]),
            ])
        ));
        assert_eq!(
            ids(&s),
            [
                ("devbox".to_string(), "c".to_string()),
                ("devbox".into(), "d".into()),
                ("local".into(), "a".into()),
                ("local".into(), "b".into()),
            ]
        );
        assert_eq!(s.selected_hit().unwrap().session_id, "b");
        assert!(s.answer("far", 1, Err("ssh: connection refused".into())));
        assert_eq!(
            s.failed().collect::<Vec<_>>(),
            [("far", "ssh: connection refused")]
        );
        assert_eq!(s.pending().count(), 0);
        // A late answer to an earlier search, a machine not asked: dropped.
        assert!(!s.answer("local", 0, result(vec![])));
        assert!(!s.answer("nowhere", 1, result(vec![])));
        // A new search starts empty; the old generation's answers drop.
        s.asked(2, "other", &hosts);
        assert!(s.hits().is_empty());
        assert!(!s.answer(
            "devbox",
            1,
            result(vec![hit(
                "c",
                dead,
                3.0,
                "2026-12-01T09:00:00Z",
                ["", "x", ""]
            )])
        ));
        assert!(s.hits().is_empty());
    }

    #[test]
    fn enter_o_and_f_go_into_the_selected_hit_and_list_keys_say_not_here() {
        let mut s = Search::default();
        s.asked(1, "q", &["local".to_string(), "devbox".into()]);
        // No hit yet: Enter does nothing.
        assert_eq!(s.key(&key(KeyCode::Enter), 10), Step::Stay);
        s.answer(
            "devbox",
            1,
            result(vec![
                hit(
                    "x1",
                    SessionState::Live,
                    2.0,
                    "2026-12-01T10:00:00Z",
                    ["", "q", ""],
                ),
                hit(
                    "x2",
                    SessionState::Dead,
                    1.0,
                    "2026-12-01T10:00:00Z",
                    ["", "q", ""],
                ),
            ]),
        );
        assert_eq!(
            s.key(&key(KeyCode::Enter), 10),
            Step::Go(Action::Attach, RowKey::new("devbox", "x1"))
        );
        assert_eq!(s.key(&key(KeyCode::Char('j')), 10), Step::Stay);
        assert_eq!(
            s.key(&key(KeyCode::Char('o')), 10),
            Step::Go(Action::Observe, RowKey::new("devbox", "x2"))
        );
        assert_eq!(
            s.key(&key(KeyCode::Char('f')), 10),
            Step::Go(Action::Fork, RowKey::new("devbox", "x2"))
        );
        // Moves are clamped.
        s.key(&key(KeyCode::PageDown), 10);
        assert_eq!(s.selected_index(), Some(1));
        s.key(&key(KeyCode::PageUp), 10);
        assert_eq!(s.selected_index(), Some(0));
        s.key(&key(KeyCode::Char('G')), 10);
        assert_eq!(s.selected_index(), Some(1));
        assert_eq!(
            s.key(&key(KeyCode::Char('k')), 10),
            Step::NotHere(Action::Kill)
        );
        assert_eq!(s.key(&key(KeyCode::Char('q')), 10), Step::Quit);
        assert_eq!(s.key(&key(KeyCode::Char('x')), 10), Step::Stay);
    }

    #[test]
    fn a_machine_answering_more_than_asked_is_cut_to_the_bound() {
        let mut s = Search::default();
        s.asked(1, "q", &["local".to_string()]);
        let many = (0..HITS_PER_MACHINE + 30)
            .map(|n| {
                hit(
                    &format!("s{n}"),
                    SessionState::Dead,
                    1.0,
                    "2026-12-01T10:00:00Z",
                    ["", "q", ""],
                )
            })
            .collect();
        let mut r = result(many).unwrap();
        r.truncated = true;
        s.answer("local", 1, Ok(r));
        assert_eq!(s.hits().len(), HITS_PER_MACHINE as usize);
        assert!(s.truncated());
    }
}
