//! What the dashboard asks for off its main thread: the listing (as
//! `ccd ls` builds it: Claude Code's files through the transcript summary
//! cache, joined with the sessions the daemon holds, the archived ones,
//! each conversation's tokens and dollars; another machine's through its
//! daemon's `sessions.list`), a preview (a held session's
//! screen, else the transcript's tail rendered like `ccd observe`: read
//! from the file here, through `session.tail` elsewhere), and the actions
//! (`session.respond`, `session.kill`, `session.fork`, `session.new`), the
//! content search (`sessions.search`),
//! each a typed call through any [`Caller`] (a connection of its own, or
//! the one a machine's link shares).

use crate::cli::GlobalArgs;
use crate::settings::Settings;
use anyhow::Context;
use ccd_claude::context::ContextWindows;
use ccd_claude::transcript::follow::Follower;
use ccd_claude::transcript::render::render_line;
use ccd_claude::ClaudeConfigDir;
use ccd_client::{Caller, ClientError};
use ccd_protocol::methods::session::{
    ForkParams, KillParams, KillSignal, ListParams, NewParams, RespondChoice, RespondParams,
    ScreenFormat, ScreenParams, SearchParams, SearchResult, SessionCost, SessionFork, SessionInfo,
    SessionKill, SessionNew, SessionRespond, SessionScreen, SessionTail, SessionsSearch,
    TailParams,
};
use std::collections::HashMap;
use std::path::Path;

/// How many transcript items a dead or external session's preview reads
/// (the follower reads a bounded tail window for them).
pub const PREVIEW_ITEMS: usize = 60;

/// Every session, as `ccd ls` lists it: the index from Claude Code's files
/// (through the summary cache: unchanged transcripts are only stat'ed)
/// with the sessions `client`'s daemon holds joined in by the daemon's own
/// rule. Without a client (no daemon), the files alone.
pub fn listing<C: Caller + Send>(
    global: &GlobalArgs,
    client: Option<&mut C>,
) -> anyhow::Result<Vec<SessionInfo>> {
    let settings = Settings::load(global.config.as_deref())?;
    let config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let probe = ccd_claude::liveness::system_probe();
    let windows = ContextWindows::new(settings.context_windows.clone());
    let cache = crate::settings::state_dir();
    // The daemon is asked while the index is built (as `ccd ls` does).
    let (held, idx) = std::thread::scope(|s| {
        let asked = s.spawn(move || {
            client
                .map(|c| crate::shared::listing::held_and_costs(c, true))
                .transpose()
        });
        let idx = ccd_claude::index::build_cached(&config, probe.as_ref(), &windows, Some(&cache));
        let held = asked
            .join()
            .unwrap_or_else(|_| Err(ClientError::Protocol("the listing thread panicked".into())));
        (held, idx)
    });
    let held = held?;
    let idx = idx.with_context(|| format!("reading sessions under {}", config.root().display()))?;
    let rows: Vec<SessionInfo> = idx
        .sessions
        .iter()
        .map(ccd_daemon::views::record_to_info)
        .collect();
    let mut rows = match held {
        Some((h, costs)) => {
            let mut rows = ccd_daemon::views::join_held(rows, h.sessions);
            if let Some(costs) = costs {
                crate::shared::listing::put_costs(&mut rows, &costs);
            }
            rows
        }
        None => {
            let mut rows = rows;
            let here = crate::shared::listing::costs_here(&rows);
            crate::shared::listing::put_costs(&mut rows, &here);
            rows
        }
    };
    // Archived conversations (state `archived`) and what each
    // conversation cost, as `ccd ls` lists them.
    let archived = ccd_daemon::views::archived_info(&cache.join("archive"));
    rows = ccd_daemon::views::with_archived(rows, archived);
    put_usage_here(&settings, &config, &mut rows);
    Ok(rows)
}

