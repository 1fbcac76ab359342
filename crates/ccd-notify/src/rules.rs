//! The rules engine, sans IO: [`Rules`] folds [`Input`]s into the
//! notifications due. No clock (every call says `now`, unix ms), no I/O,
//! no task: its owner feeds it, calls [`Rules::tick`] at
//! [`Rules::next_due`] and hands what comes out to its sinks.
//!
//! The rules, in order:
//! 1. **Reasons**: only the reasons the config lists.
//! 2. **One per dialog**: a permission dialog with a prompt id notifies
//!    once, however often it is seen again — cleared and shown again
//!    included (a repaint, a flicker of the classification) — until the
//!    session works again (`busy`): the id is made of the dialog's text, so
//!    the same command asked in a later turn is a new dialog (the ids kept
//!    are bounded, [`PROMPTS_KEPT`] a session); a dialog without one (the
//!    registry's wait of a session ccd does not hold), and a question,
//!    once until the session moves on (its status leaves `waiting`, or the
//!    dialog is cleared).
//! 3. **Quiet delay**: a notification waits `quiet_secs`; if meanwhile the
//!    dialog is cleared or the session moves on (busy again after a turn,
//!    out of `waiting`), it is dropped unsent.
//! 4. **Focus**: none for a session whose attached client's terminal is
//!    focused, unless `notify_when_focused` (checked when it is due; fed
//!    by [`Input::Focus`], from the `session.focus` events: the daemon's
//!    `events::focus`).
//! 5. **Rate bound**: at most `rate_per_minute` in any 60 s (0: no bound);
//!    the excess is dropped and counted, and one [`Reason::Dropped`]
//!    summary is sent when the bound allows again.
//! 6. **turn_done**: a turn that ends (busy → idle) after at least
//!    `turn_done_after_secs` busy.
//! 7. **Withdrawal** (for a sink that can take a notification back, the
//!    desktop; asked for with [`Rules::withdrawing`]): a permission or
//!    question notification that was sent no longer applies once the
//!    session works again or rests (`busy`, `idle`: answered, wherever),
//!    ended, was stopped or is gone; [`Rules::take_withdrawals`] says which
//!    sessions' to take back. A dialog cleared and shown again (a flicker)
//!    does not withdraw: only the session's status moving on does.

use crate::config::{NotifyConfig, Reason};
use crate::input::{Activity, Input};
use crate::notification::Notification;
use std::collections::{HashMap, VecDeque};

/// Prompt ids remembered a session for the dedupe (oldest forgotten
/// first).
pub const PROMPTS_KEPT: usize = 64;

/// The rate bound's window.
const WINDOW_MS: i64 = 60_000;

#[derive(Debug, Default)]
struct SessionFacts {
    cwd: Option<String>,
    title: Option<String>,
    /// When the current busy stretch started.
    busy_since: Option<i64>,
    /// A dialog (without a prompt id) or question was notified and the
    /// session has not moved on since.
    waiting_told: bool,
    focused: bool,
    second_writer_told: bool,
    /// Prompt ids notified since the session last worked (oldest first).
    prompts_told: VecDeque<String>,
    /// A permission or question notification was sent and still applies.
    open: bool,
}

/// A session whose sent permission or question notifications no longer
/// apply (rule 7): the sink takes them back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawal {
    pub machine: String,
    pub session: String,
}

#[derive(Debug)]
struct Pending {
    due: i64,
    n: Notification,
}

/// The rules for every session one observer sees (see the module doc).
#[derive(Debug)]
pub struct Rules {
    cfg: NotifyConfig,
    machine: String,
    sessions: HashMap<String, SessionFacts>,
    pending: Vec<Pending>,
    /// When each notification of the last minute was sent.
    sent: VecDeque<i64>,
    /// Dropped by the rate bound since the last summary.
    dropped: u64,
    /// Whether withdrawals are kept for [`Rules::take_withdrawals`].
    withdrawing: bool,
    /// Sessions whose notifications no longer apply, not taken yet.
    withdrawals: Vec<Withdrawal>,
}

