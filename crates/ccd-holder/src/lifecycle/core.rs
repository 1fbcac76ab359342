//! The pure core of the startup/lifecycle state machine.
//!
//! Inputs ([`Observation`]): the screen verdict and text, when the screen last
//! changed, the time, whether a live registry entry for the child was seen,
//! whether the child exited. Outputs ([`Action`]): keys to send, state changes,
//! attention changes. No processes, no clock, no I/O: tests drive it with
//! literal screens and instants.
//!
//! ```text
//! starting ──trust dialog──▶ trust ──registry entry live──▶ ready
//!     │                        │                               │
//!     └──────── error on screen / exit before ready ──▶ failed  └─exit─▶ exited
//! needs_attention (orthogonal): API-key dialog, trust dialog with auto-trust
//! off, ambiguous or unverifiable trust dialog, unknown blocking screen
//! persisting before ready.
//! ```
//!
//! # The trust step
//!
//! Walked by [`ccd_walk::TrustWalk`], the walk core beside the permission
//! prompt's and the submit's (the same [`Seen`]/[`Step`]/[`WalkError`]),
//! stepped here on each observation before ready: with the dialog on the
//! screen when auto-trust is on, and without it (the walk learns it went).
//! Its keys become [`Action::Send`]; a walk that stopped is the session's
//! `needs_attention` while the dialog stays ([`WalkError::attention`]).

use std::time::{Duration, Instant};

use ccd_screen::ScreenState;
use ccd_walk::{Seen, Step, TrustTiming, TrustWalk, WalkError};
use serde::Serialize;

use crate::exit::ExitInfo;

/// Where the session is in its life, and why a person must look at it
/// (holder-protocol types).
pub use ccd_protocol::holder::{AttentionReason, State};

/// Timing and policy of the core.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// Answer the trust dialog.
    pub auto_trust: bool,
    /// Dialog must be unchanged this long before the first key.
    pub trust_stable: Duration,
    /// After a key, the screen must be unchanged this long before re-reading.
    pub settle: Duration,
    /// After a key with no screen change, assume it was lost.
    pub key_timeout: Duration,
    /// After Enter, how long the dialog may stay before Enter is retried.
    pub enter_timeout: Duration,
    /// Key presses (arrows + Enters) allowed in total.
    pub max_attempts: u32,
    /// How long an unknown blocking screen may persist before ready.
    pub blocking_grace: Duration,
    /// Ready needs the prompt on screen, unchanged this long: a line typed
    /// while the TUI still settles is taken as text, its Enter as a newline
    /// (seen on CLI 2.1.332 under load).
    pub ready_settle: Duration,
    /// Ready anyway this long after the registry entry went live, when the
    /// prompt is never recognized (a future screen layout).
    pub ready_fallback: Duration,
}

impl CoreConfig {
    /// Defaults derived from the trust stability time.
    pub fn new(auto_trust: bool, trust_stable: Duration) -> Self {
        let t = TrustTiming::new(trust_stable);
        Self {
            auto_trust,
            trust_stable: t.trust_stable,
            settle: t.settle,
            key_timeout: t.key_timeout,
            enter_timeout: t.enter_timeout,
            max_attempts: t.max_attempts,
            blocking_grace: Duration::from_secs(3),
            ready_settle: Duration::from_millis(700),
            ready_fallback: Duration::from_secs(5),
        }
    }

    /// The trust walk's times and bounds.
    pub fn trust_timing(&self) -> TrustTiming {
        TrustTiming {
            trust_stable: self.trust_stable,
            settle: self.settle,
            key_timeout: self.key_timeout,
            enter_timeout: self.enter_timeout,
            max_attempts: self.max_attempts,
        }
    }
}

/// One tick's worth of facts.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// Now.
    pub now: Instant,
    /// The classifier's verdict on the current screen.
    pub verdict: &'a ScreenState,
    /// When the screen text last changed.
    pub changed_at: Instant,
    /// DECCKM: arrows are sent as `ESC O x`.
    pub application_cursor: bool,
    /// A live registry entry for the child, with its session id.
    pub registry_session: Option<&'a str>,
    /// The child exited.
    pub exit: Option<&'a ExitInfo>,
}

