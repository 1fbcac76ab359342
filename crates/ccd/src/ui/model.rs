//! The dashboard's state, pure: the rows (sessions as `sessions.list`
//! shows them, each with the machine it is on), their order by what needs
//! the user first across machines, the filter, the selection (kept by
//! host and session id across re-sorts), events applied in place (each to
//! its machine's rows), and when to notify. No terminal and no socket
//! here: unit-tested directly.

use ccd_protocol::methods::events::{Event, EventKind};
use ccd_protocol::methods::session::{
    ActivityStatus, Lifecycle, SessionCost, SessionInfo, SessionState,
};
use std::collections::HashSet;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The most rows the dashboard keeps. Past it, the rows that matter least
/// (the oldest dead sessions: the order below) are dropped, and the header
/// says how many.
pub const MAX_ROWS: usize = 50_000;

/// The most (session, prompt) pairs remembered as notified; the oldest
/// half is forgotten past it.
pub const MAX_NOTIFIED: usize = 4_096;

/// What a session needs from the user, most urgent first: the list's
/// order (then most recent activity first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Attention {
    /// Waiting for permission or a dialog (held or not).
    Waiting,
    /// A turn is running.
    Busy,
    /// Held by ccd, at its prompt (or starting).
    HeldIdle,
    /// Running elsewhere (or its liveness unknown).
    ExternalLive,
    /// No process: by recency.
    Dead,
}

/// A row's identity: the machine (its `--host` label, `local` for this
/// one) and the session id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    pub host: String,
    pub session: String,
}

impl RowKey {
    pub fn new(host: &str, session: &str) -> Self {
        RowKey {
            host: host.to_string(),
            session: session.to_string(),
        }
    }
}

/// One row: the session as its machine's listing shows it, the machine,
/// and when it last changed attention (for the highlight).
#[derive(Debug, Clone)]
pub struct Row {
    pub info: SessionInfo,
    /// The machine's label (`local` for this one).
    pub host: String,
    /// Unix seconds of `last_activity` (for the order), 0 when unknown.
    pub active_at: i64,
}

impl Row {
    pub fn new(host: &str, info: SessionInfo) -> Self {
        let active_at = info
            .last_activity
            .as_deref()
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            .map(|t| t.unix_timestamp())
            .unwrap_or(0);
        Row {
            info,
            host: host.to_string(),
            active_at,
        }
    }

    pub fn key(&self) -> RowKey {
        RowKey::new(&self.host, &self.info.session_id)
    }

    fn is(&self, key: &RowKey) -> bool {
        self.host == key.host && self.info.session_id == key.session
    }

    /// The live session's memory (0 when dead or not measured).
    pub fn memory(&self) -> u64 {
        match (&self.info.state, &self.info.cost) {
            (SessionState::Live, Some(c)) => c.memory_bytes,
            _ => 0,
        }
    }

    /// Whether ccd holds a running process for it (not one that ended:
    /// exited, failed, reaped, discarded, lost).
    pub fn held(&self) -> bool {
        self.info.ccd.as_ref().is_some_and(|c| !c.lifecycle.ended())
    }

    pub fn attention(&self) -> Attention {
        let i = &self.info;
        let lifecycle = i.ccd.as_ref().map(|c| &c.lifecycle);
        if self.held() {
            let permission = i.ccd.as_ref().is_some_and(|c| c.permission.is_some());
            return match lifecycle {
                _ if permission => Attention::Waiting,
                Some(Lifecycle::Waiting | Lifecycle::NeedsAttention | Lifecycle::Trust) => {
                    Attention::Waiting
                }
                Some(Lifecycle::Busy) => Attention::Busy,
                _ if i.status == Some(ActivityStatus::Waiting) => Attention::Waiting,
                _ => Attention::HeldIdle,
            };
        }
        match i.state {
            SessionState::Dead | SessionState::Archived => Attention::Dead,
            _ => match i.status {
                Some(ActivityStatus::Waiting) => Attention::Waiting,
                Some(ActivityStatus::Busy) => Attention::Busy,
                _ => Attention::ExternalLive,
            },
        }
    }

