//! `ccd ls`: every session on the machine, for people or scripts.

use crate::cli::{GlobalArgs, LsArgs};
use crate::hosts::{Target, LOCAL};
use crate::settings::Settings;
use crate::shared::cells::{
    ago, cpu_cell, ctx_cell, dollars_cell, mem_cell, short_id, size_cell, tilde, tokens_cell,
};
use crate::shared::connect::{connect_existing_local, CLIENT_NAME};
use crate::shared::listing::{costs_here, held_and_costs, list_pages, put_costs, unverified_note};
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
    ActivityStatus, ListParams, ListResult, SessionCost, SessionInfo, SessionState, SessionsList,
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
        // Claude Code's retention sweep, on this machine: one line, and
        // only when something is at risk now or within a week.
        if targets.iter().any(|t| matches!(t, Target::Local)) {
            if let Ok(config) = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref()) {
                if let Ok(a) = crate::shared::retention::assess_here(&config) {
                    if let Some(n) = crate::shared::retention::notice(&a) {
                        eprintln!("ccd: {}", display::line(&n));
                    }
                }
            }
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

/// Every session another machine's daemon lists (`sessions.list`, page by
/// page).
fn list_remote(
    remote: &ccd_client::ssh::Remote,
    params: ListParams,
) -> Result<Vec<SessionInfo>, ClientError> {
    let mut c = ccd_client::ssh::connect(remote, CLIENT_NAME)?;
    list_pages(&mut c, params)
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
    let windows = ContextWindows::new(settings.context_windows.clone());
    let cache = crate::settings::state_dir();
    // The daemon is asked while the index is built; its answer may not
    // hold the listing up (see `HELD_GRACE`).
    let asked = ask_held(global, !args.no_cost);
    let idx = index::build_cached(&config, probe.as_ref(), &windows, Some(&cache))
        .with_context(|| format!("reading sessions under {}", config.root().display()))?;
    let mut rows: Vec<SessionInfo> = idx.sessions.iter().map(record_to_info).collect();
    // Without the daemon's answer the list still prints, then the error.
    let held = merge_held(global, asked, &mut rows, !args.no_cost);
    // Conversations `ccd archive` moved into the state dir: state `archived`.
    let mut rows = ccd_daemon::views::with_archived(rows, super::archive::archived_rows());
    let cwd_filter = args.cwd.as_deref().map(normalize);
    rows.retain(|r| !args.live || !matches!(r.state, SessionState::Dead | SessionState::Archived));
    rows.retain(|r| match (&cwd_filter, &r.cwd) {
        (None, _) => true,
        (Some(dir), Some(cwd)) => is_within(Path::new(cwd), dir),
        (Some(_), None) => false,
    });
    if !args.no_cost {
        put_usage(&settings, &config, &mut rows);
    }
    Ok((rows, held))
}

/// Each session's tokens and dollars (its `usage`), read through the
/// usage cache `ccd usage` keeps in the state dir: only bytes appended
/// since the last run are read.
fn put_usage(settings: &Settings, config: &ClaudeConfigDir, rows: &mut [SessionInfo]) {
    let (by, bad_prices) = crate::shared::listing::usage_here(settings, config);
    if let Some(e) = bad_prices {
        eprintln!("ccd: {}: the built-in prices are used", display::line(&e));
    }
    crate::shared::listing::put_usage(rows, &by);
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
            let Some(mut client) = connect_existing_local(&global)? else {
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
    /// The MEM, CPU, TOKENS and $ columns.
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
        write!(
            out,
            "{:>6}  {:>5}  {:>6}  {:>8}  ",
            "MEM", "CPU", "TOKENS", "$"
        )?;
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
            SessionState::Archived => "archived",
            _ => "unknown",
        };
        let (on, off) = match (colour, r.state) {
            (false, _) => ("", ""),
            (true, SessionState::Live) => ("\x1b[32m", "\x1b[0m"),
            (true, SessionState::Dead | SessionState::Archived) => ("\x1b[2m", "\x1b[0m"),
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
            write!(
                out,
                "{:>6}  {:>5}  {:>6}  {:>8}  ",
                mem_cell(r),
                cpu_cell(r),
                tokens_cell(r),
                dollars_cell(r)
            )?;
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
