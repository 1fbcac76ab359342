//! Answering the permission prompt, sans IO.
//!
//! 1. The screen must show a permission prompt, the one the caller named
//!    if it named one; the option the answer means is found by its label
//!    ([`ccd_screen::option_for`]). Otherwise the walk ends with nothing
//!    typed.
//! 2. The prompt must have been on the screen for [`RespondTiming::settle`]
//!    before the first key: the CLI draws a dialog before its input handler
//!    is live (seen on 2.1.332 under load: an Enter right after the dialog
//!    appeared was lost). The holder knows when the prompt appeared, so a
//!    prompt shown for a while is answered at once.
//! 3. One arrow at a time towards the option; each must show on the screen
//!    (the same prompt, the pointer elsewhere) before the next. An arrow
//!    whose effect does not show within [`RespondTiming::move_retry`] is
//!    pressed once more (a key read before the input handler is live is
//!    lost; a late first press only moves the pointer further, and the walk
//!    corrects it, since Enter waits for the pointer on the option).
//! 4. Enter only with the pointer on the option; then the prompt must go.
//!    While the same prompt stays with the pointer on the option, Enter is
//!    pressed again after [`RespondTiming::enter_retry`], at most
//!    [`RespondTiming::enter_tries`] times in all.
//!
//! A screen that changes under the walk (the prompt answered elsewhere,
//! replaced) ends it with an error that says what was typed so far.

use std::time::{Duration, Instant};

use ccd_protocol::methods::session::RespondChoice;
use ccd_screen::{Answer, KeyMoves, PermissionDialog, PermissionDialogExt, ScreenState};

use super::error::DIALOG_SHOWN;
use super::{Seen, Step, WalkError};

/// The walk's times and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RespondTiming {
    /// The prompt must have been shown this long before the first key.
    pub settle: Duration,
    /// An arrow whose effect does not show by then is pressed once more.
    pub move_retry: Duration,
    /// After that second press, how long the move may take.
    pub move_wait: Duration,
    /// Enter is pressed again while the same prompt stays this long with
    /// the pointer on the option.
    pub enter_retry: Duration,
    /// Enter presses at most.
    pub enter_tries: u32,
    /// How long the prompt may take to go after the first Enter.
    pub gone_wait: Duration,
}

impl Default for RespondTiming {
    fn default() -> Self {
        Self {
            settle: Duration::from_millis(400),
            move_retry: Duration::from_millis(1000),
            move_wait: Duration::from_secs(3),
            enter_retry: Duration::from_millis(1500),
            enter_tries: 3,
            gone_wait: Duration::from_secs(5),
        }
    }
}

/// What was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The prompt's id.
    pub prompt: String,
    /// The label of the option chosen.
    pub option: String,
    /// Arrow keys pressed.
    pub arrows: u32,
    /// Enter presses.
    pub enters: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing looked at yet.
    Start,
    /// Waiting for the prompt to have been shown for the settle time.
    Settle,
    /// An arrow was pressed with the pointer at `from`.
    Move {
        from: usize,
        pressed_at: Instant,
        presses: u32,
    },
    /// Enter was pressed.
    Gone { first: Instant, pressed_at: Instant },
    /// The prompt went after Enter.
    Done,
}

/// One answer to one permission prompt, walked step by step.
#[derive(Debug, Clone)]
pub struct RespondWalk {
    t: RespondTiming,
    expected: Option<String>,
    choice: RespondChoice,
    phase: Phase,
    shown_since: Instant,
    target: usize,
    answered: Answered,
}

fn answer_of(c: RespondChoice) -> Answer {
    match c {
        RespondChoice::Yes => Answer::Yes,
        RespondChoice::Always => Answer::Always,
        RespondChoice::No => Answer::No,
    }
}

/// The permission dialog on the screen, if any.
fn dialog(verdict: &ScreenState) -> Option<&PermissionDialog> {
    match verdict {
        ScreenState::PermissionDialog(d) => Some(d),
        _ => None,
    }
}