impl Rules {
    /// Rules by `cfg` for the sessions of `machine` (named in every
    /// notification).
    pub fn new(cfg: NotifyConfig, machine: impl Into<String>) -> Self {
        Self {
            cfg,
            machine: machine.into(),
            sessions: HashMap::new(),
            pending: Vec::new(),
            sent: VecDeque::new(),
            dropped: 0,
            withdrawing: false,
            withdrawals: Vec::new(),
        }
    }

    /// These rules also say which sent notifications no longer apply
    /// (rule 7); the owner takes them with [`Rules::take_withdrawals`]
    /// after each `observe` and `tick` (each session is in it once at
    /// most, so it holds at most one entry a session seen).
    pub fn withdrawing(mut self) -> Self {
        self.withdrawing = true;
        self
    }

    /// The sessions whose permission or question notifications no longer
    /// apply since the last call (see [`Rules::withdrawing`]).
    pub fn take_withdrawals(&mut self) -> Vec<Withdrawal> {
        std::mem::take(&mut self.withdrawals)
    }

    /// Rule 7: `session`'s sent notifications no longer apply.
    fn withdraw(&mut self, session: &str) {
        let Some(f) = self.sessions.get_mut(session) else {
            return;
        };
        if !std::mem::take(&mut f.open) || !self.withdrawing {
            return;
        }
        tracing::debug!(session, "a sent notification no longer applies");
        self.withdrawals.push(Withdrawal {
            machine: self.machine.clone(),
            session: session.to_string(),
        });
    }

    /// The config the rules follow.
    pub fn config(&self) -> &NotifyConfig {
        &self.cfg
    }

    /// How many notifications the rate bound dropped that no summary has
    /// told yet.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Folds `input`, seen at `now` (unix ms); returns what is due now.
    pub fn observe(&mut self, input: Input, now: i64) -> Vec<Notification> {
        let sid = input.session().to_string();
        match input {
            Input::Seen { cwd, title, .. } => {
                let f = self.sessions.entry(sid).or_default();
                if cwd.is_some() {
                    f.cwd = cwd;
                }
                if title.is_some() {
                    f.title = title;
                }
            }
            Input::Status { activity, .. } => {
                let f = self.sessions.entry(sid.clone()).or_default();
                if activity != Activity::Waiting {
                    f.waiting_told = false;
                    self.cancel(&sid, |r| matches!(r, Reason::Permission | Reason::Question));
                }
                if matches!(activity, Activity::Busy | Activity::Idle) {
                    self.withdraw(&sid);
                }
                let f = self.sessions.entry(sid.clone()).or_default();
                match activity {
                    Activity::Busy => {
                        if f.busy_since.is_none() {
                            f.busy_since = Some(now);
                        }
                        f.prompts_told.clear();
                        self.cancel(&sid, |r| r == Reason::TurnDone);
                    }
                    Activity::Idle => {
                        if let Some(since) = f.busy_since.take() {
                            let long = now - since
                                >= (self.cfg.turn_done_after_secs as i64).saturating_mul(1000);
                            if long {
                                let n = self.make(&sid, Reason::TurnDone, now);
                                self.enqueue(n, now);
                            }
                        }
                    }
                    // Waiting for a person interrupts the turn; the busy
                    // stretch goes on after the answer.
                    Activity::Waiting | Activity::Other => {}
                }
            }
            Input::Permission {
                prompt,
                tool,
                detail,
                options,
                ..
            } => {
                if let Some(p) = &prompt {
                    let f = self.sessions.entry(sid.clone()).or_default();
                    if f.prompts_told.contains(p) {
                        return self.tick(now);
                    }
                    f.prompts_told.push_back(p.clone());
                    if f.prompts_told.len() > PROMPTS_KEPT {
                        f.prompts_told.pop_front();
                    }
                } else {
                    let f = self.sessions.entry(sid.clone()).or_default();
                    if f.waiting_told {
                        return self.tick(now);
                    }
                    f.waiting_told = true;
                }
                let mut n = self.make(&sid, Reason::Permission, now);
                n.tool = tool;
                n.detail = detail;
                n.options = options;
                n.prompt_id = prompt;
                self.enqueue(n, now);
            }
            Input::Question { detail, .. } => {
                let f = self.sessions.entry(sid.clone()).or_default();
                if !f.waiting_told {
                    f.waiting_told = true;
                    let mut n = self.make(&sid, Reason::Question, now);
                    n.detail = detail;
                    self.enqueue(n, now);
                }
            }
            Input::Cleared { .. } => {
                if let Some(f) = self.sessions.get_mut(&sid) {
                    f.waiting_told = false;
                }
                self.cancel(&sid, |r| matches!(r, Reason::Permission | Reason::Question));
            }
            Input::Ended { failed, detail, .. } => {
                self.cancel(&sid, Reason::answerable);
                self.withdraw(&sid);
                let r = if failed {
                    Reason::Failed
                } else {
                    Reason::Exited
                };
                let mut n = self.make(&sid, r, now);
                n.detail = detail;
                self.enqueue(n, now);
            }
            Input::SecondWriter { pids, .. } => {
                let f = self.sessions.entry(sid.clone()).or_default();
                if !f.second_writer_told {
                    f.second_writer_told = true;
                    let mut n = self.make(&sid, Reason::SecondWriter, now);
                    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
                    n.detail = Some(format!("written by pids {}", pids.join(", ")));
                    self.enqueue(n, now);
                }
            }
            Input::Reaped { budget, .. } => {
                self.cancel(&sid, Reason::answerable);
                self.withdraw(&sid);
                let r = if budget {
                    Reason::Budget
                } else {
                    Reason::Reaped
                };
                let n = self.make(&sid, r, now);
                self.enqueue(n, now);
            }
            Input::Gone { .. } => {
                self.cancel(&sid, Reason::answerable);
                self.withdraw(&sid);
                // Forgotten (the facts of sessions long gone would pile up
                // in a daemon that runs for weeks), unless a notification
                // of it is pending: then what names it stays, what it was
                // doing goes. A later event names it again (`exited` and
                // `reaped` carry the folder).
                if self.pending.iter().any(|p| p.n.session == sid) {
                    if let Some(f) = self.sessions.get_mut(&sid) {
                        f.busy_since = None;
                        f.waiting_told = false;
                        f.second_writer_told = false;
                        f.focused = false;
                    }
                } else {
                    self.sessions.remove(&sid);
                }
            }
            Input::Focus { focused, .. } => {
                self.sessions.entry(sid).or_default().focused = focused;
            }
        }
        self.tick(now)
    }

