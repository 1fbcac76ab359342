//! The session listing as a daemon gives it, for `ccd ls` and the
//! dashboard alike: every page of `sessions.list`, the sessions a daemon
//! holds with their costs, the costs measured here when no daemon runs,
//! this machine's conversations' tokens and dollars (`usage_here`, the
//! code the daemon's usage board runs), and the note on Claude Code
//! versions ccd was not verified against.
//! Every call goes through a [`Caller`] (a connection of its own, or a
//! shared [`ccd_client::Link`]) and blocks until its reply or deadline.

use ccd_claude::cli_versions;
use ccd_client::{Caller, ClientError};
use ccd_protocol::methods::session::{
    CostsParams, ListParams, ListResult, SessionCost, SessionInfo, SessionState, SessionsCosts,
    SessionsList,
};
use std::collections::HashMap;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// One line saying which live sessions run a Claude Code version ccd was
/// not verified against, and what to do; `None` when every live one's is
/// verified (or unknown). `ccd ls` and the dashboard both say it.
pub fn unverified_note<'a>(rows: impl IntoIterator<Item = &'a SessionInfo>) -> Option<String> {
    let mut versions: Vec<&str> = rows
        .into_iter()
        .filter(|r| r.state == SessionState::Live)
        .filter_map(|r| r.version.as_deref())
        .filter(|v| !cli_versions::is_verified(v))
        .collect();
    versions.sort_unstable();
    versions.dedup();
    if versions.is_empty() {
        return None;
    }
    Some(format!(
        "unverified Claude Code {} running (ccd is verified on {}): status and prompts may be misread; see `ccd doctor`",
        versions.join(", "),
        cli_versions::verified_list()
    ))
}

/// At most this many pages of 500 are asked of a remote daemon (100,000
/// sessions), so a daemon that keeps answering `next_offset` cannot keep
/// a listing going.
const REMOTE_PAGES: usize = 200;

/// Every session a daemon lists with `params`, page by page (at most
/// [`REMOTE_PAGES`] pages).
pub fn list_pages(
    c: &mut impl Caller,
    mut params: ListParams,
) -> Result<Vec<SessionInfo>, ClientError> {
    let mut rows = Vec::new();
    for _ in 0..REMOTE_PAGES {
        let page = c.ask::<SessionsList>(&params)?;
        rows.extend(page.sessions);
        match page.next_offset {
            Some(o) if params.offset.is_none_or(|p| o > p) => params.offset = Some(o),
            _ => break,
        }
    }
    Ok(rows)
}

/// What the daemon holds (its own table, no file read) and, `with_cost`,
/// every live session's cost (`None`: a daemon older than
/// `sessions.costs`, or the call failed: the list goes on without).
pub fn held_and_costs(
    client: &mut impl Caller,
    with_cost: bool,
) -> Result<(ListResult, Option<HashMap<u32, SessionCost>>), ClientError> {
    let held = client.ask::<SessionsList>(&ListParams {
        held_only: true,
        no_cost: true,
        ..Default::default()
    })?;
    let costs = if with_cost {
        costs_of_live(client).ok()
    } else {
        None
    };
    Ok((held, costs))
}

/// Every live session's cost, from the daemon's board.
pub fn costs_of_live(client: &mut impl Caller) -> Result<HashMap<u32, SessionCost>, ClientError> {
    let r = client.ask::<SessionsCosts>(&CostsParams::default())?;
    Ok(r.costs.into_iter().map(|c| (c.pid, c.cost)).collect())
}

/// Each live row's cost from `costs` (by pid).
pub use ccd_daemon::cost::put_costs;

/// With no daemon running, the live rows' costs measured here, once: the
/// memory only (a CPU share needs two samples some time apart, which the
/// daemon keeps).
pub fn costs_here(rows: &[SessionInfo]) -> HashMap<u32, SessionCost> {
    let pids = ccd_daemon::cost::live_pids(rows);
    if pids.is_empty() {
        return HashMap::new();
    }
    let Ok(mut probe) = ccd_cost::CostProbe::new() else {
        return HashMap::new();
    };
    let at = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default();
    // A first sample has no CPU figure: the memory only.
    probe
        .sample(&pids)
        .into_iter()
        .map(|(pid, c)| (pid, ccd_daemon::cost::on_the_wire(c, &at)))
        .collect()
}

/// Each session's tokens and dollars on this machine (by session id),
/// read through the usage cache in the state dir (only bytes appended
/// since the last read are read; blocking), priced with the config's
/// `[prices]` over the built-in table — and, when those are bad, why (the
/// built-in prices are used then).
pub fn usage_here(
    settings: &crate::settings::Settings,
    config: &ccd_claude::ClaudeConfigDir,
) -> (
    HashMap<String, ccd_protocol::methods::session::SessionUsage>,
    Option<String>,
) {
    let (prices, bad) = match ccd_usage::PriceTable::with(&settings.prices) {
        Ok(p) => (p, None),
        Err(e) => (ccd_usage::PriceTable::builtin(), Some(e.to_string())),
    };
    let cache = crate::settings::state_dir().join(ccd_usage::cache::CACHE_FILE);
    // The same totals the daemon's usage board keeps (`ccd_daemon::usage`).
    let by = ccd_daemon::usage::by_session_blocking(config.root(), &cache, &prices);
    (by, bad)
}

/// Each row's `usage` from `by` (by session id); a row it has none for
/// keeps what it had.
pub fn put_usage(
    rows: &mut [SessionInfo],
    by: &HashMap<String, ccd_protocol::methods::session::SessionUsage>,
) {
    for r in rows {
        if let Some(u) = by.get(&r.session_id) {
            r.usage = Some(u.clone());
        }
    }
}
