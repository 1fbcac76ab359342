//! Why a walk stopped, and what the client that asked for it gets: the same
//! codes, messages and `data` whichever driver ran the walk (the holder's
//! or the daemon's for an older holder). The trust step's stops are no
//! client's answer: the lifecycle shows them as the session's
//! `needs_attention` ([`WalkError::attention`]).

use ccd_protocol::error_data::{NotAtPromptData, PromptNotShownData};
use ccd_protocol::holder::AttentionReason;
use ccd_protocol::methods::session::RespondChoice;
use ccd_protocol::{ErrorCode, RpcError};

/// Why a walk stopped before its end. Every variant says how far it got:
/// "nothing was typed" is only said when nothing was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// No permission prompt on the screen, or another than the caller
    /// named; nothing was typed.
    #[error("permission prompt not shown (expected {expected:?}, on screen {now:?})")]
    NotShown {
        /// The prompt the caller named (or the walk had seen).
        expected: Option<String>,
        /// The prompt on screen now, if any.
        now: Option<String>,
        /// What the screen shows.
        shows: &'static str,
    },
    /// The prompt has no option meaning the answer; nothing was typed.
    #[error("permission prompt {prompt} has no option for {choice:?}")]
    NoOption {
        /// The prompt.
        prompt: String,
        /// The answer asked for.
        choice: RespondChoice,
        /// Its options.
        labels: Vec<String>,
    },
    /// No option carries the pointer; nothing was typed.
    #[error("no option of permission prompt {prompt} is selected")]
    NoSelection {
        /// The prompt.
        prompt: String,
    },
    /// The prompt went or changed while the pointer moved; Enter was not
    /// pressed.
    #[error("permission prompt {prompt} went or changed after {arrows} arrow key(s)")]
    Moved {
        /// The prompt.
        prompt: String,
        /// Arrows pressed.
        arrows: u32,
        /// The prompt on screen now, if any.
        now: Option<String>,
        /// What the screen shows.
        shows: &'static str,
    },
    /// The pointer did not move after an arrow pressed twice; Enter was
    /// not pressed.
    #[error("the pointer of permission prompt {prompt} did not move")]
    DidNotMove {
        /// The prompt.
        prompt: String,
        /// Arrows pressed.
        arrows: u32,
    },
    /// The prompt stayed after Enter (pressed at most the bound's times).
    #[error("permission prompt {prompt} still shown after {enters} Enter(s)")]
    StillShown {
        /// The prompt.
        prompt: String,
        /// Enters pressed.
        enters: u32,
        /// How long it was given, in seconds.
        waited_secs: u64,
    },
    /// `holder.submit` away from the input prompt, without `force`;
    /// nothing was typed.
    #[error("not at the input prompt (the screen shows {shows})")]
    NotAtPrompt {
        /// What the screen shows.
        shows: &'static str,
    },
    /// The text holds nothing but escape sequences and controls; nothing
    /// was typed.
    #[error("only escape sequences and controls ({removed} removed)")]
    OnlyControls {
        /// Characters removed.
        removed: u64,
    },
    /// A refusal's message: the input prompt did not come back after the
    /// refusal, so the message was not sent.
    #[error("the input prompt did not come back within {waited_secs} s")]
    NotBack {
        /// How long it was given, in seconds.
        waited_secs: u64,
        /// What the screen shows.
        shows: &'static str,
    },
    /// The trust step: the classifier cannot tell the way to the trust
    /// option; nothing was typed since.
    #[error("the trust dialog is ambiguous: {detail}")]
    TrustAmbiguous {
        /// What the classifier could not tell.
        detail: String,
    },
    /// The trust step: the pointer was not verified on the trust option
    /// within the bound of key presses, or the screen never settled after
    /// a key; Enter was not pressed on an unverified option.
    #[error("the trust option was not verified: {detail}")]
    TrustUnverified {
        /// Why.
        detail: String,
    },
}

/// The word a screen showing a permission prompt gets in a walk's errors
/// (kept from the first release of `session.respond`).
pub(crate) const DIALOG_SHOWN: &str = "permission_dialog";