/// What a key press is for (logged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPurpose {
    /// An arrow towards the trust option.
    TrustNavigate,
    /// Enter on the verified trust option.
    TrustConfirm,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes to the PTY.
    Send {
        /// The bytes.
        bytes: Vec<u8>,
        /// Why.
        purpose: KeyPurpose,
    },
    /// The state changed.
    Transition {
        /// The new state.
        state: State,
        /// Failure reason or other detail.
        detail: Option<String>,
    },
    /// The session learned its id from the registry.
    SessionId(String),
    /// needs_attention changed (None: cleared).
    Attention(Option<AttentionReason>),
}

/// The state machine.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    cfg: CoreConfig,
    state: State,
    trust: TrustWalk,
    /// Why the trust walk stopped, while the dialog stays.
    trust_problem: Option<AttentionReason>,
    attention: Option<AttentionReason>,
    unknown_since: Option<Instant>,
    session_id: Option<String>,
    /// When the child's registry entry was first seen live.
    registry_since: Option<Instant>,
}

impl Lifecycle {
    /// A session that was just spawned.
    pub fn new(cfg: CoreConfig) -> Self {
        Self {
            state: State::Starting,
            trust: TrustWalk::new(cfg.trust_timing()),
            trust_problem: None,
            attention: None,
            unknown_since: None,
            session_id: None,
            registry_since: None,
            cfg,
        }
    }

    /// Current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Current attention reason.
    pub fn attention(&self) -> Option<&AttentionReason> {
        self.attention.as_ref()
    }

    /// True when nothing more can happen (the child is gone).
    pub fn is_final(&self) -> bool {
        matches!(self.state, State::Exited | State::Failed) && self.attention.is_none()
    }

    fn go(&mut self, state: State, detail: Option<String>, out: &mut Vec<Action>) {
        if self.state != state {
            tracing::info!(from = self.state.as_str(), to = state.as_str(), detail = ?detail, "lifecycle transition");
            self.state = state;
            out.push(Action::Transition { state, detail });
        }
    }

    /// Feed one observation; returns what to do.
    pub fn step(&mut self, obs: &Observation<'_>) -> Vec<Action> {
        let mut out = Vec::new();
        let before_ready = matches!(self.state, State::Starting | State::Trust);

        if let Some(exit) = obs.exit {
            match self.state {
                State::Starting | State::Trust => {
                    let reason = match obs.verdict {
                        ScreenState::Error(e) => e.text.clone(),
                        _ => format!(
                            "exited before it was ready (code {:?}, signal {:?})",
                            exit.code, exit.signal
                        ),
                    };
                    self.go(State::Failed, Some(reason), &mut out);
                }
                State::Ready => self.go(State::Exited, None, &mut out),
                State::Exited | State::Failed => {}
            }
            self.set_attention(None, &mut out);
            return out;
        }

        if before_ready {
            if let ScreenState::Error(e) = obs.verdict {
                self.go(State::Failed, Some(e.text.clone()), &mut out);
                self.set_attention(None, &mut out);
                return out;
            }
        }

        if let (true, Some(sid)) = (before_ready, obs.registry_session) {
            if self.session_id.as_deref() != Some(sid) {
                self.session_id = Some(sid.to_owned());
                out.push(Action::SessionId(sid.to_owned()));
            }
            let since = *self.registry_since.get_or_insert(obs.now);
            let at_prompt = matches!(obs.verdict, ScreenState::Ready(_))
                && obs.now.saturating_duration_since(obs.changed_at) >= self.cfg.ready_settle;
            let waited = obs.now.saturating_duration_since(since) >= self.cfg.ready_fallback;
            if at_prompt || waited {
                if !at_prompt {
                    tracing::warn!(verdict = ?obs.verdict, "the registry entry is live but no prompt is recognized on screen; ready anyway");
                }
                self.go(State::Ready, None, &mut out);
            }
        }

        let before_ready = matches!(self.state, State::Starting | State::Trust);
        if before_ready {
            if let ScreenState::TrustDialog(_) = obs.verdict {
                if self.state == State::Starting {
                    self.go(State::Trust, None, &mut out);
                }
                if self.cfg.auto_trust {
                    self.walk_trust(obs, &mut out);
                }
            } else {
                // The walk learns the dialog went.
                self.walk_trust(obs, &mut out);
            }
        }

        // Unknown blocking screens before ready.
        match obs.verdict {
            ScreenState::Unknown {
                blocking_hint: Some(_),
            } if before_ready => {
                self.unknown_since.get_or_insert(obs.now);
            }
            _ => self.unknown_since = None,
        }

        let want = self.wanted_attention(obs, before_ready);
        self.set_attention(want, &mut out);
        out
    }

