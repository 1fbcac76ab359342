//! `ccd ls`: every session on the machine, for people or scripts.

use crate::cli::{GlobalArgs, LsArgs};
use crate::hosts::{Target, LOCAL};
use crate::settings::Settings;
use anyhow::Context;
use ccd_claude::cli_versions;
use ccd_claude::context::ContextWindows;
use ccd_claude::display;
use ccd_claude::display::width::{clip, pad};
use ccd_claude::index;
use ccd_claude::paths::{is_within, normalize};
use ccd_claude::ClaudeConfigDir;
use ccd_client::{ClientError, NotAnswering, SocketDir};
use ccd_daemon::views::record_to_info;
use ccd_protocol::methods::session::{
    ActivityStatus, CostsParams, ListParams, ListResult, SessionCost, SessionInfo, SessionState,
    SessionsCosts, SessionsList,
};
use ccd_protocol::Method;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

pub fn run(global: &GlobalArgs, args: &LsArgs) -> anyhow::Result<ExitCode> {
    let targets: Vec<Target> = if global.targets.is_empty() {
        vec![Target::Local]
    } else {
        global.targets.clone()
    };
    let show_host = !matches!(targets.as_slice(), [Target::Local]);
    // Other machines are asked on threads while this one's index is built.
    let asked: Vec<(String, RemoteList)> = targets
        .iter()
        .filter_map(|t| t.remote().cloned())
        .map(|r| {
            let params = ListParams {
                cwd: args.cwd.as_ref().map(|c| c.to_string_lossy().into_owned()),
                live_only: args.live,
                no_cost: args.no_cost,
                ..Default::default()
            };
            let label = r.label.clone();
            (label, std::thread::spawn(move || list_remote(&r, params)))
        })
        .collect();
    let mut rows: Vec<(String, SessionInfo)> = Vec::new();
    let mut failed = false;
    let mut local_problem = None;
    let mut held_known = true;
    if targets.iter().any(|t| matches!(t, Target::Local)) {
        let (local, held) = list_local(global, args)?;
        held_known = !matches!(&held, Err(e) if e.not_answering().is_some());
        local_problem = held.err();
        rows.extend(local.into_iter().map(|r| (LOCAL.to_string(), r)));
    }
    let mut unreachable = Vec::new();
    for (label, h) in asked {
        match h.join() {
            Ok(Ok(list)) => rows.extend(list.into_iter().map(|r| (label.clone(), r))),
            Ok(Err(e)) => unreachable.push((label, e.to_string())),
            Err(_) => unreachable.push((label, "listing failed".to_string())),
        }
    }
    if show_host {
        // Newest first across machines (each host's list already is).
        rows.sort_by_key(|(_, r)| {
            std::cmp::Reverse(
                r.last_activity
                    .as_deref()
                    .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok()),
            )
        });
    }
    let stdout = std::io::stdout();
    let colour = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.json {
        let rows: Vec<HostRow<'_>> = rows
            .iter()
            .map(|(host, info)| HostRow {
                host,
                cli_verified: info.version.as_deref().map(cli_versions::is_verified),
                info,
            })
            .collect();
        // Indented for a person at a terminal, compact for scripts.
        display::json::to_writer(&mut out, &rows, std::io::stdout().is_terminal())?;
        writeln!(out)?;
    } else if rows.is_empty() {
        // No lone header: a word on how to start, once the machines that
        // could not be asked are named below.
        if unreachable.is_empty() {
            let filtered = args.live || args.cwd.is_some();
            eprintln!("ccd: {}", empty_note(filtered, show_host));
        }
    } else {
        let home = std::env::var("HOME").ok();
        write_table(
            &mut out,
            &rows,
            Table {
                show_host,
                colour,
                held_known,
                with_cost: !args.no_cost,
            },
            home.as_deref(),
            OffsetDateTime::now_utc(),
        )?;
    }
    out.flush()?;
    drop(out);
    // The table's readers are people; a script reads `cli_verified`.
    if !args.json {
        if let Some(note) = unverified_note(rows.iter().map(|(_, r)| r)) {
            eprintln!("ccd: {}", display::line(&note));
        }
    }
    for (label, e) in &unreachable {
        // A remote's own errors start with its name already.
        let text = if e.starts_with(&format!("{label}: ")) {
            format!("host {e}")
        } else {
            format!("host {label}: {e}")
        };
        eprintln!(
            "ccd: {} (its sessions are not listed)",
            display::line(&text)
        );
        failed = true;
    }
    if let Some(e) = local_problem {
        if let Some(n) = e.not_answering() {
            eprintln!("ccd: {}. Listed from the files alone: whether ccd holds each session is not known (CCD column `?`)", display::line(&n.to_string()));
            return Ok(ExitCode::FAILURE);
        }
        eprintln!("ccd: {}", display::line(&e.to_string()));
        eprintln!("ccd: sessions ccd holds are not marked in this list (could not ask the daemon)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What `ccd ls` says instead of an empty table: how to start a session,
/// or that the filters left none.
fn empty_note(filtered: bool, several_hosts: bool) -> &'static str {
    match (filtered, several_hosts) {
        (true, _) => "no session matches --live/--cwd (`ccd ls` alone lists them all)",
        (false, false) => {
            "no Claude Code sessions on this machine yet: start one with `ccd new --cwd DIR` (or `n` in `ccd ui`)"
        }
        (false, true) => {
            "no Claude Code sessions on these machines yet: start one with `ccd --host NAME new --cwd DIR` (or `n` in `ccd ui`)"
        }
    }
}

/// Another machine's listing on its way.
type RemoteList = std::thread::JoinHandle<Result<Vec<SessionInfo>, ClientError>>;

/// A row of `ccd ls --json`: the session, the machine it is on (`local`
/// for this one), and whether its CLI `version` is one ccd was verified
/// against (`null` when no version is known).
#[derive(serde::Serialize)]
struct HostRow<'a> {
    host: &'a str,
    cli_verified: Option<bool>,
    #[serde(flatten)]
    info: &'a SessionInfo,
}