fn prompt_not_shown(
    message: String,
    sid: &str,
    shows: &str,
    expected: Option<&str>,
    now: Option<&str>,
) -> RpcError {
    RpcError::new(ErrorCode::PromptNotShown, message).with_data_of(&PromptNotShownData {
        session: sid.to_string(),
        shows: shows.to_string(),
        expected: expected.map(String::from),
        prompt: now.map(String::from),
    })
}

fn not_at_prompt(message: String, sid: &str, shows: &str, rows: &[String]) -> RpcError {
    RpcError::new(ErrorCode::NotAtPrompt, message).with_data_of(&NotAtPromptData {
        session: sid.to_string(),
        shows: shows.to_string(),
        screen: rows.iter().map(|r| r.trim_end().to_string()).collect(),
    })
}

impl WalkError {
    /// What a person must look at when the trust step stopped (`None` for
    /// the stops of the walks a client asked for, which the client gets).
    pub fn attention(&self) -> Option<AttentionReason> {
        match self {
            WalkError::TrustAmbiguous { detail } => Some(AttentionReason::TrustAmbiguous {
                detail: detail.clone(),
            }),
            WalkError::TrustUnverified { detail } => Some(AttentionReason::TrustUnverified {
                detail: detail.clone(),
            }),
            _ => None,
        }
    }

    /// What the client gets for session `sid`, whose screen's rows are
    /// `rows` now (the `data` of a `not_at_prompt`).
    pub fn into_rpc(self, sid: &str, rows: &[String]) -> RpcError {
        match self {
            WalkError::NotShown {
                expected,
                now,
                shows,
            } => {
                let message = match (&expected, &now) {
                    (Some(e), Some(n)) => format!(
                        "session {sid} shows permission prompt {n}, not {e} (answered meanwhile, or another replaced it); nothing was typed"
                    ),
                    (Some(e), None) => format!(
                        "session {sid} shows no permission prompt (the screen shows {shows}); prompt {e} was answered or went; nothing was typed"
                    ),
                    (None, _) => format!(
                        "session {sid} shows no permission prompt (the screen shows {shows}); nothing was typed"
                    ),
                };
                prompt_not_shown(message, sid, shows, expected.as_deref(), now.as_deref())
            }
            WalkError::NoOption {
                prompt,
                choice,
                labels,
            } => RpcError::invalid_params(format!(
                "permission prompt {prompt} of session {sid} has no option for {choice:?} (its options: {}); nothing was typed",
                labels.join(" | ")
            )),
            WalkError::NoSelection { prompt } => RpcError::internal(format!(
                "cannot tell which option of permission prompt {prompt} is selected; nothing was typed"
            )),
            WalkError::Moved {
                prompt,
                arrows,
                now,
                shows,
            } => prompt_not_shown(
                format!(
                    "permission prompt {prompt} of session {sid} went or changed while ccd moved to the option ({arrows} arrow key(s) pressed, Enter not pressed)"
                ),
                sid,
                shows,
                Some(&prompt),
                now.as_deref(),
            ),
            WalkError::DidNotMove { prompt, arrows } => RpcError::internal(format!(
                "the pointer of permission prompt {prompt} did not move ({arrows} arrow key(s) pressed, Enter not pressed)"
            )),
            WalkError::StillShown {
                prompt,
                enters,
                waited_secs,
            } => RpcError::internal(format!(
                "Enter was pressed {enters} time(s) on permission prompt {prompt} of session {sid}, but it is still shown after {waited_secs} s"
            )),
            WalkError::NotAtPrompt { shows } => not_at_prompt(
                format!("session {sid} is not at its prompt (the screen shows {shows}); nothing was typed. Use force to type anyway"),
                sid,
                shows,
                rows,
            ),
            WalkError::OnlyControls { removed } => RpcError::invalid_params(format!(
                "the text holds only white space, line breaks, escape sequences and control characters ({removed} removed): nothing to submit; nothing was typed"
            )),
            WalkError::NotBack { waited_secs, shows } => not_at_prompt(
                format!(
                    "the prompt was refused, but session {sid} did not come back to its prompt within {waited_secs} s (the screen shows {shows}); the message was not sent"
                ),
                sid,
                shows,
                rows,
            ),
            e @ (WalkError::TrustAmbiguous { .. } | WalkError::TrustUnverified { .. }) => {
                RpcError::internal(format!("session {sid}: {e}"))
            }
        }
    }
}