    /// The permission prompt's id, when one is on a held session's screen.
    pub fn prompt(&self) -> Option<&str> {
        self.info
            .ccd
            .as_ref()
            .and_then(|c| c.permission_prompt.as_deref())
    }

    /// What the filter matches against: id, name, title, cwd, state
    /// words, the machine.
    fn matches(&self, needle: &str) -> bool {
        if needle.is_empty() {
            return true;
        }
        let i = &self.info;
        let hay = [
            Some(i.session_id.as_str()),
            i.name.as_deref(),
            i.title.as_deref(),
            i.cwd.as_deref(),
            i.ccd.as_ref().map(|c| c.lifecycle.as_str()),
            Some(self.host.as_str()),
        ];
        hay.iter()
            .flatten()
            .any(|h| h.to_lowercase().contains(needle))
    }
}

/// The rows, ordered, filtered, with a selection.
#[derive(Debug, Default)]
pub struct Model {
    rows: Vec<Row>,
    /// Indices into `rows` of the rows the filter keeps, in order.
    visible: Vec<usize>,
    /// The selected row (kept across re-sorts and reloads).
    selected: Option<RowKey>,
    /// The filter text (lowercased for matching).
    filter: String,
    /// Rows dropped past [`MAX_ROWS`] at the last load.
    pub dropped: usize,
    /// Sessions that started waiting since the dashboard opened and have
    /// not been selected since: highlighted.
    fresh: HashSet<RowKey>,
    notified: Vec<(RowKey, String)>,
    /// Sorted by memory (largest first) instead of by what needs the user.
    by_memory: bool,
}

impl Model {
    /// Replaces every row of `host` (a reload of that machine), keeping
    /// the other machines' rows and the selection.
    pub fn set_rows(&mut self, host: &str, infos: Vec<SessionInfo>) {
        let first_load = !self.rows.iter().any(|r| r.host == host);
        let before: HashSet<RowKey> = self
            .rows
            .iter()
            .filter(|r| r.host == host && r.attention() == Attention::Waiting)
            .map(Row::key)
            .collect();
        self.rows.retain(|r| r.host != host);
        let new: Vec<Row> = infos.into_iter().map(|i| Row::new(host, i)).collect();
        if !first_load {
            for r in &new {
                if r.attention() == Attention::Waiting && !before.contains(&r.key()) {
                    self.fresh.insert(r.key());
                }
            }
        }
        self.rows.extend(new);
        self.resort();
    }

    /// Sorts by attention then recency (or by memory first, largest
    /// first, when asked), applies [`MAX_ROWS`] and the filter, and keeps
    /// the selection (else selects the first row).
    fn resort(&mut self) {
        let by_memory = self.by_memory;
        let memory = |r: &Row| std::cmp::Reverse(if by_memory { r.memory() } else { 0 });
        self.rows.sort_by(|a, b| {
            (
                memory(a),
                a.attention(),
                std::cmp::Reverse(a.active_at),
                &a.info.session_id,
                &a.host,
            )
                .cmp(&(
                    memory(b),
                    b.attention(),
                    std::cmp::Reverse(b.active_at),
                    &b.info.session_id,
                    &b.host,
                ))
        });
        if self.rows.len() > MAX_ROWS {
            self.dropped = self.rows.len() - MAX_ROWS;
            self.rows.truncate(MAX_ROWS);
        } else {
            self.dropped = 0;
        }
        self.refilter();
    }

    fn refilter(&mut self) {
        let needle = self.filter.to_lowercase();
        self.visible = (0..self.rows.len())
            .filter(|&i| self.rows[i].matches(&needle))
            .collect();
        let keep = self
            .selected
            .as_ref()
            .is_some_and(|s| self.visible_rows().any(|r| r.is(s)));
        if !keep {
            self.selected = self.visible.first().map(|&i| self.rows[i].key());
        }
    }