/// What the screen shows, in a walk's errors.
fn shows(verdict: &ScreenState) -> &'static str {
    match verdict {
        ScreenState::PermissionDialog(_) => DIALOG_SHOWN,
        other => other.shows(),
    }
}

impl RespondWalk {
    /// A walk to answer `choice` on the prompt on screen (on `expected`
    /// only, when given).
    pub fn new(expected: Option<String>, choice: RespondChoice, t: RespondTiming) -> Self {
        Self {
            t,
            expected,
            choice,
            phase: Phase::Start,
            shown_since: Instant::now(),
            target: 0,
            answered: Answered {
                prompt: String::new(),
                option: String::new(),
                arrows: 0,
                enters: 0,
            },
        }
    }

    /// What was answered, once [`Step::Done`] came.
    pub fn answered(&self) -> Option<&Answered> {
        (self.phase == Phase::Done).then_some(&self.answered)
    }

    /// The prompt the walk answers (once started).
    pub fn prompt(&self) -> Option<&str> {
        (self.phase != Phase::Start).then_some(self.answered.prompt.as_str())
    }

    /// One step on what the screen shows now.
    pub fn step(&mut self, seen: &Seen) -> Result<Step, WalkError> {
        let now = seen.now;
        let on_screen = dialog(seen.verdict);
        match self.phase {
            Phase::Start => {
                let d = self.start(on_screen, seen)?;
                self.settle(d, seen)
            }
            Phase::Settle => {
                let d = self
                    .same_prompt(on_screen)
                    .ok_or_else(|| WalkError::NotShown {
                        expected: Some(self.answered.prompt.clone()),
                        now: on_screen.map(|d| d.prompt_id()),
                        shows: shows(seen.verdict),
                    })?;
                self.settle(d, seen)
            }
            Phase::Move {
                from,
                pressed_at,
                presses,
            } => {
                let d = self
                    .same_prompt(on_screen)
                    .ok_or_else(|| WalkError::Moved {
                        prompt: self.answered.prompt.clone(),
                        arrows: self.answered.arrows,
                        now: on_screen.map(|d| d.prompt_id()),
                        shows: shows(seen.verdict),
                    })?;
                if d.selected.is_some_and(|s| s != from) {
                    return self.advance(d, seen);
                }
                if presses == 1 && now >= pressed_at + self.t.move_retry {
                    let key = KeyMoves::between(from, self.target)
                        .key
                        .bytes(seen.application_cursor);
                    self.answered.arrows += 1;
                    self.phase = Phase::Move {
                        from,
                        pressed_at: now,
                        presses: 2,
                    };
                    return Ok(Step::Send(key.to_vec()));
                }
                let wait = if presses == 1 {
                    self.t.move_retry
                } else {
                    self.t.move_wait
                };
                if now >= pressed_at + wait {
                    return Err(WalkError::DidNotMove {
                        prompt: self.answered.prompt.clone(),
                        arrows: self.answered.arrows,
                    });
                }
                Ok(Step::Wait(pressed_at + wait))
            }
            Phase::Gone { first, pressed_at } => {
                let Some(d) = self.same_prompt(on_screen) else {
                    self.phase = Phase::Done;
                    return Ok(Step::Done);
                };
                let on_option = d.selected == Some(self.target);
                let retry_at = pressed_at + self.t.enter_retry;
                let more = on_option && self.answered.enters < self.t.enter_tries;
                if more && now >= retry_at {
                    self.answered.enters += 1;
                    self.phase = Phase::Gone {
                        first,
                        pressed_at: now,
                    };
                    return Ok(Step::Send(b"\r".to_vec()));
                }
                let give_up = first + self.t.gone_wait;
                if now >= give_up {
                    return Err(WalkError::StillShown {
                        prompt: self.answered.prompt.clone(),
                        enters: self.answered.enters,
                        waited_secs: self.t.gone_wait.as_secs(),
                    });
                }
                Ok(Step::Wait(if more {
                    retry_at.min(give_up)
                } else {
                    give_up
                }))
            }
            Phase::Done => Ok(Step::Done),
        }
    }

