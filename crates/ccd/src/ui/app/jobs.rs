//! One job of a machine, run the same way for this machine's worker and
//! another machine's link: the call through a [`Caller`], the answer as
//! the [`Msg`] the main thread takes, and whether the connection is lost
//! (an error that is not the daemon's own answer).

use super::{Done, Job, Msg};
use crate::ui::data;
use crate::ui::view::{Preview, PreviewKind};
use ccd_client::{Caller, ClientError};

/// Where the preview of a session with no screen to show comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tails {
    /// The transcript file (this machine: no daemon needed).
    Files,
    /// `session.tail` (another machine: its files are there).
    Api,
}

/// What running a job gave.
pub(super) struct Ran {
    /// For the main thread (`None`: nothing to say, e.g. a quiet failure).
    pub msg: Option<Msg>,
    /// The connection failed under the call: drop it.
    pub lost: Option<String>,
}

/// Runs `job` for `host` through `client` (`None`: no daemon answers).
/// [`Job::Reload`] and [`Job::Lost`] are the caller's.
pub(super) fn run<C: Caller>(
    host: &str,
    job: Job,
    client: Option<&mut C>,
    tails: Tails,
    auto_trust: bool,
) -> Ran {
    let size = crate::term::raw::size();
    let mut lost = None;
    let mut note = |e: &ClientError| {
        if e.rpc().is_none() {
            lost = Some(e.to_string());
        }
        e.to_string()
    };
    let short = |s: &str| crate::shared::cells::short_id(s).to_string();
    let done = |m: String| Some(Msg::Done(host.to_string(), Done::Message(m)));
    let msg = match (job, client) {
        (Job::Reload | Job::Lost { .. }, _) => None,
        // Quiet: with no daemon the figures stay as the last listing
        // measured them; a failed call leaves them.
        (Job::Costs, None) => None,
        (
            Job::Search {
                generation, latest, ..
            },
            _,
        ) if latest.load(std::sync::atomic::Ordering::Relaxed) > generation => None,
        (
            Job::Search {
                generation, query, ..
            },
            c,
        ) => Some(Msg::Searched {
            host: host.to_string(),
            generation,
            result: match c {
                Some(c) => data::search(c, &query).map_err(|e| note(&e)),
                None => Err("the ccd daemon is not running".into()),
            },
        }),
        (Job::Complete(typed), Some(c)) => match data::complete_dir(c, &typed) {
            Ok((input, choices)) => Some(Msg::Completed {
                host: host.to_string(),
                typed,
                input,
                choices,
            }),
            Err(e) => done(format!("completing {typed}: {}", note(&e))),
        },
        (Job::Costs, Some(c)) => match data::costs(c) {
            Ok(costs) => Some(Msg::Costs(host.to_string(), costs)),
            Err(e) => {
                note(&e);
                None
            }
        },
        (
            Job::Preview {
                session,
                held,
                transcript,
            },
            c,
        ) => {
            let (kind, lines) = match (held, c, tails, transcript) {
                (true, Some(c), _, _) => match data::screen(c, &session) {
                    Ok(l) => (PreviewKind::Screen, l),
                    Err(e) => (PreviewKind::Note, vec![note(&e)]),
                },
                (false, Some(c), Tails::Api, _) => match data::tail(c, &session) {
                    Ok(l) if l.is_empty() => {
                        (PreviewKind::Note, vec!["(an empty transcript)".into()])
                    }
                    Ok(l) => (PreviewKind::Transcript, l),
                    Err(e) => (PreviewKind::Note, vec![note(&e)]),
                },
                (_, _, Tails::Files, Some(t)) => {
                    match data::transcript_tail(std::path::Path::new(&t)) {
                        Ok(l) if l.is_empty() => {
                            (PreviewKind::Note, vec!["(an empty transcript)".into()])
                        }
                        Ok(l) => (PreviewKind::Transcript, l),
                        Err(e) => (PreviewKind::Note, vec![format!("{t}: {e}")]),
                    }
                }
                (true, None, _, None) | (_, None, Tails::Api, _) => (
                    PreviewKind::Note,
                    vec!["the daemon is not answering".into()],
                ),
                (_, _, Tails::Files, None) => (PreviewKind::Note, vec!["no transcript yet".into()]),
            };
            Some(Msg::Preview(Preview::new(host, &session, kind, &lines)))
        }
        (_, None) => done("the ccd daemon is not running: nothing was done".into()),
        (
            Job::Respond {
                session,
                prompt,
                choice,
            },
            Some(c),
        ) => done(
            data::respond(c, &session, prompt.as_deref(), choice)
                .unwrap_or_else(|e| format!("{}: {}", short(&session), note(&e))),
        ),
        (Job::Kill(session), Some(c)) => done(
            data::kill(c, &session)
                .unwrap_or_else(|e| format!("{}: {}", short(&session), note(&e))),
        ),
        (Job::Fork(session), Some(c)) => match data::fork(c, &session, size) {
            Ok(Ok(s)) => Some(Msg::Done(host.to_string(), Done::Attach(s))),
            Ok(Err(why)) => done(format!("fork of {}: {why}", short(&session))),
            Err(e) => done(format!("fork of {}: {}", short(&session), note(&e))),
        },
        (Job::New(dir), Some(c)) => match data::new(c, &dir, auto_trust, size) {
            Ok(Ok(s)) => Some(Msg::Done(host.to_string(), Done::Attach(s))),
            Ok(Err(why)) => done(format!("new session: {why}")),
            Err(e) => done(format!("new session: {}", note(&e))),
        },
    };
    Ran { msg, lost }
}

/// The answer to `job` for a machine that cannot be reached (why): said
/// at once, nothing tried.
pub(super) fn refuse(host: &str, job: Job, why: &str) -> Option<Msg> {
    match job {
        Job::Reload | Job::Lost { .. } | Job::Costs | Job::Complete(_) => None,
        Job::Preview { session, .. } => {
            Some(Msg::Preview(unreachable_preview(host, &session, why)))
        }
        Job::Search { generation, .. } => Some(Msg::Searched {
            host: host.to_string(),
            generation,
            result: Err(format!("unreachable ({why})")),
        }),
        _ => Some(Msg::Done(
            host.to_string(),
            Done::Message(unreachable(host, why)),
        )),
    }
}

/// What a key on a row of an unreachable machine says (what matters
/// first: the line is clipped to the terminal's width).
pub(super) fn unreachable(host: &str, why: &str) -> String {
    format!("{host} is unreachable, nothing was done ({why})")
}

/// The preview of a row of an unreachable machine.
pub(super) fn unreachable_preview(host: &str, session: &str, why: &str) -> Preview {
    Preview::new(
        host,
        session,
        PreviewKind::Note,
        &[
            format!("{host} is unreachable: the row shows its last known state."),
            format!("why: {why}"),
        ],
    )
}
