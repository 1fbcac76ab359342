//! Submitting a prompt, sans IO: type a text into the input box as text
//! and submit it, only at the input prompt (unless forced).
//!
//! Each step is confirmed on the screen, never assumed: the text is typed
//! (controls removed, inside a bracketed paste when the session has it:
//! [`ccd_claude::typing`]), Enter is pressed once the draft shows it (or
//! after [`SubmitTiming::draft_wait`], said in the outcome), and pressed
//! again (up to [`SubmitTiming::tries`] in all) while the same draft stays
//! in the box. An Enter on an empty prompt does nothing in Claude Code, so
//! a repeat that races a slow redraw cannot submit twice.

use std::time::{Duration, Instant};

use ccd_claude::typing;

use super::{draft_of, Seen, Step, WalkError};

/// The walk's times and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitTiming {
    /// How long the typed text may take to show in the draft.
    pub draft_wait: Duration,
    /// How long one Enter may take to clear the draft before it is pressed
    /// again.
    pub submit_wait: Duration,
    /// Enter presses at most (a busy TUI may read a quick Enter as part of
    /// the paste, or drop it while it still lays the paste out).
    pub tries: u32,
    /// Forced past a screen that is not the prompt: the gap between the
    /// text and its Enter (nothing can be checked).
    pub forced_gap: Duration,
}

impl Default for SubmitTiming {
    fn default() -> Self {
        Self {
            draft_wait: Duration::from_secs(5),
            submit_wait: Duration::from_millis(1500),
            tries: 3,
            forced_gap: Duration::from_millis(80),
        }
    }
}

/// What was typed and whether it was submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// Bytes written (text, paste markers, Enters).
    pub bytes: u64,
    /// Whether the draft left the box; `None` when forced past a screen
    /// that was not the prompt.
    pub submitted: Option<bool>,
    /// Characters of the text not typed.
    pub removed: u64,
    /// Enter presses.
    pub enters: u32,
    /// The typed text showed in the draft before the first Enter.
    pub draft_shown: bool,
}