    /// The dialog on screen if it is the prompt being answered.
    fn same_prompt<'d>(&self, d: Option<&'d PermissionDialog>) -> Option<&'d PermissionDialog> {
        d.filter(|d| d.prompt_id() == self.answered.prompt)
    }

    /// The first look: the prompt, the option, where the pointer is.
    fn start<'d>(
        &mut self,
        on_screen: Option<&'d PermissionDialog>,
        seen: &Seen,
    ) -> Result<&'d PermissionDialog, WalkError> {
        let Some(d) = on_screen else {
            return Err(WalkError::NotShown {
                expected: self.expected.clone(),
                now: None,
                shows: shows(seen.verdict),
            });
        };
        let prompt = d.prompt_id();
        if self.expected.as_deref().is_some_and(|want| want != prompt) {
            return Err(WalkError::NotShown {
                expected: self.expected.clone(),
                now: Some(prompt),
                shows: shows(seen.verdict),
            });
        }
        let Some(target) = d.option_for(answer_of(self.choice)) else {
            return Err(WalkError::NoOption {
                prompt,
                choice: self.choice,
                labels: d.labels(),
            });
        };
        if d.selected.is_none() {
            return Err(WalkError::NoSelection { prompt });
        }
        self.target = target;
        self.answered.option = d.options[target].label.clone();
        self.answered.prompt = prompt;
        self.shown_since = seen.prompt_since.unwrap_or(seen.now).min(seen.now);
        self.phase = Phase::Settle;
        Ok(d)
    }

    /// Settled: the first key; else wait until it is.
    fn settle(&mut self, d: &PermissionDialog, seen: &Seen) -> Result<Step, WalkError> {
        let settled_at = self.shown_since + self.t.settle;
        if seen.now < settled_at {
            return Ok(Step::Wait(settled_at));
        }
        self.advance(d, seen)
    }

    /// With the pointer where the screen shows it: one arrow towards the
    /// option, or Enter on it.
    fn advance(&mut self, d: &PermissionDialog, seen: &Seen) -> Result<Step, WalkError> {
        let Some(at) = d.selected else {
            return Err(WalkError::NoSelection {
                prompt: self.answered.prompt.clone(),
            });
        };
        if at == self.target {
            self.answered.enters += 1;
            self.phase = Phase::Gone {
                first: seen.now,
                pressed_at: seen.now,
            };
            return Ok(Step::Send(b"\r".to_vec()));
        }
        let key = KeyMoves::between(at, self.target)
            .key
            .bytes(seen.application_cursor);
        self.answered.arrows += 1;
        self.phase = Phase::Move {
            from: at,
            pressed_at: seen.now,
            presses: 1,
        };
        Ok(Step::Send(key.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_screen::{classify_text, ScreenText};

    /// The fake's Bash prompt with the pointer on option `at`.
    fn prompt(command: &str, at: usize) -> ScreenState {
        let opts = [
            "Yes",
            "Yes, and don't ask again for this command",
            "No, and tell Claude what to do differently",
        ];
        let mut lines = vec![
            "────────────────────────────────────────".to_string(),
            " Bash command".to_string(),
            String::new(),
            format!("   {command}"),
            String::new(),
            " Do you want to proceed?".to_string(),
        ];
        for (i, o) in opts.iter().enumerate() {
            let ptr = if i == at { "❯" } else { " " };
            lines.push(format!(" {ptr} {}. {o}", i + 1));
        }
        let v = classify_text(&ScreenText::from_lines(lines));
        assert!(
            matches!(v, ScreenState::PermissionDialog(_)),
            "not a dialog: {v:?}"
        );
        v
    }

    fn ready() -> ScreenState {
        classify_text(&ScreenText::from_lines([
            "╭──────────────────────────────────────╮",
            "│ >                                    │",
            "╰──────────────────────────────────────╯",
        ]))
    }

    fn seen(verdict: &ScreenState, now: Instant, since: Option<Instant>) -> Seen<'_> {
        Seen {
            now,
            verdict,
            application_cursor: false,
            bracketed_paste: true,
            prompt_since: since,
            changed_at: None,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_settled_prompt_is_answered_at_once_and_done_when_it_goes() {
        let t0 = Instant::now();
        let p = prompt("echo hi", 0);
        let mut w = RespondWalk::new(None, RespondChoice::Yes, RespondTiming::default());
        // Shown a second ago: Enter now, no wait.
        let step = w.step(&seen(&p, t0, Some(t0 - ms(1000)))).expect("step");
        assert_eq!(step, Step::Send(b"\r".to_vec()));
        assert_eq!(
            w.step(&seen(&p, t0 + ms(5), None)),
            Ok(Step::Wait(t0 + ms(1500)))
        );
        assert!(w.answered().is_none());
        let r = ready();
        assert_eq!(w.step(&seen(&r, t0 + ms(20), None)), Ok(Step::Done));
        let a = w.answered().expect("answered");
        assert_eq!((a.arrows, a.enters, a.option.as_str()), (0, 1, "Yes"));
    }

    #[test]
    fn a_fresh_prompt_waits_for_the_settle_time_counted_from_when_it_showed() {
        let t0 = Instant::now();
        let p = prompt("echo hi", 0);
        let mut w = RespondWalk::new(None, RespondChoice::Yes, RespondTiming::default());
        // The holder saw it appear 100 ms ago: 300 ms to go.
        assert_eq!(
            w.step(&seen(&p, t0, Some(t0 - ms(100)))),
            Ok(Step::Wait(t0 + ms(300)))
        );
        // The daemon knows only its own first look.
        let mut d = RespondWalk::new(None, RespondChoice::Yes, RespondTiming::default());
        assert_eq!(d.step(&seen(&p, t0, None)), Ok(Step::Wait(t0 + ms(400))));
        assert_eq!(
            w.step(&seen(&p, t0 + ms(300), None)),
            Ok(Step::Send(b"\r".to_vec()))
        );
    }

    #[test]
    fn the_pointer_moves_one_arrow_at_a_time_each_seen_before_the_next() {
        let t0 = Instant::now();
        let mut w = RespondWalk::new(None, RespondChoice::No, RespondTiming::default());
        let at0 = prompt("rm x", 0);
        let down = w.step(&seen(&at0, t0, Some(t0 - ms(900)))).expect("arrow");
        assert_eq!(down, Step::Send(b"\x1b[B".to_vec()));
        // Not moved yet: wait, no second key.
        assert_eq!(
            w.step(&seen(&at0, t0 + ms(10), None)),
            Ok(Step::Wait(t0 + ms(1000)))
        );
        let at1 = prompt("rm x", 1);
        assert_eq!(
            w.step(&seen(&at1, t0 + ms(30), None)),
            Ok(Step::Send(b"\x1b[B".to_vec()))
        );
        let at2 = prompt("rm x", 2);
        assert_eq!(
            w.step(&seen(&at2, t0 + ms(60), None)),
            Ok(Step::Send(b"\r".to_vec()))
        );
        let a = {
            w.step(&seen(&ready(), t0 + ms(90), None)).expect("done");
            w.answered().expect("answered").clone()
        };
        assert_eq!((a.arrows, a.enters), (2, 1));
        assert!(a.option.starts_with("No"));
    }

    #[test]
    fn application_cursor_arrows_and_a_lost_arrow_pressed_once_more_then_given_up() {
        let t0 = Instant::now();
        let mut w = RespondWalk::new(None, RespondChoice::Always, RespondTiming::default());
        let at0 = prompt("ls", 0);
        let mut s = seen(&at0, t0, Some(t0 - ms(900)));
        s.application_cursor = true;
        assert_eq!(w.step(&s), Ok(Step::Send(b"\x1bOB".to_vec())));
        s.now = t0 + ms(1000);
        assert_eq!(w.step(&s), Ok(Step::Send(b"\x1bOB".to_vec())));
        s.now = t0 + ms(2000);
        assert_eq!(w.step(&s), Ok(Step::Wait(t0 + ms(4000))));
        s.now = t0 + ms(4000);
        assert!(matches!(
            w.step(&s),
            Err(WalkError::DidNotMove { arrows: 2, .. })
        ));
    }

    #[test]
    fn enter_is_pressed_again_only_on_the_option_and_only_so_often() {
        let t0 = Instant::now();
        let t = RespondTiming::default();
        let mut w = RespondWalk::new(None, RespondChoice::Yes, t);
        let p = prompt("echo hi", 0);
        assert_eq!(
            w.step(&seen(&p, t0, Some(t0 - ms(900)))),
            Ok(Step::Send(b"\r".to_vec()))
        );
        assert_eq!(
            w.step(&seen(&p, t0 + ms(1500), None)),
            Ok(Step::Send(b"\r".to_vec()))
        );
        // Someone moved the pointer: no Enter there, only the wait to give up.
        let moved = prompt("echo hi", 1);
        assert_eq!(
            w.step(&seen(&moved, t0 + ms(3100), None)),
            Ok(Step::Wait(t0 + ms(5000)))
        );
        assert!(matches!(
            w.step(&seen(&moved, t0 + ms(5000), None)),
            Err(WalkError::StillShown { enters: 2, .. })
        ));
    }

    #[test]
    fn another_prompt_or_none_types_nothing_and_a_change_midway_says_how_far() {
        let t0 = Instant::now();
        let p = prompt("echo hi", 0);
        let other = prompt("rm -rf build", 0);
        let id = |v: &ScreenState| dialog(v).expect("dialog").prompt_id();
        let mut w = RespondWalk::new(Some(id(&other)), RespondChoice::Yes, Default::default());
        match w.step(&seen(&p, t0, None)) {
            Err(WalkError::NotShown { expected, now, .. }) => {
                assert_eq!(expected, Some(id(&other)));
                assert_eq!(now, Some(id(&p)));
            }
            x => panic!("{x:?}"),
        }
        let mut w = RespondWalk::new(None, RespondChoice::Yes, Default::default());
        assert!(matches!(
            w.step(&seen(&ready(), t0, None)),
            Err(WalkError::NotShown {
                shows: "prompt",
                ..
            })
        ));
        // Replaced while settling: nothing typed yet.
        let mut w = RespondWalk::new(None, RespondChoice::No, Default::default());
        assert!(matches!(w.step(&seen(&p, t0, None)), Ok(Step::Wait(_))));
        assert!(matches!(
            w.step(&seen(&other, t0 + ms(100), None)),
            Err(WalkError::NotShown { .. })
        ));
        // Replaced after an arrow: says one arrow, Enter not pressed.
        let mut w = RespondWalk::new(None, RespondChoice::No, Default::default());
        assert!(matches!(
            w.step(&seen(&p, t0, Some(t0 - ms(500)))),
            Ok(Step::Send(_))
        ));
        match w.step(&seen(&other, t0 + ms(50), None)) {
            Err(WalkError::Moved { arrows: 1, now, .. }) => assert_eq!(now, Some(id(&other))),
            x => panic!("{x:?}"),
        }
    }

    #[test]
    fn a_prompt_without_the_option_types_nothing() {
        let v = classify_text(&ScreenText::from_lines([
            "────────────────────────────────────────",
            " Bash command",
            "",
            "   echo hi",
            "",
            " Do you want to proceed?",
            " ❯ 1. Yes",
            "   2. No",
        ]));
        let mut w = RespondWalk::new(None, RespondChoice::Always, Default::default());
        match w.step(&seen(&v, Instant::now(), None)) {
            Err(WalkError::NoOption { labels, .. }) => assert_eq!(labels, ["Yes", "No"]),
            x => panic!("{x:?}"),
        }
    }
}
