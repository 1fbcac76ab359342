//! `session.respond`: answering the tool permission prompt a held session
//! shows, on a person's request.
//!
//! Nothing is pressed blind. The screen is read first: no permission
//! dialog, or another one than the caller named (`prompt`), and nothing is
//! typed. The option the answer means is found by its label
//! ([`ccd_screen::option_for`]); the pointer moves one arrow at a time, and
//! after each the screen must show the same prompt with the pointer one
//! step further; Enter is pressed only with the pointer on that option;
//! then the prompt must go. A screen that changes under the walk (the
//! prompt answered elsewhere, replaced) stops it with an error that says
//! what was typed so far.

use crate::connection::ConnCtx;
use crate::handlers::lifecycle::{held, send, shows, text_screen, type_bytes, wait_draft};
use crate::holders::HolderEntry;
use ccd_protocol::error_data::{NotAtPromptData, PromptNotShownData};
use ccd_protocol::methods::session::{RespondChoice, RespondParams, RespondResult, SendParams};
use ccd_protocol::{ErrorCode, RpcError};
use ccd_screen::{Answer, KeyMoves, PermissionDialog, PermissionDialogExt, ScreenState};
use std::time::{Duration, Instant};

/// How long one arrow press may take to show on the screen.
const MOVE_WAIT: Duration = Duration::from_secs(3);
/// How long the prompt may take to go after Enter.
const GONE_WAIT: Duration = Duration::from_secs(5);
/// How long a refused tool may take to bring the prompt back (`message`).
const PROMPT_WAIT: Duration = Duration::from_secs(10);
/// How often the screen is read while waiting.
const POLL: Duration = Duration::from_millis(30);

fn answer_of(c: RespondChoice) -> Answer {
    match c {
        RespondChoice::Yes => Answer::Yes,
        RespondChoice::Always => Answer::Always,
        RespondChoice::No => Answer::No,
    }
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(e.to_string())
}

/// The screen's permission dialog, with the verdict's word for the screen.
async fn dialog_on(
    entry: &HolderEntry,
) -> Result<(Option<PermissionDialog>, String, bool), RpcError> {
    let s = text_screen(entry).await?;
    let app_cursor = s.modes.application_cursor;
    Ok(match s.verdict {
        ScreenState::PermissionDialog(d) => (Some(d), "permission_dialog".into(), app_cursor),
        other => (None, shows(&other), app_cursor),
    })
}