/// One line saying which live sessions run a Claude Code version ccd was
/// not verified against, and what to do; `None` when every live one's is
/// verified (or unknown). The dashboard says the same.
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
/// `ccd ls` going.
const REMOTE_PAGES: usize = 200;

/// Every session another machine's daemon lists (`sessions.list`, page by
/// page).
fn list_remote(
    remote: &ccd_client::ssh::Remote,
    params: ListParams,
) -> Result<Vec<SessionInfo>, ClientError> {
    let mut c = ccd_client::ssh::connect(remote, super::CLIENT_NAME)?;
    list_pages(&mut c, params)
}

/// Every session a daemon lists with `params`, page by page (at most
/// [`REMOTE_PAGES`] pages).
pub fn list_pages(
    c: &mut impl ccd_client::Caller,
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

/// This machine's sessions, built from the files, and whether the daemon
/// could say which ones it holds.
fn list_local(
    global: &GlobalArgs,
    args: &LsArgs,
) -> anyhow::Result<(Vec<SessionInfo>, Result<(), ClientError>)> {
    let settings = Settings::load(global.config.as_deref())?;
    let config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let probe = ccd_claude::liveness::system_probe();
    let windows = ContextWindows::new(settings.context_windows);
    let cache = crate::settings::state_dir();
    // The daemon is asked while the index is built; its answer may not
    // hold the listing up (see `HELD_GRACE`).
    let asked = ask_held(global, !args.no_cost);
    let idx = index::build_cached(&config, probe.as_ref(), &windows, Some(&cache))
        .with_context(|| format!("reading sessions under {}", config.root().display()))?;
    let mut rows: Vec<SessionInfo> = idx.sessions.iter().map(record_to_info).collect();
    // Without the daemon's answer the list still prints, then the error.
    let held = merge_held(global, asked, &mut rows, !args.no_cost);
    let cwd_filter = args.cwd.as_deref().map(normalize);
    rows.retain(|r| !args.live || r.state != SessionState::Dead);
    rows.retain(|r| match (&cwd_filter, &r.cwd) {
        (None, _) => true,
        (Some(dir), Some(cwd)) => is_within(Path::new(cwd), dir),
        (Some(_), None) => false,
    });
    Ok((rows, held))
}

/// Marks the sessions ccd holds, asking a running daemon (never starting
/// one: listing needs no daemon), by the daemon's own rule
/// ([`ccd_daemon::views::join_held`]: a held process holds the id its
/// registry entry names now; ids it wrote before say what superseded
/// them). Held sessions the files do not show yet (before their first
/// registry entry) are added first. No daemon running is fine; a daemon
/// that cannot be asked (a socket directory that is not private, a failed
/// call) is the error.
///
/// A daemon that has not answered once the index is built gets
/// [`HELD_GRACE`] more, none when it is stopped; then the error is
/// [`ClientError::NotAnswering`] and the list prints without held markers.
fn merge_held(
    global: &GlobalArgs,
    asked: Asked,
    rows: &mut Vec<SessionInfo>,
    with_cost: bool,
) -> Result<(), ClientError> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    let not_answering = || {
        ClientError::NotAnswering(NotAnswering::daemon(
            &dir.socket(),
            None,
            SessionsList::NAME,
            asked.since.elapsed(),
        ))
    };
    let answer = match asked.rx.try_recv() {
        Ok(a) => a,
        Err(_) => {
            let n = not_answering();
            if n.not_answering().is_some_and(|n| n.stopped) {
                return Err(n);
            }
            asked
                .rx
                .recv_timeout(HELD_GRACE)
                .map_err(|_| not_answering())?
        }
    };
    let Some((held, costs)) = answer? else {
        if with_cost {
            let here = costs_here(rows);
            put_costs(rows, &here);
        }
        return Ok(());
    };
    *rows = ccd_daemon::views::join_held(std::mem::take(rows), held.sessions);
    if let Some(costs) = costs {
        put_costs(rows, &costs);
    }
    Ok(())
}