/// The last usage read here, and the transcripts' fingerprint then
/// (`ccd_daemon::usage::fingerprint_blocking`): a listing that finds them
/// as they were reuses it (no cache decoded, no report; the listing runs
/// on the loader thread at most once a `RELOAD_EVERY`).
type UsageMemo = Option<(
    u64,
    HashMap<String, ccd_protocol::methods::session::SessionUsage>,
)>;
static USAGE_HERE: std::sync::Mutex<UsageMemo> = std::sync::Mutex::new(None);

/// Fills this machine's rows' `usage` (`shared::listing::usage_here`).
fn put_usage_here(settings: &Settings, config: &ClaudeConfigDir, rows: &mut [SessionInfo]) {
    let now = ccd_daemon::usage::fingerprint_blocking(config.root());
    let mut memo = USAGE_HERE.lock().unwrap_or_else(|p| p.into_inner());
    if memo.as_ref().is_none_or(|(f, _)| *f != now) {
        let (by, bad_prices) = crate::shared::listing::usage_here(settings, config);
        if let Some(e) = bad_prices {
            tracing::warn!(error = %e, "the config's [prices] are not used: the built-in prices are");
        }
        *memo = Some((now, by));
    }
    if let Some((_, by)) = memo.as_ref() {
        crate::shared::listing::put_usage(rows, by);
    }
}

/// Every session another machine's daemon lists (with their costs).
pub fn remote_listing(client: &mut impl Caller) -> Result<Vec<SessionInfo>, ClientError> {
    crate::shared::listing::list_pages(client, ListParams::default())
}

/// Every live session's cost now (the daemon samples every few seconds;
/// the dashboard asks as often, with no listing built).
pub fn costs(client: &mut impl Caller) -> Result<HashMap<u32, SessionCost>, ClientError> {
    crate::shared::listing::costs_of_live(client)
}

/// A held session's screen, as text rows.
pub fn screen(client: &mut impl Caller, session: &str) -> Result<Vec<String>, ClientError> {
    let r = client.ask::<SessionScreen>(&ScreenParams {
        session: session.to_string(),
        format: ScreenFormat::Text,
    })?;
    Ok(r.lines.unwrap_or_default())
}

/// The transcript's last items, one line each, like `ccd observe` shows
/// them (at most [`PREVIEW_ITEMS`]; the follower reads a bounded tail).
pub fn transcript_tail(path: &Path) -> std::io::Result<Vec<String>> {
    let (_, items) = Follower::open(path, PREVIEW_ITEMS)?;
    Ok(items.iter().map(|r| render_line(r, 1_000)).collect())
}

/// The conversation's last items through the daemon (`session.tail`),
/// one line each like [`transcript_tail`]: for a machine whose files the
/// dashboard cannot read.
pub fn tail(client: &mut impl Caller, session: &str) -> Result<Vec<String>, ClientError> {
    let r = client.ask::<SessionTail>(&TailParams {
        session: session.to_string(),
        items: Some(PREVIEW_ITEMS as u32),
    })?;
    Ok(r.items
        .into_iter()
        .filter_map(crate::term::run::rendered)
        .map(|r| render_line(&r, 1_000))
        .collect())
}

/// `sessions.search` of `query` on the machine `client` reaches (its
/// daemon answers from its index, or scans), at most
/// [`super::search::HITS_PER_MACHINE`] hits.
pub fn search(client: &mut impl Caller, query: &str) -> Result<SearchResult, ClientError> {
    let mut p = SearchParams::new(query);
    p.limit = super::search::HITS_PER_MACHINE;
    client.ask::<SessionsSearch>(&p)
}

/// `dirs.complete`: `input` completed to a directory on the daemon's
/// machine (another machine's; this one's is completed here), and the
/// choices when several match.
pub fn complete_dir(
    client: &mut impl Caller,
    input: &str,
) -> Result<(String, Vec<String>), ClientError> {
    let r = client.ask::<ccd_protocol::methods::dirs::DirsComplete>(
        &ccd_protocol::methods::dirs::CompleteParams {
            input: input.to_string(),
        },
    )?;
    Ok((r.input, r.choices))
}