    /// What is due by `now`: notifications whose quiet delay ended, and the
    /// rate bound's summary once it allows one.
    pub fn tick(&mut self, now: i64) -> Vec<Notification> {
        let mut out = Vec::new();
        let mut due = Vec::new();
        self.pending.retain(|p| {
            if p.due <= now {
                due.push(p.n.clone());
                false
            } else {
                true
            }
        });
        for n in due {
            let focused = self.sessions.get(&n.session).is_some_and(|f| f.focused);
            if focused && !self.cfg.notify_when_focused {
                tracing::debug!(session = %n.session, reason = %n.reason, "not notified: focused");
                continue;
            }
            if self.take_slot(now) {
                if matches!(n.reason, Reason::Permission | Reason::Question) {
                    if let Some(f) = self.sessions.get_mut(&n.session) {
                        f.open = true;
                    }
                }
                out.push(n);
            } else {
                self.dropped += 1;
                tracing::debug!(session = %n.session, reason = %n.reason, dropped = self.dropped, "rate bound");
            }
        }
        if self.dropped > 0 && self.take_slot(now) {
            let detail = format!(
                "{} notification{} dropped by the rate bound ({} a minute)",
                self.dropped,
                if self.dropped == 1 { "" } else { "s" },
                self.cfg.rate_per_minute
            );
            out.push(Notification {
                machine: self.machine.clone(),
                session: String::new(),
                title: "ccd".into(),
                cwd: None,
                reason: Reason::Dropped,
                tool: None,
                detail: Some(detail),
                prompt_id: None,
                options: None,
                link: None,
                at: now,
            });
            self.dropped = 0;
        }
        out
    }

