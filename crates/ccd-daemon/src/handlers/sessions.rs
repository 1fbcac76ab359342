//! `sessions.list`, `sessions.costs`, `sessions.get` (what a client names
//! is resolved by `session_ops::resolve`), `sessions.restore` (the work is
//! `session_ops::restore`).

use crate::conn_ctx::ConnCtx;
use crate::holders::HolderEntry;
use crate::session_ops::resolve::{all_sessions, resolve};
use crate::views;
use ccd_claude::paths::{is_within, normalize};
use ccd_protocol::methods::session::{ListParams, ListResult, SessionInfo, SessionState};
use ccd_protocol::methods::SessionRef;
use ccd_protocol::{ErrorCode, RpcError};

use std::path::Path;

/// Largest page of `sessions.list`.
pub const MAX_PAGE: u32 = 500;

pub async fn list(ctx: &ConnCtx, p: ListParams) -> Result<ListResult, RpcError> {
    let cwd = p.cwd.as_deref().map(|c| normalize(Path::new(c)));
    let all = if p.held_only {
        let mut held: Vec<(SessionInfo, Option<HolderEntry>)> = ctx
            .daemon
            .holders
            .snapshot()
            .into_iter()
            .map(|h| (views::holder_only_info(&h), Some(h)))
            .collect();
        // Sessions ccd held that ended (exited, failed, reaped), newest first.
        held.extend(
            ctx.daemon
                .holders
                .finished()
                .into_iter()
                .rev()
                .filter_map(|f| views::finished_only_info(&f))
                .map(|i| (i, None)),
        );
        held
    } else {
        all_sessions(&ctx.daemon).await?
    };
    let mut matching: Vec<SessionInfo> = all.into_iter().map(|(i, _)| i).collect();
    // Conversations `ccd archive` moved into the state dir (state
    // `archived`), after the others, as `ccd ls` lists them.
    if !p.held_only && !p.live_only {
        matching = views::with_archived(matching, archived(ctx).await);
    }
    let matching: Vec<SessionInfo> = matching
        .into_iter()
        .filter(|i| !p.live_only || !matches!(i.state, SessionState::Dead | SessionState::Archived))
        .filter(|i| match (&cwd, &i.cwd) {
            (None, _) => true,
            (Some(dir), Some(c)) => is_within(Path::new(c), dir),
            (Some(_), None) => false,
        })
        .collect();
    let total = matching.len() as u32;
    let offset = p.offset.unwrap_or(0);
    let limit = p.limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let page: Vec<SessionInfo> = matching
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    let mut page = page;
    if !p.no_cost {
        crate::cost::fill(&ctx.daemon.costs, &mut page).await;
        ctx.daemon.usage.fill(&mut page);
    }
    let end = offset.saturating_add(page.len() as u32);
    Ok(ListResult {
        sessions: page,
        total,
        next_offset: (end < total).then_some(end),
    })
}

pub async fn costs(
    ctx: &ConnCtx,
    p: ccd_protocol::methods::session::CostsParams,
) -> Result<ccd_protocol::methods::session::CostsResult, RpcError> {
    use ccd_protocol::methods::session::MAX_COST_PIDS;
    let pids = match p.pids {
        Some(pids) if pids.len() > MAX_COST_PIDS => {
            return Err(RpcError::invalid_params(format!(
                "sessions.costs names {} pids; at most {MAX_COST_PIDS}",
                pids.len()
            )))
        }
        Some(pids) => pids,
        None => crate::cost::live_roots(&ctx.daemon.holders, &ctx.daemon.events),
    };
    let costs = crate::cost::costs_of(&ctx.daemon.costs, &pids).await;
    let mut costs: Vec<_> = costs
        .into_iter()
        .map(|(pid, cost)| ccd_protocol::methods::session::PidCost { pid, cost })
        .collect();
    costs.sort_by_key(|c| c.pid);
    Ok(ccd_protocol::methods::session::CostsResult { costs })
}

/// The archived conversations (`views::archived_info`), read on the
/// blocking pool.
async fn archived(ctx: &ConnCtx) -> Vec<SessionInfo> {
    let root = ctx.daemon.options.state_dir.join(ARCHIVE_DIR);
    tokio::task::spawn_blocking(move || views::archived_info(&root))
        .await
        .unwrap_or_default()
}

/// The archive's folder in the state dir (`ccd archive`,
/// `tasks::archive`).
const ARCHIVE_DIR: &str = "archive";

pub async fn get(ctx: &ConnCtx, p: SessionRef) -> Result<SessionInfo, RpcError> {
    let (mut info, holder) = match resolve(&ctx.daemon, &p.session).await {
        Ok(found) => found,
        // Not in Claude Code's folder: an archived conversation answers
        // (its full id, or a prefix only one archived id starts with).
        Err(e) if e.code == ErrorCode::SessionNotFound.code() => {
            let q = p.session.trim();
            let mut hits: Vec<SessionInfo> = archived(ctx)
                .await
                .into_iter()
                .filter(|a| a.session_id.starts_with(q))
                .collect();
            match hits.iter().position(|a| a.session_id == q) {
                Some(i) => (hits.swap_remove(i), None),
                None if hits.len() == 1 && !q.is_empty() => (hits.remove(0), None),
                None => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    // ccd's part (lifecycle, per-client counters) as the holder tells it
    // now, not as the last periodic refresh saw it.
    if let Some(mut h) = holder {
        if let Some(now) = ctx.daemon.holders.refresh(&h.id).await {
            h.info = Some(now);
            info.ccd = Some(views::owned_info(&h));
        }
    }
    crate::cost::fill(&ctx.daemon.costs, std::slice::from_mut(&mut info)).await;
    ctx.daemon.usage.fill(std::slice::from_mut(&mut info));
    Ok(info)
}

/// `sessions.restore`: the lost sessions named (all when none) resumed
/// as they were; one report.
/// `sessions.search`: the query checked (`invalid_params` with the
/// reason), a search slot taken (`crate::search`'s bounds), then the
/// session list built and searched on the blocking pool, from the index
/// the daemon keeps open (a scan until it is).
pub async fn search(
    ctx: &ConnCtx,
    p: ccd_protocol::methods::session::SearchParams,
) -> Result<ccd_protocol::methods::session::SearchResult, RpcError> {
    let req = ccd_search::service::Request::parse(&p)
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let search = ctx.daemon.search.clone();
    let slot = search
        .slot()
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let s = search.clone();
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        s.answer(&req, time::OffsetDateTime::now_utc())
            .map_err(|e| RpcError::internal(format!("reading Claude Code's files: {e}")))
    })
    .await
    .map_err(|e| RpcError::internal(e.to_string()))?
}

pub async fn restore(
    ctx: &ConnCtx,
    p: ccd_protocol::methods::session::RestoreParams,
) -> Result<ccd_protocol::methods::session::RestoreResult, RpcError> {
    crate::session_ops::restore::restore(ctx.daemon.clone(), &p.sessions).await
}