/// `session.respond` on the prompt the dashboard showed.
pub fn respond(
    client: &mut impl Caller,
    session: &str,
    prompt: Option<&str>,
    choice: RespondChoice,
) -> Result<String, ClientError> {
    let r = client.ask::<SessionRespond>(&RespondParams {
        session: session.to_string(),
        choice,
        message: None,
        prompt: prompt.map(str::to_string),
    })?;
    Ok(format!(
        "{} prompt {} of {}: {}",
        if choice == RespondChoice::No {
            "denied"
        } else {
            "approved"
        },
        r.prompt,
        crate::shared::cells::short_id(&r.session),
        r.option
    ))
}

/// `session.kill` (SIGTERM, then SIGKILL after 3 s), as `ccd kill` says it.
pub fn kill(client: &mut impl Caller, session: &str) -> Result<String, ClientError> {
    let r = client.ask::<SessionKill>(&KillParams {
        session: session.to_string(),
        signal: KillSignal::Term,
        grace_ms: Some(3000),
    })?;
    let how = match (r.exit_code, r.exit_signal) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ if r.exited => "exited".to_string(),
        _ => "signalled; not gone yet".to_string(),
    };
    Ok(format!(
        "{}: {how}",
        crate::shared::cells::short_id(session)
    ))
}

/// `session.fork`; the new session's id, or why it did not start (the
/// outer error: the call failed). (`commands::fork::fork` says what it
/// does on stderr: not under a full-screen dashboard.)
pub fn fork(
    client: &mut impl Caller,
    session: &str,
    size: Option<(u16, u16)>,
) -> Result<Result<String, String>, ClientError> {
    let r = client.ask::<SessionFork>(&ForkParams {
        session: session.to_string(),
        size: size.map(|(cols, rows)| ccd_protocol::methods::TermSize { cols, rows }),
    })?;
    Ok(match r.started().map(str::to_string) {
        Some(s) => Ok(s),
        None => Err(format!(
            "the fork did not start: {}",
            r.reason.unwrap_or_else(|| r.lifecycle.to_string())
        )),
    })
}

/// `session.new` in `cwd`, waiting for the prompt; the new session's id,
/// or why it did not start (the outer error: the call failed).
pub fn new(
    client: &mut impl Caller,
    cwd: &Path,
    auto_trust: bool,
    size: Option<(u16, u16)>,
) -> Result<Result<String, String>, ClientError> {
    let cwd = ccd_claude::paths::normalize(cwd);
    let r = client.ask::<SessionNew>(&NewParams {
        cwd: cwd.to_string_lossy().into_owned(),
        args: vec![],
        name: None,
        size: size.map(|(cols, rows)| ccd_protocol::methods::TermSize { cols, rows }),
        auto_trust,
        wait: true,
        session_id: Some(uuid::Uuid::new_v4().to_string()),
    })?;
    use ccd_protocol::methods::session::Lifecycle;
    Ok(match (r.session, &r.lifecycle) {
        (Some(s), l) if !matches!(l, Lifecycle::Failed | Lifecycle::Exited) => Ok(s),
        (_, l) => Err(format!(
            "the new session is {l}: {}",
            r.reason.as_deref().unwrap_or("it did not reach the prompt")
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_tail_reads_like_observe() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut body = String::new();
        for n in 0..(PREVIEW_ITEMS + 20) {
            body.push_str(&format!(
                "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"prompt {n}\"}},\"uuid\":\"u{n}\",\"timestamp\":\"2026-01-01T00:00:00Z\"}}\n"
            ));
        }
        std::fs::write(&p, body).unwrap();
        let lines = transcript_tail(&p).unwrap();
        assert!(lines.len() <= PREVIEW_ITEMS, "{}", lines.len());
        assert_eq!(
            lines.last().map(String::as_str),
            Some(format!("› prompt {}", PREVIEW_ITEMS + 19).as_str())
        );
    }
}