    /// All rows kept (filtered or not).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The rows the filter keeps, in order.
    pub fn visible_rows(&self) -> impl Iterator<Item = &Row> {
        self.visible.iter().map(|&i| &self.rows[i])
    }

    pub fn visible_len(&self) -> usize {
        self.visible.len()
    }

    /// The `n`th visible row.
    pub fn visible_row(&self, n: usize) -> Option<&Row> {
        self.visible.get(n).map(|&i| &self.rows[i])
    }

    pub fn filter(&self) -> &str {
        &self.filter
    }

    pub fn set_filter(&mut self, f: &str) {
        self.filter = f.to_string();
        self.refilter();
    }

    /// The row of `sid` on `host`, filtered or not.
    pub fn row(&self, host: &str, sid: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.host == host && r.info.session_id == sid)
    }

    pub fn selected(&self) -> Option<&Row> {
        let s = self.selected.as_ref()?;
        self.visible_rows().find(|r| r.is(s))
    }

    /// The selected row's position among the visible rows.
    pub fn selected_index(&self) -> Option<usize> {
        let s = self.selected.as_ref()?;
        self.visible_rows().position(|r| r.is(s))
    }

    /// Moves the selection by `delta` rows (clamped).
    pub fn move_selection(&mut self, delta: isize) {
        if self.visible.is_empty() {
            return;
        }
        let at = self.selected_index().unwrap_or(0) as isize;
        let to = (at + delta).clamp(0, self.visible.len() as isize - 1) as usize;
        self.select_index(to);
    }

    pub fn select_index(&mut self, n: usize) {
        if let Some(r) = self.visible_row(n) {
            let key = r.key();
            self.fresh.remove(&key);
            self.selected = Some(key);
        }
    }

    /// Selects `sid` of `host` when a visible row has it.
    pub fn select_id(&mut self, host: &str, sid: &str) -> bool {
        let key = RowKey::new(host, sid);
        let at = self.visible_rows().position(|r| r.is(&key));
        match at {
            Some(n) => {
                self.select_index(n);
                true
            }
            None => false,
        }
    }

    /// Whether the row started waiting since it was last selected.
    pub fn is_fresh(&self, row: &Row) -> bool {
        self.fresh.contains(&row.key())
    }

    /// Applies an event of `host`'s daemon in place (to that machine's
    /// rows). Returns what the caller should do beyond redrawing.
    pub fn apply(&mut self, host: &str, e: &Event) -> Applied {
        let mut out = Applied::default();
        let Some(sid) = e.session.as_deref() else {
            // `events.lagged`: something was missed.
            out.reload = e.kind == EventKind::Lagged;
            return out;
        };
        let key = RowKey::new(host, sid);
        let Some(row) = self.rows.iter_mut().find(|r| r.is(&key)) else {
            // A session the list does not show yet.
            out.reload = true;
            return out;
        };
        let was = row.attention();
        if let Ok(t) = OffsetDateTime::from_unix_timestamp(e.at / 1000) {
            touch(row, t);
        }
        match e.kind {
            EventKind::Status => {
                row.info.status = e.status.as_ref().map(activity_of);
                row.info.waiting_for = e.waiting_for.clone();
            }
            EventKind::Lifecycle => {
                if let (Some(c), Some(s)) = (row.info.ccd.as_mut(), e.status.as_ref()) {
                    c.lifecycle = s.clone();
                    if !matches!(c.lifecycle, Lifecycle::Waiting | Lifecycle::NeedsAttention) {
                        c.permission = None;
                        c.permission_prompt = None;
                    }
                }
                if matches!(e.status, Some(Lifecycle::Exited | Lifecycle::Failed)) {
                    out.reload = true;
                }
            }
            EventKind::Attention => {
                if let Some(c) = row.info.ccd.as_mut() {
                    if e.reason.as_deref() == Some("permission") {
                        c.permission = Some(
                            [e.tool.as_deref(), e.detail.as_deref()]
                                .into_iter()
                                .flatten()
                                .collect::<Vec<_>>()
                                .join(" "),
                        );
                        c.permission_prompt = e.prompt.clone();
                    }
                    c.attention = e.reason.clone();
                } else {
                    row.info.status = Some(ActivityStatus::Waiting);
                }
            }
            EventKind::Context => {
                row.info.context_tokens = e.context_tokens.or(row.info.context_tokens);
                row.info.context_percent = e.context_percent.or(row.info.context_percent);
            }
            EventKind::Exited | EventKind::Disappeared => {
                row.info.state = SessionState::Dead;
                row.info.status = None;
                row.info.pid = None;
                if let Some(c) = row.info.ccd.as_mut() {
                    c.lifecycle = Lifecycle::Exited;
                }
                out.reload = true;
            }
            _ => out.reload = true,
        }
        let now = row.attention();
        if now == Attention::Waiting && was != Attention::Waiting {
            let prompt_key = row
                .prompt()
                .map(str::to_string)
                .unwrap_or_else(|| format!("at:{}", e.at));
            out.notify = self.first_notice(&key, &prompt_key);
            if self.selected.as_ref() != Some(&key) {
                self.fresh.insert(key.clone());
            }
        } else if e.kind == EventKind::Attention {
            // A new prompt on a session already waiting (another tool).
            if let Some(p) = e.prompt.as_deref() {
                out.notify = self.first_notice(&key, p);
            }
        }
        if now != Attention::Waiting {
            self.fresh.remove(&key);
        }
        out.preview = self.selected.as_ref() == Some(&key);
        self.resort();
        out
    }

    /// True the first time (`sid`, `prompt`) is seen: at most one notice
    /// per prompt.
    fn first_notice(&mut self, key: &RowKey, prompt: &str) -> bool {
        if self.notified.iter().any(|(k, p)| k == key && p == prompt) {
            return false;
        }
        if self.notified.len() >= MAX_NOTIFIED {
            self.notified.drain(..MAX_NOTIFIED / 2);
        }
        self.notified.push((key.clone(), prompt.to_string()));
        true
    }

    /// Sort by memory (`true`) or by what needs the user.
    pub fn sort_by_memory(&mut self, on: bool) {
        self.by_memory = on;
        self.resort();
    }

    pub fn sorted_by_memory(&self) -> bool {
        self.by_memory
    }

    /// Puts each live row of `host` its cost from `costs` (by pid), as
    /// that machine's daemon sampled it; a live row missing from it keeps
    /// its last figure.
    pub fn set_costs(&mut self, host: &str, costs: &std::collections::HashMap<u32, SessionCost>) {
        for r in &mut self.rows {
            if r.host == host && r.info.state == SessionState::Live {
                if let Some(c) = r.info.pid.and_then(|p| costs.get(&p)) {
                    r.info.cost = Some(c.clone());
                }
            }
        }
        if self.by_memory {
            self.resort();
        }
    }

    /// The memory of every live session with a figure, and how many.
    pub fn memory_total(&self) -> (u64, usize) {
        self.rows
            .iter()
            .filter(|r| r.info.state == SessionState::Live)
            .filter_map(|r| r.info.cost.as_ref())
            .fold((0, 0), |(sum, n), c| (sum + c.memory_bytes, n + 1))
    }

    /// What the sessions cost in tokens and dollars (those with a `usage`:
    /// every one the machine's daemon has read), on every machine and on
    /// each (`hosts` in order); `None` when no row has a figure.
    pub fn usage_totals<'a>(
        &self,
        hosts: impl IntoIterator<Item = &'a str>,
    ) -> Option<UsageTotals> {
        let mut total = UsageSum::default();
        let mut by_host: Vec<(String, UsageSum)> = hosts
            .into_iter()
            .map(|h| (h.to_string(), UsageSum::default()))
            .collect();
        for r in &self.rows {
            let Some(u) = r.info.usage.as_ref() else {
                continue;
            };
            total.add(u);
            if let Some((_, s)) = by_host.iter_mut().find(|(h, _)| *h == r.host) {
                s.add(u);
            }
        }
        (total.sessions > 0).then_some(UsageTotals { total, by_host })
    }

    /// Counts per attention group, for the header.
    pub fn counts(&self) -> [usize; 5] {
        let mut c = [0; 5];
        for r in &self.rows {
            c[r.attention() as usize] += 1;
        }
        c
    }
}