impl Submitted {
    /// `holder.submit`'s result (whichever side drove the walk).
    pub fn on_the_wire(&self) -> ccd_protocol::holder::SubmitResult {
        ccd_protocol::holder::SubmitResult {
            bytes: self.bytes,
            submitted: self.submitted,
            removed: self.removed,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Start,
    /// Forced: typed at this instant, Enter after the gap.
    Forced(Instant),
    /// Typed at this instant; the draft was `before`.
    Typed {
        at: Instant,
        before: String,
    },
    /// Enter pressed with `draft` in the box.
    Submitting {
        pressed_at: Instant,
        draft: String,
    },
    Done,
}

/// One text typed and submitted, walked step by step.
#[derive(Debug, Clone)]
pub struct SubmitWalk {
    t: SubmitTiming,
    text: String,
    force: bool,
    phase: Phase,
    out: Submitted,
}

impl SubmitWalk {
    /// A walk to submit `text` (anywhere when `force`).
    pub fn new(text: String, force: bool, t: SubmitTiming) -> Self {
        Self {
            t,
            text,
            force,
            phase: Phase::Start,
            out: Submitted {
                bytes: 0,
                submitted: None,
                removed: 0,
                enters: 0,
                draft_shown: false,
            },
        }
    }

    /// The outcome, once [`Step::Done`] came.
    pub fn submitted(&self) -> Option<&Submitted> {
        (self.phase == Phase::Done).then_some(&self.out)
    }

    fn enter(&mut self) -> Step {
        self.out.enters += 1;
        self.out.bytes += 1;
        Step::Send(b"\r".to_vec())
    }

    /// One step on what the screen shows now.
    pub fn step(&mut self, seen: &Seen) -> Result<Step, WalkError> {
        let now = seen.now;
        let draft = draft_of(seen.verdict);
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Start => {
                if draft.is_none() && !self.force {
                    return Err(WalkError::NotAtPrompt {
                        shows: seen.verdict.shows(),
                    });
                }
                let typed = typing::as_text(&self.text, seen.bracketed_paste);
                // Nothing to submit (the daemon refuses it first; a text
                // of blanks typed here would stay in the box and join the
                // next prompt).
                if typed.text.trim().is_empty() {
                    return Err(WalkError::OnlyControls {
                        removed: typed.removed,
                    });
                }
                self.out.removed = typed.removed;
                self.out.bytes = typed.bytes.len() as u64;
                self.phase = match draft {
                    None => Phase::Forced(now),
                    Some(before) => Phase::Typed {
                        at: now,
                        before: before.to_string(),
                    },
                };
                Ok(Step::Send(typed.bytes))
            }
            Phase::Forced(at) => {
                if now < at + self.t.forced_gap {
                    self.phase = Phase::Forced(at);
                    return Ok(Step::Wait(at + self.t.forced_gap));
                }
                self.phase = Phase::Done;
                Ok(self.enter())
            }
            Phase::Typed { at, before } => {
                let shown = draft.is_some_and(|d| d != before);
                if !shown && now < at + self.t.draft_wait {
                    self.phase = Phase::Typed { at, before };
                    return Ok(Step::Wait(at + self.t.draft_wait));
                }
                self.out.draft_shown = shown;
                self.phase = Phase::Submitting {
                    pressed_at: now,
                    draft: draft.unwrap_or(&before).to_string(),
                };
                Ok(self.enter())
            }
            Phase::Submitting {
                pressed_at,
                draft: typed,
            } => {
                // Submitted: the prompt went (a turn runs) or its draft changed.
                if draft.is_none_or(|d| d != typed) {
                    self.out.submitted = Some(true);
                    return Ok(Step::Done);
                }
                if now < pressed_at + self.t.submit_wait {
                    self.phase = Phase::Submitting {
                        pressed_at,
                        draft: typed,
                    };
                    return Ok(Step::Wait(pressed_at + self.t.submit_wait));
                }
                if self.out.enters < self.t.tries {
                    self.phase = Phase::Submitting {
                        pressed_at: now,
                        draft: typed,
                    };
                    return Ok(self.enter());
                }
                self.out.submitted = Some(false);
                Ok(Step::Done)
            }
            Phase::Done => Ok(Step::Done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_screen::{classify_text, ScreenState, ScreenText};

    fn prompt_with(draft: &str) -> ScreenState {
        let v = classify_text(&ScreenText::from_lines([
            "╭──────────────────────────────────────╮".to_string(),
            format!("│ > {draft:<35}│"),
            "╰──────────────────────────────────────╯".to_string(),
        ]));
        assert!(matches!(v, ScreenState::Ready(_)), "not the prompt: {v:?}");
        v
    }

    fn seen(verdict: &ScreenState, now: Instant) -> Seen<'_> {
        Seen {
            now,
            verdict,
            application_cursor: false,
            bracketed_paste: true,
            prompt_since: None,
            changed_at: None,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn typed_as_a_paste_entered_once_the_draft_shows_it_done_when_it_leaves() {
        let t0 = Instant::now();
        let mut w = SubmitWalk::new("hello\x1b[201~there".into(), false, Default::default());
        let empty = prompt_with("");
        let Ok(Step::Send(bytes)) = w.step(&seen(&empty, t0)) else {
            panic!("types first");
        };
        assert_eq!(bytes, b"\x1b[200~hellothere\x1b[201~".to_vec());
        assert_eq!(
            w.step(&seen(&empty, t0 + ms(5))),
            Ok(Step::Wait(t0 + ms(5000)))
        );
        let typed = prompt_with("hellothere");
        assert_eq!(
            w.step(&seen(&typed, t0 + ms(20))),
            Ok(Step::Send(b"\r".to_vec()))
        );
        assert_eq!(
            w.step(&seen(&typed, t0 + ms(25))),
            Ok(Step::Wait(t0 + ms(1520)))
        );
        assert_eq!(w.step(&seen(&empty, t0 + ms(40))), Ok(Step::Done));
        let out = w.submitted().expect("done");
        assert_eq!(out.submitted, Some(true));
        assert_eq!(out.enters, 1);
        assert!(out.draft_shown);
        assert_eq!(out.bytes, bytes.len() as u64 + 1);
        assert_eq!(out.removed, 6, "ESC [ 2 0 1 ~: {out:?}");
    }

    #[test]
    fn enter_is_pressed_again_while_the_draft_stays_then_given_up() {
        let t0 = Instant::now();
        let mut w = SubmitWalk::new("hi".into(), false, Default::default());
        let empty = prompt_with("");
        let typed = prompt_with("hi");
        assert!(matches!(w.step(&seen(&empty, t0)), Ok(Step::Send(_))));
        assert!(matches!(w.step(&seen(&typed, t0)), Ok(Step::Send(_))));
        assert!(matches!(
            w.step(&seen(&typed, t0 + ms(1500))),
            Ok(Step::Send(_))
        ));
        assert!(matches!(
            w.step(&seen(&typed, t0 + ms(3000))),
            Ok(Step::Send(_))
        ));
        assert_eq!(w.step(&seen(&typed, t0 + ms(4500))), Ok(Step::Done));
        let out = w.submitted().expect("done");
        assert_eq!((out.submitted, out.enters), (Some(false), 3));
    }

    #[test]
    fn away_from_the_prompt_nothing_is_typed_unless_forced() {
        let t0 = Instant::now();
        let busy = ScreenState::Unknown {
            blocking_hint: None,
        };
        let mut w = SubmitWalk::new("hi".into(), false, Default::default());
        assert_eq!(
            w.step(&seen(&busy, t0)),
            Err(WalkError::NotAtPrompt { shows: "unknown" })
        );
        let mut w = SubmitWalk::new("hi".into(), true, Default::default());
        let mut s = seen(&busy, t0);
        s.bracketed_paste = false;
        assert_eq!(w.step(&s), Ok(Step::Send(b"hi".to_vec())));
        s.now = t0 + ms(10);
        assert_eq!(w.step(&s), Ok(Step::Wait(t0 + ms(80))));
        s.now = t0 + ms(80);
        assert_eq!(w.step(&s), Ok(Step::Send(b"\r".to_vec())));
        assert_eq!(w.submitted().map(|o| o.submitted), Some(None));
    }

    #[test]
    fn a_text_of_controls_or_blanks_only_types_nothing() {
        for text in ["\x1b[Z\r", "   ", "\t", "", "\n\n\n"] {
            let mut w = SubmitWalk::new(text.into(), false, Default::default());
            assert!(
                matches!(
                    w.step(&seen(&prompt_with(""), Instant::now())),
                    Err(WalkError::OnlyControls { .. })
                ),
                "{text:?}"
            );
        }
    }
}