    fn wanted_attention(
        &self,
        obs: &Observation<'_>,
        before_ready: bool,
    ) -> Option<AttentionReason> {
        match obs.verdict {
            ScreenState::TrustDialog(_) if before_ready => {
                if !self.cfg.auto_trust {
                    Some(AttentionReason::TrustDialog)
                } else {
                    self.trust_problem.clone()
                }
            }
            ScreenState::ApiKeyDialog(_) => Some(AttentionReason::ApiKeyDialog),
            ScreenState::Unknown {
                blocking_hint: Some(hint),
            } => match self.unknown_since {
                Some(since)
                    if obs.now.saturating_duration_since(since) >= self.cfg.blocking_grace =>
                {
                    Some(AttentionReason::UnknownBlockingScreen { hint: hint.clone() })
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn set_attention(&mut self, want: Option<AttentionReason>, out: &mut Vec<Action>) {
        if self.attention != want {
            tracing::info!(attention = ?want, state = self.state.as_str(), "needs_attention changed");
            self.attention = want.clone();
            out.push(Action::Attention(want));
        }
    }

    /// One step of the trust walk on this observation.
    fn walk_trust(&mut self, obs: &Observation<'_>, out: &mut Vec<Action>) {
        let seen = Seen {
            now: obs.now,
            verdict: obs.verdict,
            application_cursor: obs.application_cursor,
            bracketed_paste: false,
            prompt_since: None,
            changed_at: Some(obs.changed_at),
        };
        match self.trust.step(&seen) {
            Ok(step) => {
                self.trust_problem = None;
                if let Step::Send(bytes) = step {
                    let purpose = if bytes == b"\r" {
                        KeyPurpose::TrustConfirm
                    } else {
                        KeyPurpose::TrustNavigate
                    };
                    out.push(Action::Send { bytes, purpose });
                }
            }
            Err(e) => self.trust_problem = e.attention().or_else(|| Some(unverified(&e))),
        }
    }
}

/// A stop of the trust walk that names no attention of its own (none
/// does today) is shown as an unverified trust option.
fn unverified(e: &WalkError) -> AttentionReason {
    AttentionReason::TrustUnverified {
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_screen::{classify_text, ScreenText};

    fn trust_screen(opts: &[&str]) -> ScreenState {
        let mut lines = vec![
            " Accessing workspace:".to_owned(),
            " Quick safety check: Is this a project you created or one you trust?".to_owned(),
            String::new(),
        ];
        lines.extend(opts.iter().map(|s| (*s).to_owned()));
        classify_text(&ScreenText::from_lines(lines))
    }

    fn cfg() -> CoreConfig {
        let mut c = CoreConfig::new(true, Duration::from_millis(1000));
        c.settle = Duration::from_millis(200);
        // Most tests are about the trust step: ready on the registry alone.
        c.ready_fallback = Duration::ZERO;
        c
    }

    #[test]
    fn ready_waits_for_a_settled_prompt() {
        let mut c = cfg();
        c.ready_fallback = Duration::from_secs(5);
        let mut r = Run::new(c);
        let blank = ScreenState::Loading;
        let prompt = ScreenState::Ready(ccd_screen::classify::ready::ReadyPrompt {
            row: 10,
            input: String::new(),
            hint: None,
        });
        let a = r.at_full(100, 0, &blank, Some("sid-9"), None);
        assert!(a.contains(&Action::SessionId("sid-9".into())));
        assert_eq!(r.lc.state(), State::Starting, "no prompt yet");
        r.at_full(200, 150, &prompt, Some("sid-9"), None);
        assert_eq!(r.lc.state(), State::Starting, "prompt not settled");
        r.at_full(900, 150, &prompt, Some("sid-9"), None);
        assert_eq!(r.lc.state(), State::Ready);
        // A prompt never recognized: ready after the fallback.
        let mut r = Run::new({
            let mut c = cfg();
            c.ready_fallback = Duration::from_secs(5);
            c
        });
        r.at_full(100, 0, &blank, Some("sid-8"), None);
        r.at_full(5000, 0, &blank, Some("sid-8"), None);
        assert_eq!(r.lc.state(), State::Starting);
        r.at_full(5200, 0, &blank, Some("sid-8"), None);
        assert_eq!(r.lc.state(), State::Ready);
    }

    struct Run {
        lc: Lifecycle,
        t0: Instant,
    }

    impl Run {
        fn new(c: CoreConfig) -> Self {
            Self {
                lc: Lifecycle::new(c),
                t0: Instant::now(),
            }
        }
        fn at(&mut self, ms: u64, changed_ms: u64, v: &ScreenState) -> Vec<Action> {
            self.at_full(ms, changed_ms, v, None, None)
        }
        fn at_full(
            &mut self,
            ms: u64,
            changed_ms: u64,
            v: &ScreenState,
            reg: Option<&str>,
            exit: Option<&ExitInfo>,
        ) -> Vec<Action> {
            let obs = Observation {
                now: self.t0 + Duration::from_millis(ms),
                verdict: v,
                changed_at: self.t0 + Duration::from_millis(changed_ms),
                application_cursor: false,
                registry_session: reg,
                exit,
            };
            self.lc.step(&obs)
        }
    }

    fn sends(a: &[Action]) -> Vec<Vec<u8>> {
        a.iter()
            .filter_map(|a| match a {
                Action::Send { bytes, .. } => Some(bytes.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn new_variant_navigates_verifies_then_enters() {
        let mut r = Run::new(cfg());
        let no_sel = trust_screen(&[" ❯ No, exit", "   Yes, I trust this folder"]);
        let yes_sel = trust_screen(&["   No, exit", " ❯ Yes, I trust this folder"]);
        let a = r.at(100, 0, &no_sel);
        assert!(a.contains(&Action::Transition {
            state: State::Trust,
            detail: None
        }));
        assert!(sends(&a).is_empty(), "not stable yet");
        assert!(sends(&r.at(900, 0, &no_sel)).is_empty());
        // Stable: one Down.
        assert_eq!(sends(&r.at(1000, 0, &no_sel)), vec![b"\x1b[B".to_vec()]);
        // Screen changed at 1100 but not settled yet: nothing.
        assert!(sends(&r.at(1150, 1100, &yes_sel)).is_empty());
        // Settled and verified: Enter.
        assert_eq!(sends(&r.at(1300, 1100, &yes_sel)), vec![b"\r".to_vec()]);
        // Dialog gone.
        let blank = ScreenState::Loading;
        assert!(sends(&r.at(1400, 1350, &blank)).is_empty());
        let a = r.at_full(1500, 1350, &blank, Some("sid-1"), None);
        assert!(a.contains(&Action::SessionId("sid-1".into())));
        assert_eq!(r.lc.state(), State::Ready);
        assert_eq!(r.lc.attention(), None);
    }

    #[test]
    fn lost_key_is_resent_and_never_enter_unverified() {
        let mut r = Run::new(cfg());
        let no_sel = trust_screen(&[" ❯ No, exit", "   Yes, I trust this folder"]);
        assert_eq!(sends(&r.at(1000, 0, &no_sel)).len(), 1);
        // No change: before the key timeout nothing, after it the key again.
        assert!(sends(&r.at(1500, 0, &no_sel)).is_empty());
        assert_eq!(sends(&r.at(1800, 0, &no_sel)), vec![b"\x1b[B".to_vec()]);
        assert_eq!(sends(&r.at(2600, 0, &no_sel)), vec![b"\x1b[B".to_vec()]);
        assert_eq!(sends(&r.at(3400, 0, &no_sel)), vec![b"\x1b[B".to_vec()]);
        // Out of attempts: attention, and no Enter ever.
        let a = r.at(4200, 0, &no_sel);
        assert!(sends(&a).is_empty());
        assert!(matches!(
            r.lc.attention(),
            Some(AttentionReason::TrustUnverified { .. })
        ));
        assert!(sends(&r.at(9000, 0, &no_sel)).is_empty());
    }

    #[test]
    fn ambiguous_dialog_needs_attention() {
        let mut r = Run::new(cfg());
        let v = trust_screen(&["   No, exit", "   Yes, I trust this folder"]);
        let a = r.at(1000, 0, &v);
        assert!(sends(&a).is_empty());
        assert!(matches!(
            r.lc.attention(),
            Some(AttentionReason::TrustAmbiguous { .. })
        ));
    }

    #[test]
    fn manual_trust_needs_attention_and_clears_when_answered() {
        let mut c = cfg();
        c.auto_trust = false;
        let mut r = Run::new(c);
        let v = trust_screen(&[" ❯ No, exit", "   Yes, I trust this folder"]);
        let a = r.at(5000, 0, &v);
        assert!(sends(&a).is_empty());
        assert_eq!(r.lc.attention(), Some(&AttentionReason::TrustDialog));
        r.at(5100, 5050, &ScreenState::Loading);
        assert_eq!(r.lc.attention(), None);
    }

    #[test]
    fn api_key_dialog_is_attention_even_after_ready() {
        let mut r = Run::new(cfg());
        let v = ScreenState::ApiKeyDialog(ccd_screen::ApiKeyDialog {
            options: vec!["Yes".into(), "No (recommended)".into()],
            selected: Some(1),
        });
        r.at_full(100, 0, &ScreenState::Loading, Some("s"), None);
        assert_eq!(r.lc.state(), State::Ready);
        let a = r.at(200, 150, &v);
        assert!(sends(&a).is_empty());
        assert_eq!(r.lc.attention(), Some(&AttentionReason::ApiKeyDialog));
    }

    #[test]
    fn start_error_fails_and_exit_before_ready_fails() {
        let mut r = Run::new(cfg());
        let v = classify_text(&ScreenText::from_lines([
            "No conversation found with session ID: abc",
        ]));
        r.at(100, 0, &v);
        assert_eq!(r.lc.state(), State::Failed);
        let mut r = Run::new(cfg());
        let exit = ExitInfo {
            code: Some(1),
            signal: None,
        };
        r.at_full(100, 0, &ScreenState::Loading, None, Some(&exit));
        assert_eq!(r.lc.state(), State::Failed);
        let mut r = Run::new(cfg());
        r.at_full(100, 0, &ScreenState::Loading, Some("s"), None);
        r.at_full(200, 0, &ScreenState::Loading, None, Some(&exit));
        assert_eq!(r.lc.state(), State::Exited);
    }

    /// A permission dialog is the user's: nothing is pressed, no attention is
    /// raised (the registry's `waiting` says it), and it is never taken for an
    /// unknown blocking screen, before ready or after.
    #[test]
    fn permission_dialog_is_left_alone() {
        let v = classify_text(&ScreenText::from_lines([
            "─".repeat(60).as_str(),
            " Bash command",
            "",
            "   echo hi > out.txt",
            "",
            " Do you want to proceed?",
            " ❯ 1. Yes",
            "   2. No",
        ]));
        assert!(matches!(v, ScreenState::PermissionDialog(_)), "{v:?}");
        let mut r = Run::new(cfg());
        r.at_full(100, 0, &ScreenState::Loading, Some("s"), None);
        assert_eq!(r.lc.state(), State::Ready);
        for t in [200, 3500, 10_000] {
            let a = r.at(t, 150, &v);
            assert!(sends(&a).is_empty());
            assert_eq!(r.lc.attention(), None);
            assert_eq!(r.lc.state(), State::Ready);
        }
        let mut c = cfg();
        c.ready_fallback = Duration::from_secs(60);
        let mut r = Run::new(c);
        for t in [100, 3500, 10_000] {
            let a = r.at(t, 0, &v);
            assert!(sends(&a).is_empty());
            assert_eq!(r.lc.attention(), None);
            assert_eq!(r.lc.state(), State::Starting);
        }
    }

    #[test]
    fn unknown_blocking_screen_after_grace() {
        let mut r = Run::new(cfg());
        let v = ScreenState::Unknown {
            blocking_hint: Some("Press Enter to continue".into()),
        };
        r.at(100, 0, &v);
        assert_eq!(r.lc.attention(), None);
        r.at(3200, 0, &v);
        assert!(matches!(
            r.lc.attention(),
            Some(AttentionReason::UnknownBlockingScreen { .. })
        ));
    }
}