/// Tokens and dollars added over sessions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageSum {
    pub sessions: usize,
    pub tokens: u64,
    pub cost_usd: f64,
    /// A session's model is not priced: the dollars are a lower bound.
    pub unpriced: bool,
}

impl UsageSum {
    fn add(&mut self, u: &ccd_protocol::methods::session::SessionUsage) {
        self.sessions += 1;
        self.tokens += u.total_tokens;
        self.cost_usd += u.cost_usd;
        self.unpriced |= !u.unpriced.is_empty();
    }
}

/// [`Model::usage_totals`]: on every machine, and on each.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageTotals {
    pub total: UsageSum,
    pub by_host: Vec<(String, UsageSum)>,
}

fn touch(row: &mut Row, t: OffsetDateTime) {
    if t.unix_timestamp() > row.active_at {
        row.active_at = t.unix_timestamp();
        row.info.last_activity = t.format(&Rfc3339).ok();
    }
}

fn activity_of(s: &Lifecycle) -> ActivityStatus {
    match s {
        Lifecycle::Idle => ActivityStatus::Idle,
        Lifecycle::Busy => ActivityStatus::Busy,
        Lifecycle::Waiting => ActivityStatus::Waiting,
        _ => ActivityStatus::Other,
    }
}

/// What an applied event asks of the caller.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// The list may be missing or keeping sessions: load it again.
    pub reload: bool,
    /// Ring the bell / send the desktop notification (once per prompt).
    pub notify: bool,
    /// The event is about the selected session: refresh its preview.
    pub preview: bool,
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use ccd_protocol::methods::session::OwnedInfo;

    /// A session row for tests: `state`, `status`, held with `lifecycle`.
    pub fn info(
        sid: &str,
        state: &str,
        status: Option<&str>,
        lifecycle: Option<&str>,
        ago_s: i64,
    ) -> SessionInfo {
        let at = (OffsetDateTime::now_utc() - time::Duration::seconds(ago_s))
            .format(&Rfc3339)
            .unwrap();
        let mut i: SessionInfo = serde_json::from_value(serde_json::json!({
            "session_id": sid, "state": state, "pid": null, "cwd": "/home/me/p", "status": status,
            "waiting_for": null, "kind": null, "name": null, "version": null,
            "started_at": null, "last_activity": at, "title": format!("title of {sid}"), "model": null,
            "context_tokens": null, "context_percent": 12.0, "context_window": null,
            "transcript": null, "transcript_bytes": null, "writers": [],
            "several_writers": false, "ccd": null
        }))
        .unwrap();
        if let Some(l) = lifecycle {
            i.ccd = Some(OwnedInfo {
                holder: format!("h-{sid}"),
                lifecycle: l.into(),
                attention: None,
                permission: None,
                permission_prompt: None,
                stated_context_window: None,
                permission_mode: None,
                attached: 0,
                exit_code: None,
                pinned: false,
                clients: vec![],
                earlier: vec![],
            });
        }
        i
    }

    fn now_ms() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp() * 1000
    }

    fn order(m: &Model) -> Vec<String> {
        m.visible_rows()
            .map(|r| r.info.session_id.clone())
            .collect()
    }

    fn sample() -> Model {
        let mut m = Model::default();
        m.set_rows(
            "local",
            vec![
                info("dead-new", "dead", None, None, 10),
                info("dead-old", "dead", None, None, 9000),
                info("ext-idle", "live", Some("idle"), None, 500),
                info("held-idle", "live", Some("idle"), Some("idle"), 400),
                info("held-busy", "live", Some("busy"), Some("busy"), 300),
                info("ext-wait", "live", Some("waiting"), None, 200),
            ],
        );
        m
    }

    #[test]
    fn a_lost_session_is_dead_not_held_and_says_lost() {
        let r = Row::new("local", info("l", "dead", None, Some("lost"), 5));
        assert!(!r.held(), "lost: no process holds it");
        assert!(matches!(r.attention(), Attention::Dead));
        assert!(r.matches("lost"), "its word is found by the filter");
    }

    #[test]
    fn an_ended_session_is_not_held_whatever_ended_it() {
        for how in ["exited", "failed", "reaped", "discarded", "lost"] {
            let r = Row::new("local", info("e", "dead", None, Some(how), 5));
            assert!(!r.held(), "{how}: no process holds it");
            assert!(matches!(r.attention(), Attention::Dead), "{how}");
        }
        let r = Row::new("local", info("h", "live", Some("idle"), Some("idle"), 5));
        assert!(r.held());
    }

    #[test]
    fn ordered_by_what_needs_the_user_first_then_recency() {
        let m = sample();
        assert_eq!(
            order(&m),
            [
                "ext-wait",
                "held-busy",
                "held-idle",
                "ext-idle",
                "dead-new",
                "dead-old"
            ]
        );
        assert_eq!(m.counts(), [1, 1, 1, 1, 2]);
    }

    #[test]
    fn a_session_that_starts_waiting_moves_up_is_highlighted_and_notifies_once() {
        let mut m = sample();
        m.select_id("local", "held-idle");
        let mut e = Event::new(EventKind::Status, Some("ext-idle".into()), now_ms());
        e.status = Some("waiting".into());
        let a = m.apply("local", &e);
        assert!(a.notify && !a.reload && !a.preview);
        assert_eq!(order(&m)[..2], ["ext-idle", "ext-wait"]);
        assert!(m.is_fresh(&Row::new("local", info("ext-idle", "live", None, None, 0))));
        // The selection stays on its session.
        assert_eq!(m.selected().unwrap().info.session_id, "held-idle");
        // The same prompt again: no second notice.
        let a = m.apply("local", &e);
        assert!(!a.notify);
        // Selecting it clears the highlight.
        m.select_id("local", "ext-idle");
        assert!(!m.is_fresh(&Row::new("local", info("ext-idle", "live", None, None, 0))));
        // Back to idle: down again.
        e.status = Some("idle".into());
        m.apply("local", &e);
        assert_eq!(order(&m)[0], "ext-wait");
    }

    #[test]
    fn a_permission_prompt_on_a_held_session_is_noticed_once_per_prompt() {
        let mut m = sample();
        let mut e = Event::new(EventKind::Attention, Some("held-idle".into()), now_ms());
        e.reason = Some("permission".into());
        e.tool = Some("Bash command".into());
        e.detail = Some("npm test".into());
        e.prompt = Some("p1".into());
        assert!(m.apply("local", &e).notify);
        assert_eq!(order(&m)[0], "held-idle");
        assert_eq!(m.visible_row(0).unwrap().prompt(), Some("p1"));
        assert!(!m.apply("local", &e).notify);
        e.prompt = Some("p2".into());
        assert!(
            m.apply("local", &e).notify,
            "another prompt is another notice"
        );
        let mut l = Event::new(EventKind::Lifecycle, Some("held-idle".into()), now_ms());
        l.status = Some("busy".into());
        m.apply("local", &l);
        assert_eq!(order(&m)[..3], ["ext-wait", "held-idle", "held-busy"]);
        assert_eq!(m.visible_row(1).unwrap().prompt(), None);
    }

    #[test]
    fn the_filter_narrows_and_keeps_or_moves_the_selection() {
        let mut m = sample();
        m.select_id("local", "dead-old");
        m.set_filter("HELD");
        assert_eq!(order(&m), ["held-busy", "held-idle"]);
        assert_eq!(m.selected().unwrap().info.session_id, "held-busy");
        m.set_filter("");
        assert_eq!(m.visible_len(), 6);
        m.set_filter("no such thing");
        assert!(m.selected().is_none());
        m.move_selection(1);
        assert!(m.selected().is_none());
    }

    #[test]
    fn selection_moves_clamped_and_survives_a_reload() {
        let mut m = sample();
        m.move_selection(-3);
        assert_eq!(m.selected_index(), Some(0));
        m.move_selection(100);
        assert_eq!(m.selected_index(), Some(5));
        m.select_id("local", "held-idle");
        let mut rows = vec![info("new-one", "live", Some("busy"), Some("busy"), 1)];
        rows.extend(sample().rows.into_iter().map(|r| r.info));
        m.set_rows("local", rows);
        assert_eq!(m.selected().unwrap().info.session_id, "held-idle");
    }

    #[test]
    fn unknown_sessions_and_lag_ask_for_a_reload() {
        let mut m = sample();
        assert!(
            m.apply(
                "local",
                &Event::new(EventKind::Appeared, Some("zzz".into()), 1)
            )
            .reload
        );
        assert!(
            m.apply("local", &Event::new(EventKind::Lagged, None, 1))
                .reload
        );
        let a = m.apply(
            "local",
            &Event::new(EventKind::Exited, Some("held-busy".into()), now_ms()),
        );
        assert!(a.reload);
        // The most recent dead session: first of the dead.
        assert_eq!(order(&m)[3..], ["held-busy", "dead-new", "dead-old"]);
    }

    #[test]
    fn rows_past_the_bound_are_dropped_least_urgent_first() {
        let mut m = Model::default();
        let mut rows: Vec<SessionInfo> = (0..MAX_ROWS + 10)
            .map(|n| info(&format!("d{n:06}"), "dead", None, None, n as i64))
            .collect();
        rows.push(info("w", "live", Some("waiting"), None, 99_999_999));
        m.set_rows("local", rows);
        assert_eq!(m.len(), MAX_ROWS);
        assert_eq!(m.dropped, 11);
        assert_eq!(m.visible_row(0).unwrap().info.session_id, "w");
        assert_eq!(m.visible_row(1).unwrap().info.session_id, "d000000");
    }

    fn cost(mib: u64) -> SessionCost {
        serde_json::from_value(serde_json::json!({
            "memory_bytes": mib << 20, "memory_kind": "pss", "processes": 1,
            "measured_at": "2026-12-01T12:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn sorting_by_memory_puts_the_biggest_live_session_first_and_costs_update_in_place() {
        let mut rows = vec![
            info("small", "live", Some("idle"), Some("idle"), 10),
            info("big", "live", Some("idle"), None, 900),
            info("waiting", "live", Some("waiting"), None, 5),
            info("dead", "dead", None, None, 1),
        ];
        for (n, r) in rows.iter_mut().enumerate() {
            r.pid = Some(100 + n as u32);
        }
        rows[0].cost = Some(cost(100));
        rows[1].cost = Some(cost(3000));
        rows[2].cost = Some(cost(50));
        let mut m = Model::default();
        m.set_rows("local", rows);
        assert_eq!(order(&m), ["waiting", "small", "big", "dead"]);
        assert_eq!(m.memory_total(), (3150 << 20, 3));
        m.sort_by_memory(true);
        assert_eq!(order(&m), ["big", "small", "waiting", "dead"]);
        // A fresh sample re-sorts: `waiting` grew past them all.
        let costs = std::collections::HashMap::from([(102u32, cost(5000)), (100, cost(90))]);
        m.set_costs("local", &costs);
        assert_eq!(order(&m), ["waiting", "big", "small", "dead"]);
        assert_eq!(m.memory_total(), ((5000 + 3000 + 90) << 20, 3));
        m.sort_by_memory(false);
        assert_eq!(order(&m)[0], "waiting");
    }

    #[test]
    fn notices_are_bounded() {
        let mut m = Model::default();
        for n in 0..MAX_NOTIFIED * 3 {
            assert!(m.first_notice(&RowKey::new("local", "s"), &n.to_string()));
        }
        assert!(m.notified.len() <= MAX_NOTIFIED);
    }

    #[test]
    fn two_machines_are_one_list_each_reloaded_and_evented_on_its_own() {
        let mut m = Model::default();
        m.set_rows(
            "local",
            vec![info("same-id", "live", Some("idle"), Some("idle"), 50)],
        );
        m.set_rows(
            "devbox",
            vec![
                info("same-id", "live", Some("idle"), Some("idle"), 10),
                info("far-dead", "dead", None, None, 5),
            ],
        );
        // The same id on two machines is two rows; the order is one
        // order over both (held idle by recency, then dead).
        let keys: Vec<(String, String)> = m
            .visible_rows()
            .map(|r| (r.host.clone(), r.info.session_id.clone()))
            .collect();
        assert_eq!(
            keys,
            [
                ("devbox".to_string(), "same-id".to_string()),
                ("local".into(), "same-id".into()),
                ("devbox".into(), "far-dead".into()),
            ]
        );
        m.select_id("local", "same-id");
        // An event of devbox moves devbox's row only, on top of the list;
        // the selection stays on this machine's row.
        let mut e = Event::new(EventKind::Status, Some("same-id".into()), now_ms());
        e.status = Some("waiting".into());
        let a = m.apply("devbox", &e);
        assert!(a.notify && !a.preview, "{a:?}");
        let first = m.visible_row(0).unwrap();
        assert_eq!(
            (first.host.as_str(), first.attention()),
            ("devbox", Attention::Waiting)
        );
        let here = m.selected().unwrap();
        assert_eq!(
            (here.host.as_str(), here.attention()),
            ("local", Attention::HeldIdle)
        );
        assert!(m.is_fresh(first) && !m.is_fresh(here));
        // Reloading devbox replaces its rows alone.
        m.set_rows(
            "devbox",
            vec![info("new-there", "live", Some("idle"), None, 1)],
        );
        let hosts: Vec<(String, String)> = m
            .visible_rows()
            .map(|r| (r.host.clone(), r.info.session_id.clone()))
            .collect();
        assert_eq!(hosts.len(), 2, "{hosts:?}");
        assert!(hosts.contains(&("local".into(), "same-id".into())));
        assert!(hosts.contains(&("devbox".into(), "new-there".into())));
        assert_eq!(m.selected().unwrap().host, "local");
        // The filter matches the machine's name.
        m.set_filter("devbox");
        assert_eq!(m.visible_len(), 1);
        // Costs of a machine go to its rows only (pids are per machine).
        m.set_filter("");
        let mut mine = info("p1", "live", Some("idle"), None, 1);
        mine.pid = Some(7);
        let mut theirs = info("p2", "live", Some("idle"), None, 1);
        theirs.pid = Some(7);
        m.set_rows("local", vec![mine]);
        m.set_rows("devbox", vec![theirs]);
        let costs = [(7u32, cost(100))].into_iter().collect();
        m.set_costs("devbox", &costs);
        for r in m.visible_rows() {
            assert_eq!(r.memory() > 0, r.host == "devbox", "{}", r.host);
        }
    }
}