fn not_shown(sid: &str, shows: &str, expected: Option<&str>, now: Option<&str>) -> RpcError {
    let what = match (expected, now) {
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
    RpcError::new(ErrorCode::PromptNotShown, what).with_data_of(&PromptNotShownData {
        session: sid.to_string(),
        shows: shows.to_string(),
        expected: expected.map(String::from),
        prompt: now.map(String::from),
    })
}

/// `session.respond` (see the module doc).
pub async fn respond(ctx: &ConnCtx, p: RespondParams) -> Result<RespondResult, RpcError> {
    if p.message.is_some() && p.choice != RespondChoice::No {
        return Err(RpcError::invalid_params(
            "message goes with choice \"no\" (what Claude should do instead)",
        ));
    }
    let entry = held(ctx, &p.session).await?;
    let sid = entry.session_id().unwrap_or(&entry.id).to_string();
    let (dialog, what, app_cursor) = dialog_on(&entry).await?;
    let Some(dialog) = dialog else {
        return Err(not_shown(&sid, &what, p.prompt.as_deref(), None));
    };
    let prompt = dialog.prompt_id();
    if p.prompt.as_deref().is_some_and(|want| want != prompt) {
        return Err(not_shown(&sid, &what, p.prompt.as_deref(), Some(&prompt)));
    }
    let answer = answer_of(p.choice);
    let Some(target) = dialog.option_for(answer) else {
        return Err(RpcError::invalid_params(format!(
            "permission prompt {prompt} of session {sid} has no option for {:?} (its options: {}); nothing was typed",
            p.choice,
            dialog.labels().join(" | ")
        )));
    };
    let option = dialog.options[target].label.clone();
    let mut at = dialog.selected.ok_or_else(|| {
        RpcError::internal(format!(
            "cannot tell which option of permission prompt {prompt} is selected; nothing was typed"
        ))
    })?;
    // One arrow at a time, each seen on the screen before the next.
    let mut pressed = 0usize;
    while at != target {
        let step = KeyMoves::between(at, target).key;
        type_bytes(&entry, step.bytes(app_cursor)).await?;
        pressed += 1;
        at = wait_moved(&entry, &sid, &prompt, at, pressed).await?;
    }
    type_bytes(&entry, b"\r").await?;
    wait_gone(&entry, &sid, &prompt).await?;
    tracing::info!(holder = %entry.id, session = %sid, prompt = %prompt, choice = ?p.choice, option = %option, arrows = pressed, "session.respond");
    let message_submitted = match p.message {
        Some(text) => Some(send_after(ctx, &entry, &sid, text).await?),
        None => None,
    };
    Ok(RespondResult {
        session: sid,
        prompt,
        choice: p.choice,
        option,
        message_submitted,
    })
}

/// Waits for the pointer to leave `from` on the same prompt; its new place.
async fn wait_moved(
    entry: &HolderEntry,
    sid: &str,
    prompt: &str,
    from: usize,
    pressed: usize,
) -> Result<usize, RpcError> {
    let deadline = Instant::now() + MOVE_WAIT;
    loop {
        let (dialog, what, _) = dialog_on(entry).await?;
        let moved_away = |now: Option<&str>| {
            RpcError::new(
                ErrorCode::PromptNotShown,
                format!(
                    "permission prompt {prompt} of session {sid} went or changed while ccd moved to the option ({pressed} arrow key(s) pressed, Enter not pressed)"
                ),
            )
            .with_data_of(&PromptNotShownData {
                session: sid.to_string(),
                shows: what.clone(),
                expected: Some(prompt.to_string()),
                prompt: now.map(String::from),
            })
        };
        match dialog {
            Some(d) if d.prompt_id() != prompt => return Err(moved_away(Some(&d.prompt_id()))),
            Some(d) => {
                if let Some(now) = d.selected.filter(|s| *s != from) {
                    return Ok(now);
                }
            }
            None => return Err(moved_away(None)),
        }
        if Instant::now() > deadline {
            return Err(internal(format!(
                "the pointer of permission prompt {prompt} did not move within {} s ({pressed} arrow key(s) pressed, Enter not pressed)",
                MOVE_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits for `prompt` to leave the screen after Enter.
async fn wait_gone(entry: &HolderEntry, sid: &str, prompt: &str) -> Result<(), RpcError> {
    let deadline = Instant::now() + GONE_WAIT;
    loop {
        let (dialog, _, _) = dialog_on(entry).await?;
        if dialog.is_none_or(|d| d.prompt_id() != prompt) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(internal(format!(
                "Enter was pressed on permission prompt {prompt} of session {sid}, but it is still shown after {} s",
                GONE_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// After a refusal: waits for the prompt, then sends `text` as the next
/// prompt (checked like `session.send`). Whether it was submitted.
async fn send_after(
    ctx: &ConnCtx,
    entry: &HolderEntry,
    sid: &str,
    text: String,
) -> Result<bool, RpcError> {
    let (back, _) = wait_draft(entry, PROMPT_WAIT, |d| d.is_some()).await?;
    if !back {
        let s = text_screen(entry).await?;
        return Err(RpcError::new(
            ErrorCode::NotAtPrompt,
            format!(
                "the prompt was refused, but session {sid} did not come back to its prompt within {} s (the screen shows {}); the message was not sent",
                PROMPT_WAIT.as_secs(),
                shows(&s.verdict)
            ),
        )
        .with_data_of(&NotAtPromptData {
            session: sid.to_string(),
            shows: shows(&s.verdict),
            screen: s.rows.iter().map(|r| r.trim_end().to_string()).collect(),
        }));
    }
    let r = send(
        ctx,
        SendParams {
            session: sid.to_string(),
            text,
            force: false,
        },
    )
    .await?;
    Ok(r.submitted.unwrap_or(false))
}
