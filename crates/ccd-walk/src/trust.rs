//! The trust step, sans IO: answering the "do you trust this folder"
//! dialog the CLI shows at startup in a new folder.
//!
//! 1. wait until the dialog has been unchanged for
//!    [`TrustTiming::trust_stable`];
//! 2. ask the classifier for the way to the trust option; ambiguous → the
//!    walk stops ([`WalkError::TrustAmbiguous`]);
//! 3. if the pointer is not on it, press ONE arrow key, then wait until the
//!    screen changed and settled (or [`TrustTiming::key_timeout`], the key
//!    may have been lost), re-classify and go to 3 (bounded by
//!    [`TrustTiming::max_attempts`]);
//! 4. only when a settled screen shows the pointer on the trust option,
//!    press Enter; then wait for the dialog to go away (a verified Enter is
//!    retried if the dialog stays, within the same bound).
//!
//! Enter is never pressed on an option that was not verified, on a settled
//! screen, to be the trust option.
//!
//! Unlike the walks a person asks for, this one is stepped on every look of
//! the startup, before the dialog shows and after it went: with no dialog
//! on the screen it waits (nothing pressed yet) or is done (the dialog went
//! after its keys, or was answered by someone); a dialog that comes back
//! is walked again within the same bound of key presses. A walk that gave
//! up repeats its [`WalkError`] while the dialog stays (the lifecycle shows
//! it as the session's `needs_attention`, [`WalkError::attention`]).
//! "Changed" and "settled" are read from [`Seen::changed_at`], when the
//! screen's text last changed.

use std::time::{Duration, Instant};

use ccd_screen::{ScreenState, TrustDialog, TrustPath};

use super::{Seen, Step, WalkError};

/// The walk's times and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustTiming {
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
}

impl TrustTiming {
    /// Defaults derived from the trust stability time.
    pub fn new(trust_stable: Duration) -> Self {
        Self {
            trust_stable,
            settle: (trust_stable / 3)
                .clamp(Duration::from_millis(100), Duration::from_millis(300)),
            key_timeout: Duration::from_millis(800),
            enter_timeout: Duration::from_secs(3),
            max_attempts: 4,
        }
    }
}

/// The keys the walk pressed before the dialog went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Trusted {
    /// Arrow keys pressed.
    pub arrows: u32,
    /// Enter presses.
    pub enters: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the dialog to be stable.
    WaitStable,
    /// An arrow was sent at this instant.
    AwaitMove(Instant),
    /// Enter was sent at this instant.
    AwaitGone(Instant),
    /// The dialog went away after our keys (or was answered by someone).
    Done,
    /// Gave up with this error.
    GaveUp,
}

/// The trust step of one session's startup, walked step by step.
#[derive(Debug, Clone)]
pub struct TrustWalk {
    t: TrustTiming,
    phase: Phase,
    /// Keys pressed (the bound counts both kinds).
    keys: Trusted,
    gave_up: Option<WalkError>,
}

impl TrustWalk {
    /// A walk for a session that was just spawned.
    pub fn new(t: TrustTiming) -> Self {
        Self {
            t,
            phase: Phase::WaitStable,
            keys: Trusted::default(),
            gave_up: None,
        }
    }

    /// The keys pressed, once the dialog went ([`Step::Done`]).
    pub fn trusted(&self) -> Option<&Trusted> {
        (self.phase == Phase::Done).then_some(&self.keys)
    }

    fn attempts(&self) -> u32 {
        self.keys.arrows + self.keys.enters
    }

    /// One step on what the screen shows now.
    pub fn step(&mut self, seen: &Seen) -> Result<Step, WalkError> {
        match seen.verdict {
            ScreenState::TrustDialog(d) => self.on_dialog(d, seen),
            _ => Ok(self.dialog_absent(seen)),
        }
    }

    /// The trust dialog is not on screen (any more).
    fn dialog_absent(&mut self, seen: &Seen) -> Step {
        match self.phase {
            Phase::AwaitGone(_) | Phase::AwaitMove(_) | Phase::GaveUp => {
                tracing::info!(step = ?self.phase, arrows = self.keys.arrows, enters = self.keys.enters, "trust dialog gone");
                self.phase = Phase::Done;
                self.gave_up = None;
                Step::Done
            }
            Phase::Done => Step::Done,
            // A dialog showing now can be answered no sooner.
            Phase::WaitStable => Step::Wait(seen.now + self.t.trust_stable),
        }
    }

    fn give_up(&mut self, e: WalkError) -> WalkError {
        tracing::warn!(reason = %e, attempts = self.attempts(), "trust step gave up");
        self.phase = Phase::GaveUp;
        self.gave_up = Some(e.clone());
        e
    }