/// What the daemon holds (its own table, no file read) and, `with_cost`,
/// every live session's cost (`None`: a daemon older than
/// `sessions.costs`, or the call failed: the list goes on without).
pub fn held_and_costs(
    client: &mut ccd_client::Client,
    with_cost: bool,
) -> Result<(ListResult, Option<HashMap<u32, SessionCost>>), ClientError> {
    let held = client.call::<SessionsList>(&ListParams {
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
pub fn costs_of_live(
    client: &mut impl ccd_client::Caller,
) -> Result<HashMap<u32, SessionCost>, ClientError> {
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

/// How much longer than building the index `ccd ls` waits for a daemon
/// that is running but slow to say which sessions it holds.
pub const HELD_GRACE: Duration = Duration::from_secs(1);

/// The daemon's answer on its way (`None`: no daemon runs): the sessions
/// it holds, and the live sessions' costs when asked for (`None`: the
/// daemon is older than `sessions.costs`, or it failed).
type HeldAnswer = Option<(ListResult, Option<HashMap<u32, SessionCost>>)>;

struct Asked {
    rx: std::sync::mpsc::Receiver<Result<HeldAnswer, ClientError>>,
    since: Instant,
}

/// Asks a running daemon (never starting one) which sessions it holds, on
/// a thread: the client's own deadlines bound it.
fn ask_held(global: &GlobalArgs, with_cost: bool) -> Asked {
    let (tx, rx) = std::sync::mpsc::channel();
    let global = global.clone();
    std::thread::spawn(move || {
        let r = (|| {
            let Some(mut client) = super::connect_existing_local(&global)? else {
                return Ok(None);
            };
            held_and_costs(&mut client, with_cost).map(Some)
        })();
        let _ = tx.send(r);
    });
    Asked {
        rx,
        since: Instant::now(),
    }
}

/// How the table is drawn.
#[derive(Clone, Copy)]
struct Table {
    /// A HOST column (several machines listed).
    show_host: bool,
    colour: bool,
    /// Whether the daemon said which sessions it holds (else CCD is `?`).
    held_known: bool,
    /// The MEM and CPU columns.
    with_cost: bool,
}

/// The table: one row a session, columns padded to display widths (a
/// wide character takes two columns, a zero-width one none), every text
/// from files sanitized first.
fn write_table(
    out: &mut impl Write,
    rows: &[(String, SessionInfo)],
    table: Table,
    home: Option<&str>,
    now: OffsetDateTime,
) -> std::io::Result<()> {
    let Table {
        show_host,
        colour,
        held_known,
        with_cost,
    } = table;
    let hosts: Vec<String> = rows
        .iter()
        .map(|(h, _)| clip(&display::line(h), 40))
        .collect();
    let host_width = hosts
        .iter()
        .map(|h| display::width::width(h))
        .max()
        .unwrap_or(0)
        .clamp(4, 40);
    if show_host {
        write!(out, "{}  ", pad("HOST", host_width))?;
    }
    write!(
        out,
        "{:<8}  {:<7}  {:<8}  {:>5}  ",
        "ID", "STATE", "STATUS", "CTX"
    )?;
    if with_cost {
        write!(out, "{:>6}  {:>5}  ", "MEM", "CPU")?;
    }
    writeln!(
        out,
        "{:>8}  {:>6}  {:<16}  {:<32}  TITLE",
        "ACTIVE", "SIZE", "CCD", "CWD"
    )?;
    for ((_, r), host) in rows.iter().zip(&hosts) {
        if show_host {
            write!(out, "{}  ", pad(host, host_width))?;
        }
        let state = match r.state {
            SessionState::Live => "live",
            SessionState::Dead => "dead",
            _ => "unknown",
        };
        let (on, off) = match (colour, r.state) {
            (false, _) => ("", ""),
            (true, SessionState::Live) => ("\x1b[32m", "\x1b[0m"),
            (true, SessionState::Dead) => ("\x1b[2m", "\x1b[0m"),
            (true, _) => ("\x1b[33m", "\x1b[0m"),
        };
        let mut marks = String::new();
        if r.several_writers {
            marks.push_str(" [several writers]");
        }
        if let Some(s) = &r.superseded_by {
            marks.push_str(&format!(
                " [{}; its ccd process now writes {}]",
                match s.reason.as_str() {
                    "clear" => "cleared",
                    "resume" => "left for another",
                    _ => "left",
                },
                display::line(short_id(&s.writes_now))
            ));
        }
        if let Some(p) = r.ccd.as_ref().and_then(|c| c.permission.as_deref()) {
            marks.push_str(&format!(" [permission: {}]", clip(&display::line(p), 60)));
        }
        let status = r
            .status
            .map(|s| match s {
                ActivityStatus::Idle => "idle",
                ActivityStatus::Busy => "busy",
                ActivityStatus::Waiting => "waiting",
                ActivityStatus::Other => "?",
            })
            .unwrap_or("-");
        let held = match &r.ccd {
            Some(c) => c.lifecycle.as_str(),
            None if held_known => "-",
            None => "?",
        };
        let last = r
            .last_activity
            .as_deref()
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            .map(|t| ago(now, t))
            .unwrap_or_else(|| "-".into());
        write!(
            out,
            "{}  {on}{:<7}{off}  {:<8}  {:>5}  ",
            pad(&clip(&display::line(short_id(&r.session_id)), 8), 8),
            state,
            status,
            ctx_cell(r),
        )?;
        if with_cost {
            write!(out, "{:>6}  {:>5}  ", mem_cell(r), cpu_cell(r))?;
        }
        writeln!(
            out,
            "{:>8}  {:>6}  {}  {}  {}{}",
            last,
            r.transcript_bytes
                .map(size_cell)
                .unwrap_or_else(|| "-".into()),
            pad(&clip(&display::line(held), 16), 16),
            pad(
                &r.cwd
                    .as_deref()
                    .map(|c| display::line(&tilde(c, home)).into_owned())
                    .unwrap_or_else(|| "-".into()),
                32
            ),
            r.title
                .as_deref()
                .map(|t| clip(&display::line(t), 60))
                .unwrap_or_default(),
            marks,
        )?;
    }
    Ok(())
}

use super::short_id;

/// "12s ago", "3m ago", "5h ago", "4d ago".
pub fn ago(now: OffsetDateTime, then: OffsetDateTime) -> String {
    let secs = (now - then).whole_seconds();
    match secs {
        s if s < 5 => "just now".into(),
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

/// `cwd` with the home directory shown as `~`.
pub fn tilde(cwd: &str, home: Option<&str>) -> String {
    match home.filter(|h| h.len() > 1) {
        Some(h) if cwd == h => "~".into(),
        Some(h) => match cwd.strip_prefix(h) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => cwd.into(),
        },
        None => cwd.into(),
    }
}

/// The `SIZE` cell: the transcript's size, short (`812`, `34K`, `5.2M`,
/// `1.1G`; powers of 1024). `ccd trim` shrinks a dead one.
pub fn size_cell(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        format!("{n}")
    } else if f < K * K {
        format!("{:.0}K", f / K)
    } else if f < 10.0 * K * K * K {
        let (v, u) = if f < K * K * K {
            (f / (K * K), "M")
        } else {
            (f / (K * K * K), "G")
        };
        if v < 10.0 {
            format!("{v:.1}{u}")
        } else {
            format!("{v:.0}{u}")
        }
    } else {
        format!("{:.0}G", f / (K * K * K))
    }
}

/// The `MEM` cell: the live session's process tree's memory (`1.2G`);
/// `-` when not measured.
pub fn mem_cell(r: &SessionInfo) -> String {
    r.cost
        .as_ref()
        .map(|c| size_cell(c.memory_bytes))
        .unwrap_or_else(|| "-".into())
}

/// The `CPU` cell: % of one core over the last interval (`12%`); `-`
/// when not measured yet.
pub fn cpu_cell(r: &SessionInfo) -> String {
    match r.cost.as_ref().and_then(|c| c.cpu_percent) {
        Some(p) if p > 0.0 && p < 1.0 => "<1%".into(),
        Some(p) => format!("{p:.0}%"),
        None => "-".into(),
    }
}

/// The `CTX` cell: the share of the window in use; `~` marks a share of
/// an assumed window (ccd's default: the CLI did not state one, and no
/// config or built-in entry knows the model).
pub fn ctx_cell(r: &SessionInfo) -> String {
    let Some(p) = r.context_percent else {
        return "-".into();
    };
    let guessed = r
        .context_window
        .as_ref()
        .is_some_and(|w| w.source == "default");
    format!("{}{p:.0}%", if guessed { "~" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    #[test]
    fn sizes() {
        assert_eq!(size_cell(812), "812");
        assert_eq!(size_cell(34 * 1024), "34K");
        assert_eq!(size_cell(5 * 1024 * 1024 + 200 * 1024), "5.2M");
        assert_eq!(size_cell(386 * 1024 * 1024), "386M");
        assert_eq!(size_cell(1024 * 1024 * 1024 + 100 * 1024 * 1024), "1.1G");
        assert_eq!(size_cell(20 * 1024 * 1024 * 1024), "20G");
    }

    #[test]
    fn ages() {
        let now = OffsetDateTime::now_utc();
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now, now - Duration::seconds(42)), "42s ago");
        assert_eq!(ago(now, now - Duration::minutes(3)), "3m ago");
        assert_eq!(ago(now, now - Duration::hours(5)), "5h ago");
        assert_eq!(ago(now, now - Duration::days(4)), "4d ago");
        assert_eq!(ago(now, now + Duration::minutes(4)), "just now");
    }

    #[test]
    fn a_share_of_an_assumed_window_is_marked() {
        use ccd_protocol::methods::session::ContextWindow;
        let mut r: SessionInfo = serde_json::from_value(serde_json::json!({
            "session_id": "s", "state": "dead", "pid": null, "cwd": null, "status": null,
            "waiting_for": null, "kind": null, "name": null, "version": null,
            "started_at": null, "last_activity": null, "title": null, "model": null,
            "context_tokens": 82000, "context_percent": 41.0, "context_window": null,
            "transcript": null, "transcript_bytes": null, "writers": [],
            "several_writers": false, "ccd": null
        }))
        .unwrap();
        assert_eq!(ctx_cell(&r), "41%");
        for (source, cell) in [("default", "~41%"), ("screen", "41%"), ("config", "41%")] {
            r.context_window = Some(ContextWindow {
                tokens: 200_000,
                source: source.into(),
            });
            assert_eq!(ctx_cell(&r), cell);
        }
        r.context_percent = None;
        assert_eq!(ctx_cell(&r), "-");
    }

    #[test]
    fn home_shortening() {
        assert_eq!(tilde("/home/u/p", Some("/home/u")), "~/p");
        assert_eq!(tilde("/home/u", Some("/home/u")), "~");
        assert_eq!(tilde("/home/user2/p", Some("/home/u")), "/home/user2/p");
        assert_eq!(tilde("/x", None), "/x");
    }
}
