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
//!
//! The CLI draws a dialog before it reads keys (an Enter sent the moment
//! 2.1.332 showed its dialog was lost, under load): the walk starts once
//! the prompt has been on screen for [`SETTLE`], and a key whose effect
//! does not show is pressed again, a bounded number of times, only while
//! the screen still shows the same prompt in the same place.

use crate::connection::ConnCtx;
use crate::handlers::lifecycle::{
    held, send, shows, text_screen, text_within_bound, type_bytes, wait_draft,
};
use crate::holders::HolderEntry;
use ccd_protocol::error_data::{NotAtPromptData, PromptNotShownData};
use ccd_protocol::methods::session::{RespondChoice, RespondParams, RespondResult, SendParams};
use ccd_protocol::{ErrorCode, RpcError};
use ccd_screen::{Answer, KeyMoves, PermissionDialog, PermissionDialogExt, ScreenState};
use std::time::{Duration, Instant};

/// How long one arrow press may take to show on the screen.
const MOVE_WAIT: Duration = Duration::from_secs(3);
/// After this long without the pointer moving, the arrow is pressed once
/// more (a key read before the dialog's input handler is live is lost;
/// a late first press only moves the pointer further, and the walk
/// corrects it, since Enter waits for the pointer on the option).
const MOVE_RETRY: Duration = Duration::from_millis(1000);
/// How long the prompt may take to go after Enter.
const GONE_WAIT: Duration = Duration::from_secs(5);
/// Enter is pressed again while the same prompt stays with the pointer on
/// the option after this long, at most [`ENTER_TRIES`] times in all.
const ENTER_RETRY: Duration = Duration::from_millis(1500);
/// Enter presses at most.
const ENTER_TRIES: usize = 3;
/// A prompt must have been on the screen this long before the first key:
/// the CLI draws a dialog before its input handler is live (seen on
/// 2.1.332 under load: an Enter right after the dialog appeared was lost).
const SETTLE: Duration = Duration::from_millis(400);
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
    prompt_not_shown(what, sid, shows, expected, now)
}

/// `prompt_not_shown` saying `message`, with its data.
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

/// `session.respond` (see the module doc).
pub async fn respond(ctx: &ConnCtx, p: RespondParams) -> Result<RespondResult, RpcError> {
    if p.message.is_some() && p.choice != RespondChoice::No {
        return Err(RpcError::invalid_params(
            "message goes with choice \"no\" (what Claude should do instead)",
        ));
    }
    if let Some(m) = &p.message {
        text_within_bound("message", m)?;
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
    settle(&entry, &sid, &prompt).await?;
    // One arrow at a time, each seen on the screen before the next.
    let mut pressed = 0usize;
    while at != target {
        let key = KeyMoves::between(at, target).key.bytes(app_cursor);
        type_bytes(&entry, key).await?;
        pressed += 1;
        at = match wait_moved(&entry, &sid, &prompt, at, pressed, MOVE_RETRY).await? {
            Some(now) => now,
            None => {
                type_bytes(&entry, key).await?;
                pressed += 1;
                wait_moved(&entry, &sid, &prompt, at, pressed, MOVE_WAIT)
                    .await?
                    .ok_or_else(|| {
                        internal(format!(
                            "the pointer of permission prompt {prompt} did not move ({pressed} arrow key(s) pressed, Enter not pressed)"
                        ))
                    })?
            }
        };
    }
    enter_until_gone(&entry, &sid, &prompt, target).await?;
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

/// Waits until `prompt` has stayed on the screen for [`SETTLE`] (it may
/// have appeared just now).
async fn settle(entry: &HolderEntry, sid: &str, prompt: &str) -> Result<(), RpcError> {
    let since = Instant::now();
    loop {
        let (dialog, what, _) = dialog_on(entry).await?;
        match dialog {
            Some(d) if d.prompt_id() == prompt => {}
            other => {
                let now = other.map(|d| d.prompt_id());
                return Err(not_shown(sid, &what, Some(prompt), now.as_deref()));
            }
        }
        if since.elapsed() >= SETTLE {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits up to `wait` for the pointer to leave `from` on the same prompt:
/// its new place, or `None` when it did not move.
async fn wait_moved(
    entry: &HolderEntry,
    sid: &str,
    prompt: &str,
    from: usize,
    pressed: usize,
    wait: Duration,
) -> Result<Option<usize>, RpcError> {
    let deadline = Instant::now() + wait;
    loop {
        let (dialog, what, _) = dialog_on(entry).await?;
        let moved_away = |now: Option<&str>| {
            prompt_not_shown(
                format!(
                    "permission prompt {prompt} of session {sid} went or changed while ccd moved to the option ({pressed} arrow key(s) pressed, Enter not pressed)"
                ),
                sid,
                &what,
                Some(prompt),
                now,
            )
        };
        match dialog {
            Some(d) if d.prompt_id() != prompt => return Err(moved_away(Some(&d.prompt_id()))),
            Some(d) => {
                if let Some(now) = d.selected.filter(|s| *s != from) {
                    return Ok(Some(now));
                }
            }
            None => return Err(moved_away(None)),
        }
        if Instant::now() > deadline {
            return Ok(None);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Presses Enter with the pointer on `target` and waits for `prompt` to
/// leave the screen; presses again (at most [`ENTER_TRIES`] in all) only
/// while the same prompt stays with the pointer still on `target`.
async fn enter_until_gone(
    entry: &HolderEntry,
    sid: &str,
    prompt: &str,
    target: usize,
) -> Result<(), RpcError> {
    let deadline = Instant::now() + GONE_WAIT;
    let mut presses = 0usize;
    let mut pressed_at = Instant::now();
    loop {
        let (dialog, _, _) = dialog_on(entry).await?;
        let still = dialog.filter(|d| d.prompt_id() == prompt);
        let Some(d) = still else {
            return Ok(());
        };
        let due = presses == 0 || pressed_at.elapsed() >= ENTER_RETRY;
        if due && presses < ENTER_TRIES && d.selected == Some(target) {
            type_bytes(entry, b"\r").await?;
            presses += 1;
            pressed_at = Instant::now();
        } else if Instant::now() > deadline {
            return Err(internal(format!(
                "Enter was pressed {presses} time(s) on permission prompt {prompt} of session {sid}, but it is still shown after {} s",
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