    fn on_dialog(&mut self, d: &TrustDialog, seen: &Seen) -> Result<Step, WalkError> {
        let now = seen.now;
        let changed_at = seen.changed_at.unwrap_or(now);
        let stable_for = now.saturating_duration_since(changed_at);
        tracing::debug!(
            step = ?self.phase,
            selected = ?d.selected,
            trust_index = ?d.trust_index,
            to_trust = ?d.to_trust,
            stable_ms = stable_for.as_millis() as u64,
            attempts = self.attempts(),
            "trust dialog verdict"
        );
        match self.phase {
            Phase::GaveUp => match &self.gave_up {
                Some(e) => Err(e.clone()),
                None => Ok(Step::Wait(now + self.t.trust_stable)),
            },
            // Dialog back after it went away: start over (bounded by attempts).
            Phase::WaitStable | Phase::Done => {
                if stable_for >= self.t.trust_stable {
                    self.decide(d, seen)
                } else {
                    self.phase = Phase::WaitStable;
                    Ok(Step::Wait(changed_at + self.t.trust_stable))
                }
            }
            Phase::AwaitMove(sent) => {
                let changed_since = changed_at > sent;
                let settled = stable_for >= self.t.settle;
                let lost =
                    !changed_since && now.saturating_duration_since(sent) >= self.t.key_timeout;
                let never = sent + self.t.key_timeout * 10;
                if (changed_since && settled) || lost {
                    self.decide(d, seen)
                } else if now >= never {
                    Err(self.give_up(WalkError::TrustUnverified {
                        detail: "the screen never settled after a key".into(),
                    }))
                } else if changed_since {
                    Ok(Step::Wait((changed_at + self.t.settle).min(never)))
                } else {
                    Ok(Step::Wait(sent + self.t.key_timeout))
                }
            }
            Phase::AwaitGone(sent) => {
                let waited = now.saturating_duration_since(sent);
                if waited >= self.t.enter_timeout && stable_for >= self.t.settle {
                    // Still there: Enter was lost. Retry only if verified again.
                    self.decide(d, seen)
                } else {
                    Ok(Step::Wait(
                        (sent + self.t.enter_timeout).max(changed_at + self.t.settle),
                    ))
                }
            }
        }
    }