    /// When [`Rules::tick`] next has something to do (unix ms), if ever.
    pub fn next_due(&self) -> Option<i64> {
        let pending = self.pending.iter().map(|p| p.due).min();
        let summary = (self.dropped > 0)
            .then(|| self.sent.front().map(|t| t + WINDOW_MS))
            .flatten();
        match (pending, summary) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn take_slot(&mut self, now: i64) -> bool {
        while self.sent.front().is_some_and(|t| *t <= now - WINDOW_MS) {
            self.sent.pop_front();
        }
        let bound = self.cfg.rate_per_minute as usize;
        if bound != 0 && self.sent.len() >= bound {
            return false;
        }
        self.sent.push_back(now);
        true
    }

    fn cancel(&mut self, session: &str, which: impl Fn(Reason) -> bool) {
        self.pending.retain(|p| {
            let gone = p.n.session == session && which(p.n.reason);
            if gone {
                tracing::debug!(session, reason = %p.n.reason, "not notified: answered or moved on within the quiet delay");
            }
            !gone
        });
    }

    fn enqueue(&mut self, n: Notification, now: i64) {
        if !self.cfg.wants(n.reason) {
            return;
        }
        let due = now.saturating_add((self.cfg.quiet_secs as i64).saturating_mul(1000));
        self.pending.push(Pending { due, n });
    }

    fn make(&self, session: &str, reason: Reason, now: i64) -> Notification {
        let f = self.sessions.get(session);
        let cwd = f.and_then(|f| f.cwd.clone());
        let title = f
            .and_then(|f| f.title.clone())
            .or_else(|| {
                cwd.as_deref()
                    .and_then(|c| std::path::Path::new(c).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| session.chars().take(8).collect());
        // The web page's own route of a session (`#/s/<sid>`, see
        // ccd-web's app.js); no token: the page asks for its login.
        let link = self
            .cfg
            .web_public_url
            .as_deref()
            .map(|u| format!("{}/#/s/{session}", u.trim_end_matches('/')));
        Notification {
            machine: self.machine.clone(),
            session: session.to_string(),
            title,
            cwd,
            reason,
            tool: None,
            detail: None,
            prompt_id: None,
            options: None,
            link,
            at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "9b1d4c2e-7a3f-4e8b-b5d6-1c0e9f8a7b6d";

    fn cfg() -> NotifyConfig {
        NotifyConfig {
            quiet_secs: 0,
            rate_per_minute: 0,
            turn_done_after_secs: 30,
            ..NotifyConfig::default()
        }
    }

    fn permission(prompt: Option<&str>) -> Input {
        Input::Permission {
            session: S.into(),
            prompt: prompt.map(String::from),
            tool: Some("Bash command".into()),
            detail: Some("echo hi".into()),
            options: Some(vec!["Yes".into(), "No".into()]),
        }
    }

    fn status(a: Activity) -> Input {
        Input::Status {
            session: S.into(),
            activity: a,
        }
    }

    fn reasons(v: &[Notification]) -> Vec<Reason> {
        v.iter().map(|n| n.reason).collect()
    }

    #[test]
    fn each_reason_notifies_with_what_names_the_session() {
        let mut r = Rules::new(cfg(), "box");
        assert!(r
            .observe(
                Input::Seen {
                    session: S.into(),
                    cwd: Some("/home/me/proj".into()),
                    title: None
                },
                0
            )
            .is_empty());
        let n = r.observe(permission(Some("p1")), 1);
        assert_eq!(reasons(&n), [Reason::Permission]);
        assert_eq!(n[0].machine, "box");
        assert_eq!(n[0].title, "proj");
        assert_eq!(n[0].cwd.as_deref(), Some("/home/me/proj"));
        assert_eq!(n[0].tool.as_deref(), Some("Bash command"));
        assert_eq!(n[0].detail.as_deref(), Some("echo hi"));
        assert_eq!(n[0].prompt_id.as_deref(), Some("p1"));
        assert_eq!(n[0].at, 1);
        r.observe(Input::Cleared { session: S.into() }, 2);
        let q = r.observe(
            Input::Question {
                session: S.into(),
                detail: Some("trust dialog".into()),
            },
            3,
        );
        assert_eq!(reasons(&q), [Reason::Question]);
        assert_eq!(q[0].detail.as_deref(), Some("trust dialog"));
        let w = r.observe(
            Input::SecondWriter {
                session: S.into(),
                pids: vec![1, 2],
            },
            4,
        );
        assert_eq!(reasons(&w), [Reason::SecondWriter]);
        let e = r.observe(
            Input::Ended {
                session: S.into(),
                failed: false,
                detail: Some("exit code 0".into()),
            },
            5,
        );
        assert_eq!(reasons(&e), [Reason::Exited]);
        let f = r.observe(
            Input::Ended {
                session: S.into(),
                failed: true,
                detail: None,
            },
            6,
        );
        assert_eq!(reasons(&f), [Reason::Failed]);
        let i = r.observe(
            Input::Reaped {
                session: S.into(),
                budget: false,
            },
            7,
        );
        assert_eq!(reasons(&i), [Reason::Reaped]);
        let b = r.observe(
            Input::Reaped {
                session: S.into(),
                budget: true,
            },
            8,
        );
        assert_eq!(reasons(&b), [Reason::Budget]);
    }

    #[test]
    fn a_title_wins_over_the_folder_and_the_id_is_the_last_resort() {
        let mut r = Rules::new(cfg(), "box");
        let n = r.observe(permission(Some("p1")), 1);
        assert_eq!(n[0].title, "9b1d4c2e");
        r.observe(
            Input::Seen {
                session: S.into(),
                cwd: Some("/p/x".into()),
                title: Some("Fix the build".into()),
            },
            2,
        );
        let n = r.observe(permission(Some("p2")), 3);
        assert_eq!(n[0].title, "Fix the build");
    }

    #[test]
    fn reasons_not_listed_are_not_notified() {
        let mut r = Rules::new(
            NotifyConfig {
                reasons: vec![Reason::Exited],
                ..cfg()
            },
            "box",
        );
        assert!(r.observe(permission(Some("p1")), 1).is_empty());
        let e = r.observe(
            Input::Ended {
                session: S.into(),
                failed: false,
                detail: None,
            },
            2,
        );
        assert_eq!(reasons(&e), [Reason::Exited]);
    }

    #[test]
    fn one_notification_per_prompt_id() {
        let mut r = Rules::new(cfg(), "box");
        assert_eq!(r.observe(permission(Some("p1")), 1).len(), 1);
        // The same dialog seen again (a repaint, a re-subscription, after
        // being cleared and shown again) is not notified again.
        assert!(r.observe(permission(Some("p1")), 2).is_empty());
        r.observe(Input::Cleared { session: S.into() }, 3);
        assert!(r.observe(permission(Some("p1")), 4).is_empty());
        // Another dialog is.
        assert_eq!(r.observe(permission(Some("p2")), 5).len(), 1);
        // The same command asked again after the session worked is a new
        // dialog (the id is made of its text).
        r.observe(Input::Cleared { session: S.into() }, 6);
        r.observe(status(Activity::Busy), 7);
        assert_eq!(r.observe(permission(Some("p1")), 8).len(), 1);
        // Another session's dialog with the same text is its own.
        let other = Input::Permission {
            session: "other".into(),
            prompt: Some("p1".into()),
            tool: None,
            detail: None,
            options: None,
        };
        assert_eq!(r.observe(other, 9).len(), 1);
    }

    #[test]
    fn a_wait_without_prompt_id_is_told_once_until_the_session_moves_on() {
        let mut r = Rules::new(cfg(), "box");
        assert_eq!(r.observe(permission(None), 1).len(), 1);
        assert!(r.observe(permission(None), 2).is_empty());
        assert!(r.observe(status(Activity::Waiting), 3).is_empty());
        assert!(r.observe(permission(None), 4).is_empty());
        r.observe(status(Activity::Busy), 5);
        assert_eq!(r.observe(permission(None), 6).len(), 1);
    }

    #[test]
    fn quiet_delay_answered_in_time_is_not_sent() {
        let mut r = Rules::new(
            NotifyConfig {
                quiet_secs: 10,
                ..cfg()
            },
            "box",
        );
        assert!(r.observe(permission(Some("p1")), 1_000).is_empty());
        assert_eq!(r.next_due(), Some(11_000));
        assert!(r.tick(5_000).is_empty());
        assert!(r
            .observe(Input::Cleared { session: S.into() }, 6_000)
            .is_empty());
        assert_eq!(r.next_due(), None);
        assert!(r.tick(20_000).is_empty());
        // A registry wait answered by the session going busy again.
        assert!(r.observe(permission(None), 30_000).is_empty());
        r.observe(status(Activity::Busy), 31_000);
        assert!(r.tick(50_000).is_empty());
    }

    #[test]
    fn quiet_delay_not_answered_is_sent_when_it_ends() {
        let mut r = Rules::new(
            NotifyConfig {
                quiet_secs: 10,
                ..cfg()
            },
            "box",
        );
        assert!(r.observe(permission(Some("p1")), 1_000).is_empty());
        assert!(r.tick(10_999).is_empty());
        let n = r.tick(11_000);
        assert_eq!(reasons(&n), [Reason::Permission]);
        assert_eq!(n[0].at, 1_000, "at: when it was seen");
        assert!(r.tick(12_000).is_empty(), "sent once");
        // Cleared after it was sent: nothing more.
        assert!(r
            .observe(Input::Cleared { session: S.into() }, 13_000)
            .is_empty());
    }

    #[test]
    fn rate_bound_drops_the_excess_and_sums_it_up_once() {
        let mut r = Rules::new(
            NotifyConfig {
                rate_per_minute: 2,
                ..cfg()
            },
            "box",
        );
        assert_eq!(r.observe(permission(Some("a")), 0).len(), 1);
        assert_eq!(r.observe(permission(Some("b")), 1_000).len(), 1);
        assert!(r.observe(permission(Some("c")), 2_000).is_empty());
        assert!(r.observe(permission(Some("d")), 3_000).is_empty());
        assert_eq!(r.dropped(), 2);
        assert_eq!(r.next_due(), Some(60_000));
        assert!(r.tick(59_999).is_empty());
        let s = r.tick(60_000);
        assert_eq!(reasons(&s), [Reason::Dropped]);
        assert_eq!(
            s[0].detail.as_deref(),
            Some("2 notifications dropped by the rate bound (2 a minute)")
        );
        assert_eq!(r.dropped(), 0);
        assert!(r.tick(61_000).is_empty(), "one summary");
        // The window holds the summary (60 s) and the send at 1 s: one slot
        // frees at 61 s.
        assert_eq!(r.observe(permission(Some("e")), 61_000).len(), 1);
        assert_eq!(r.next_due(), None);
    }

    #[test]
    fn turn_done_only_after_a_long_enough_busy_stretch() {
        let mut r = Rules::new(cfg(), "box");
        r.observe(status(Activity::Busy), 0);
        assert!(
            r.observe(status(Activity::Idle), 29_999).is_empty(),
            "too short"
        );
        r.observe(status(Activity::Busy), 40_000);
        // A wait in the middle does not restart the stretch.
        r.observe(status(Activity::Waiting), 50_000);
        r.observe(status(Activity::Busy), 60_000);
        let n = r.observe(status(Activity::Idle), 70_000);
        assert_eq!(reasons(&n), [Reason::TurnDone]);
        // Idle again without a turn: nothing.
        assert!(r.observe(status(Activity::Idle), 80_000).is_empty());
    }

    #[test]
    fn turn_done_within_the_quiet_delay_of_a_new_turn_is_not_sent() {
        let mut r = Rules::new(
            NotifyConfig {
                quiet_secs: 5,
                ..cfg()
            },
            "box",
        );
        r.observe(status(Activity::Busy), 0);
        assert!(r.observe(status(Activity::Idle), 40_000).is_empty());
        r.observe(status(Activity::Busy), 42_000);
        assert!(r.tick(50_000).is_empty());
    }

    #[test]
    fn a_focused_session_is_not_notified_unless_asked() {
        let mut r = Rules::new(cfg(), "box");
        r.observe(
            Input::Focus {
                session: S.into(),
                focused: true,
            },
            0,
        );
        assert!(r.observe(permission(Some("p1")), 1).is_empty());
        r.observe(
            Input::Focus {
                session: S.into(),
                focused: false,
            },
            2,
        );
        assert_eq!(r.observe(permission(Some("p2")), 3).len(), 1);
        let mut r = Rules::new(
            NotifyConfig {
                notify_when_focused: true,
                ..cfg()
            },
            "box",
        );
        r.observe(
            Input::Focus {
                session: S.into(),
                focused: true,
            },
            0,
        );
        assert_eq!(r.observe(permission(Some("p1")), 1).len(), 1);
    }

    #[test]
    fn a_session_gone_cancels_its_pending_prompts_but_not_its_exit() {
        let mut r = Rules::new(
            NotifyConfig {
                quiet_secs: 5,
                ..cfg()
            },
            "box",
        );
        r.observe(permission(Some("p1")), 0);
        r.observe(
            Input::Ended {
                session: S.into(),
                failed: false,
                detail: None,
            },
            1_000,
        );
        r.observe(Input::Gone { session: S.into() }, 1_500);
        let n = r.tick(10_000);
        assert_eq!(reasons(&n), [Reason::Exited]);
        // Nothing pending any more: gone again, it is forgotten.
        r.observe(Input::Gone { session: S.into() }, 11_000);
        assert!(r.sessions.is_empty());
    }

    #[test]
    fn a_sent_prompt_is_withdrawn_once_the_session_moves_on_ends_or_goes() {
        let w = |r: &mut Rules| {
            r.take_withdrawals()
                .into_iter()
                .map(|w| (w.machine, w.session))
                .collect::<Vec<_>>()
        };
        let one = vec![("box".to_string(), S.to_string())];
        let mut r = Rules::new(cfg(), "box").withdrawing();
        // Sent, then answered (busy again): withdrawn, once.
        assert_eq!(r.observe(permission(Some("p1")), 1).len(), 1);
        r.observe(Input::Cleared { session: S.into() }, 2);
        assert!(w(&mut r).is_empty(), "a flicker does not withdraw");
        r.observe(permission(Some("p1")), 3);
        r.observe(status(Activity::Busy), 4);
        assert_eq!(w(&mut r), one);
        r.observe(status(Activity::Idle), 5);
        assert!(w(&mut r).is_empty(), "once");
        // A question, then the session ends, is stopped, or goes.
        for (i, end) in [
            Input::Ended {
                session: S.into(),
                failed: false,
                detail: None,
            },
            Input::Reaped {
                session: S.into(),
                budget: false,
            },
            Input::Gone { session: S.into() },
        ]
        .into_iter()
        .enumerate()
        {
            let t = 100 * (i as i64 + 1);
            r.observe(status(Activity::Idle), t);
            let q = Input::Question {
                session: S.into(),
                detail: None,
            };
            assert_eq!(r.observe(q, t + 1).len(), 1);
            assert!(w(&mut r).is_empty(), "still applies");
            r.observe(end, t + 2);
            assert_eq!(w(&mut r), one, "case {i}");
        }
        // Not sent (answered within the quiet delay): nothing to withdraw.
        let mut r = Rules::new(
            NotifyConfig {
                quiet_secs: 5,
                ..cfg()
            },
            "box",
        )
        .withdrawing();
        assert!(r.observe(permission(Some("p2")), 1).is_empty());
        r.observe(status(Activity::Busy), 2);
        assert!(w(&mut r).is_empty());
        // Rules not asked to withdraw keep nothing.
        let mut r = Rules::new(cfg(), "box");
        r.observe(permission(Some("p3")), 1);
        r.observe(status(Activity::Busy), 2);
        assert!(r.withdrawals.is_empty());
    }

    #[test]
    fn prompt_ids_kept_are_bounded() {
        let mut r = Rules::new(cfg(), "box");
        for i in 0..PROMPTS_KEPT + 10 {
            r.observe(permission(Some(&format!("p{i}"))), i as i64);
        }
        assert_eq!(r.sessions[S].prompts_told.len(), PROMPTS_KEPT);
    }

    #[test]
    fn a_link_opens_the_session_when_the_web_is_public() {
        let mut r = Rules::new(
            NotifyConfig {
                web_public_url: Some("https://ccd.example/".into()),
                ..cfg()
            },
            "box",
        );
        let n = r.observe(permission(Some("p1")), 1);
        assert_eq!(
            n[0].link.as_deref(),
            Some(format!("https://ccd.example/#/s/{S}").as_str())
        );
    }
}