    /// Read the settled dialog and press at most one key.
    fn decide(&mut self, d: &TrustDialog, seen: &Seen) -> Result<Step, WalkError> {
        if self.attempts() >= self.t.max_attempts {
            return Err(self.give_up(WalkError::TrustUnverified {
                detail: format!(
                    "selection not verified on the trust option after {} key presses",
                    self.attempts()
                ),
            }));
        }
        let keys = match &d.to_trust {
            TrustPath::Keys(k) => *k,
            TrustPath::Ambiguous(a) => {
                return Err(self.give_up(WalkError::TrustAmbiguous {
                    detail: format!("{a:?}"),
                }));
            }
        };
        if d.trust_selected() {
            self.keys.enters += 1;
            tracing::info!(
                option = d
                    .trust_index
                    .and_then(|i| d.options.get(i))
                    .map(|o| o.label.as_str()),
                attempt = self.attempts(),
                "trust option verified selected; sending Enter"
            );
            self.phase = Phase::AwaitGone(seen.now);
            Ok(Step::Send(b"\r".to_vec()))
        } else {
            self.keys.arrows += 1;
            let bytes = keys.key.bytes(seen.application_cursor).to_vec();
            tracing::info!(
                key = ?keys.key,
                remaining = keys.count,
                selected = ?d.selected,
                trust_index = ?d.trust_index,
                attempt = self.attempts(),
                "sending one navigation key towards the trust option"
            );
            self.phase = Phase::AwaitMove(seen.now);
            Ok(Step::Send(bytes))
        }
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

    fn timing() -> TrustTiming {
        let mut t = TrustTiming::new(Duration::from_millis(1000));
        t.settle = Duration::from_millis(200);
        t
    }

    struct Run {
        w: TrustWalk,
        t0: Instant,
    }

    impl Run {
        fn new(t: TrustTiming) -> Self {
            Self {
                w: TrustWalk::new(t),
                t0: Instant::now(),
            }
        }
        fn ms(&self, n: u64) -> Instant {
            self.t0 + Duration::from_millis(n)
        }
        fn at(&mut self, ms: u64, changed_ms: u64, v: &ScreenState) -> Result<Step, WalkError> {
            let seen = Seen {
                now: self.ms(ms),
                verdict: v,
                application_cursor: false,
                bracketed_paste: false,
                prompt_since: None,
                changed_at: Some(self.ms(changed_ms)),
            };
            self.w.step(&seen)
        }
        /// The bytes of the keys a step pressed (none for a wait or done).
        fn sends(&mut self, ms: u64, changed_ms: u64, v: &ScreenState) -> Vec<Vec<u8>> {
            match self.at(ms, changed_ms, v) {
                Ok(Step::Send(b)) => vec![b],
                _ => Vec::new(),
            }
        }
    }

    #[test]
    fn new_variant_navigates_verifies_then_enters() {
        let mut r = Run::new(timing());
        let no_sel = trust_screen(&[" ❯ No, exit", "   Yes, I trust this folder"]);
        let yes_sel = trust_screen(&["   No, exit", " ❯ Yes, I trust this folder"]);
        // Not stable yet: look again when it will be.
        assert_eq!(r.at(100, 0, &no_sel), Ok(Step::Wait(r.ms(1000))));
        assert!(r.sends(900, 0, &no_sel).is_empty());
        // Stable: one Down.
        assert_eq!(r.sends(1000, 0, &no_sel), vec![b"\x1b[B".to_vec()]);
        // Screen changed at 1100 but not settled yet: nothing.
        assert_eq!(r.at(1150, 1100, &yes_sel), Ok(Step::Wait(r.ms(1300))));
        // Settled and verified: Enter.
        assert_eq!(r.sends(1300, 1100, &yes_sel), vec![b"\r".to_vec()]);
        assert_eq!(r.w.trusted(), None, "the dialog is still shown");
        // Dialog gone.
        assert_eq!(r.at(1400, 1350, &ScreenState::Loading), Ok(Step::Done));
        assert_eq!(
            r.w.trusted(),
            Some(&Trusted {
                arrows: 1,
                enters: 1
            })
        );
    }

    #[test]
    fn old_variant_enters_at_once_when_already_on_trust() {
        let mut r = Run::new(timing());
        let v = trust_screen(&[" ❯ 1. Yes, I trust this folder", "   2. No, exit"]);
        assert!(r.sends(500, 0, &v).is_empty());
        assert_eq!(r.sends(1000, 0, &v), vec![b"\r".to_vec()]);
    }

    #[test]
    fn lost_key_is_resent_and_never_enter_unverified() {
        let mut r = Run::new(timing());
        let no_sel = trust_screen(&[" ❯ No, exit", "   Yes, I trust this folder"]);
        assert_eq!(r.sends(1000, 0, &no_sel).len(), 1);
        // No change: before the key timeout nothing, after it the key again.
        assert_eq!(r.at(1500, 0, &no_sel), Ok(Step::Wait(r.ms(1800))));
        assert_eq!(r.sends(1800, 0, &no_sel), vec![b"\x1b[B".to_vec()]);
        assert_eq!(r.sends(2600, 0, &no_sel), vec![b"\x1b[B".to_vec()]);
        assert_eq!(r.sends(3400, 0, &no_sel), vec![b"\x1b[B".to_vec()]);
        // Out of attempts: it stops, and no Enter ever.
        assert!(matches!(
            r.at(4200, 0, &no_sel),
            Err(WalkError::TrustUnverified { .. })
        ));
        assert!(matches!(
            r.at(9000, 0, &no_sel),
            Err(WalkError::TrustUnverified { .. })
        ));
        // The dialog went: done, the error gone with it.
        assert_eq!(r.at(9100, 9050, &ScreenState::Loading), Ok(Step::Done));
    }

    #[test]
    fn ambiguous_dialog_stops_the_walk() {
        let mut r = Run::new(timing());
        let v = trust_screen(&["   No, exit", "   Yes, I trust this folder"]);
        let e = r.at(1000, 0, &v).expect_err("ambiguous");
        assert!(matches!(e, WalkError::TrustAmbiguous { .. }), "{e:?}");
        assert!(e.attention().is_some());
    }

    #[test]
    fn a_screen_that_never_settles_after_a_key_stops_the_walk() {
        let mut r = Run::new(timing());
        let no_sel = trust_screen(&[" ❯ No, exit", "   Yes, I trust this folder"]);
        assert_eq!(r.sends(1000, 0, &no_sel).len(), 1);
        // Changing every 100 ms: never settled for 200 ms.
        assert_eq!(r.at(1150, 1100, &no_sel), Ok(Step::Wait(r.ms(1300))));
        assert!(matches!(
            r.at(9000, 8950, &no_sel),
            Err(WalkError::TrustUnverified { .. })
        ));
    }

    #[test]
    fn before_the_dialog_it_waits_and_a_dialog_back_is_walked_again() {
        let mut r = Run::new(timing());
        assert_eq!(
            r.at(100, 0, &ScreenState::Loading),
            Ok(Step::Wait(r.ms(1100)))
        );
        let yes_sel = trust_screen(&["   No, exit", " ❯ Yes, I trust this folder"]);
        assert_eq!(r.sends(1200, 100, &yes_sel), vec![b"\r".to_vec()]);
        assert_eq!(r.at(1300, 1250, &ScreenState::Loading), Ok(Step::Done));
        // Back (the Enter was taken for something else): walked again once
        // stable, Enter only on the verified option.
        assert_eq!(r.at(1400, 1350, &yes_sel), Ok(Step::Wait(r.ms(2350))));
        assert_eq!(r.sends(2350, 1350, &yes_sel), vec![b"\r".to_vec()]);
    }
}
