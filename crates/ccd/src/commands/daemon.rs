//! `ccd daemon` (foreground), `ccd daemon status`, `ccd daemon stop`.

use crate::cli::{DaemonAction, DaemonArgs, GlobalArgs};
use crate::settings::{find_on_path, reap_minutes, state_dir, Settings};
use anyhow::Context;
use ccd_claude::context::ContextWindows;
use ccd_claude::display::line;
use ccd_claude::ClaudeConfigDir;
use ccd_client::SocketDir;
use ccd_protocol::methods::daemon::{DaemonStatus, DaemonStop, DaemonStopParams};
use ccd_protocol::methods::Empty;
use ccd_test_hooks::Hook;
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &DaemonArgs) -> anyhow::Result<ExitCode> {
    match &args.action {
        None => serve(global, args.background),
        Some(DaemonAction::Status { json }) => {
            crate::logging::init_client();
            status(global, *json)
        }
        Some(DaemonAction::Stop { kill_sessions }) => {
            crate::logging::init_client();
            stop(global, *kill_sessions)
        }
    }
}

/// The daemon's allocator arenas (`ccd_os::heap::limit_arenas`).
pub const DAEMON_ARENAS: u32 = 2;

/// The claude binary: flag, `$CCD_CLAUDE_BIN`, config file, else `claude`
/// on PATH (kept as the bare name when not found: sessions then fail with
/// a clear reason).
pub fn claude_bin(global: &GlobalArgs, settings: &Settings) -> PathBuf {
    global
        .claude_bin
        .clone()
        .or_else(|| {
            std::env::var_os("CCD_CLAUDE_BIN")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| settings.claude_bin.clone())
        .or_else(|| find_on_path("claude"))
        .unwrap_or_else(|| PathBuf::from("claude"))
}

/// `memory_budget` from the config (`"8GiB"`, `"12 GB"`), or
/// `CCD_MEMORY_BUDGET` (tests, debugging); `off`/absent = no budget.
fn memory_budget(settings: &Settings) -> anyhow::Result<Option<u64>> {
    let (text, from) = match std::env::var("CCD_MEMORY_BUDGET") {
        Ok(v) if !v.trim().is_empty() => (v, "CCD_MEMORY_BUDGET"),
        _ => match &settings.memory_budget {
            Some(v) => (v.clone(), "memory_budget in the config"),
            None => return Ok(None),
        },
    };
    crate::settings::parse_budget(&text).with_context(|| format!("{from}: {text:?}"))
}

fn serve(global: &GlobalArgs, background: bool) -> anyhow::Result<ExitCode> {
    // Before any thread: few allocator arenas, so the heap that the
    // search index's build and the session listings free can be handed
    // back (`ccd_os::heap`; 100,000 transcripts: 552 -> 458 MB RSS).
    ccd_os::heap::limit_arenas(DAEMON_ARENAS);
    let state = state_dir();
    // Logs hold screens and people's folders: everything the daemon
    // creates is owner-only, in an owner-only state dir.
    ccd_daemon::logfiles::private_umask();
    let dir_state = ccd_daemon::logfiles::prepare_state_dir(&state);
    let _guard = crate::logging::init_daemon(&state, !background);
    use ccd_daemon::logfiles::DirState;
    match dir_state {
        Ok(DirState::Private) => {}
        Ok(DirState::Tightened { was }) => tracing::warn!(
            dir = %state.display(),
            was = format!("{was:o}"),
            "the state dir was readable by others; made it owner-only (0700)"
        ),
        Ok(DirState::Loose { mode, reason }) => tracing::warn!(
            dir = %state.display(),
            mode = format!("{mode:o}"),
            %reason,
            "the state dir is readable by others and was left as it is: its logs are private (0600) but their names show"
        ),
        Err(error) => tracing::warn!(dir = %state.display(), %error, "cannot create the state dir"),
    }
    let tightened = ccd_daemon::logfiles::tighten_logs(&state);
    if tightened > 0 {
        tracing::info!(files = tightened, "made older logs owner-only (0600)");
    }
    let settings = Settings::load(global.config.as_deref())?;
    let claude_config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let reap_idle = reap_minutes("reap_idle_minutes", settings.reap_idle_minutes)?;
    let reap_min_idle = reap_minutes("reap_min_idle_minutes", settings.reap_min_idle_minutes)?
        .unwrap_or(std::time::Duration::from_secs(10 * 60));
    // The usage board's prices: the config's `[prices]` over the built-in
    // table (`ccd ls` and `ccd usage` read the same).
    let prices = ccd_usage::PriceTable::with(&settings.prices).unwrap_or_else(|error| {
        tracing::warn!(%error, "the config's [prices] are not used: the built-in prices are");
        ccd_usage::PriceTable::builtin()
    });
    let options = ccd_daemon::DaemonOptions {
        socket_dir: SocketDir::resolve(global.socket_dir.as_deref()),
        claude_config,
        claude_config_explicit: global.claude_config_dir.is_some(),
        claude_bin: claude_bin(global, &settings),
        holder_exe: std::env::current_exe().context("locating the ccd executable")?,
        state_dir: state,
        context_windows: ContextWindows::new(settings.context_windows.clone()),
        trust_stable_ms: Hook::TrustStableMs.parse().unwrap_or(1000),
        auto_trust_default: settings.auto_trust.unwrap_or(true),
        // CCD_REAP_IDLE_SECS overrides the config (a test hook).
        reap_idle: Hook::ReapIdleSecs
            .parse()
            .map(std::time::Duration::from_secs)
            .or(reap_idle),
        memory_budget: memory_budget(&settings)?,
        // CCD_REAP_MIN_IDLE_SECS overrides the config (a test hook).
        reap_min_idle: Hook::ReapMinIdleSecs
            .parse()
            .map(std::time::Duration::from_secs)
            .unwrap_or(reap_min_idle),
        // CCD_COST_INTERVAL_MS: tests sample costs more often.
        cost_interval: Hook::CostIntervalMs
            .parse()
            .map(std::time::Duration::from_millis)
            .unwrap_or(ccd_daemon::cost::DEFAULT_INTERVAL),
        // CCD_RESUME_SETTLE_MS: tests widen the window a resume is checked in.
        resume_settle: Hook::ResumeSettleMs
            .parse()
            .map(std::time::Duration::from_millis)
            .unwrap_or(ccd_daemon::RESUME_SETTLE),
        notify: settings.notify.clone(),
        restore: restore_mode(&settings)?,
        restore_at_once: restore_at_once(&settings)?,
        archive_auto: match settings.archive.as_deref() {
            None | Some("off") => false,
            Some("auto") => true,
            Some(other) => {
                anyhow::bail!("archive = {other:?}: write \"auto\" or \"off\"")
            }
        },
        prices,
    };
    match ccd_daemon::run(options) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if another_daemon_runs(&e) => {
            // Said on stderr (a service manager's journal) and in the log;
            // the exit code tells a service manager not to restart.
            tracing::warn!(error = %format!("{e:#}"), "another daemon serves this socket; this one stands down");
            eprintln!("ccd: {}", ccd_claude::display::line(&format!("{e:#}")));
            Ok(ExitCode::from(ccd_os::service::EXIT_ANOTHER_DAEMON))
        }
        Err(e) => Err(e),
    }
}

/// Whether `e` says that another daemon holds the lock or answers on the
/// socket (this one then exits [`ccd_os::service::EXIT_ANOTHER_DAEMON`]).
fn another_daemon_runs(e: &anyhow::Error) -> bool {
    use ccd_daemon::startup::StartupError;
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<StartupError>(),
            Some(StartupError::AlreadyRunning { .. } | StartupError::SocketInUse(_))
        )
    })
}

/// `ccd daemon status --json` when no daemon runs.
#[derive(Serialize)]
struct NotRunning {
    running: bool,
    socket: PathBuf,
}

fn status(global: &GlobalArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let Some(mut c) = crate::shared::connect::connect_existing(global)? else {
        let dir = SocketDir::resolve(global.socket_dir.as_deref());
        if as_json {
            let s = NotRunning {
                running: false,
                socket: dir.socket(),
            };
            println!("{}", ccd_claude::display::json::to_string(&s)?);
        } else {
            println!("no ccd daemon is running ({})", dir.socket().display());
        }
        return Ok(ExitCode::from(3));
    };
    if as_json {
        // What the daemon said, fields this client does not know included.
        let mut s = c.call_as::<DaemonStatus, Map<String, Value>>(&Empty {})?;
        s.insert("running".into(), Value::Bool(true));
        println!("{}", ccd_claude::display::json::to_string(&s)?);
    } else {
        let s = c.call::<DaemonStatus>(&Empty {})?;
        println!(
            "ccd daemon {} running, pid {}, socket {}\n{} session(s) held, {} client(s) connected\nclaude: {}\nlogs: {}",
            line(&s.daemon_version),
            s.pid,
            line(&s.socket),
            s.sessions,
            s.clients,
            line(s.claude_bin.as_deref().unwrap_or("?")),
            line(s.state_dir.as_deref().unwrap_or("?")),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn stop(global: &GlobalArgs, kill_sessions: bool) -> anyhow::Result<ExitCode> {
    let Some(mut c) = crate::shared::connect::connect_existing(global)? else {
        println!("no ccd daemon is running");
        return Ok(ExitCode::SUCCESS);
    };
    let pid = c.call::<DaemonStatus>(&Empty {})?.pid;
    c.call::<DaemonStop>(&DaemonStopParams { kill_sessions })?;
    // Wait until it is gone, so a following command starts a fresh one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ccd_sched::run_state::exists(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    println!(
        "ccd daemon stopped{}",
        if kill_sessions {
            " (sessions ended)"
        } else {
            "; sessions keep running"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The config's `restore` (`ask` when absent).
fn restore_mode(settings: &Settings) -> anyhow::Result<ccd_daemon::restore::RestoreMode> {
    match settings.restore.as_deref() {
        None => Ok(Default::default()),
        Some(v) => v.parse().map_err(|e: String| anyhow::anyhow!("{e}")),
    }
}

/// The config's `restore_at_once` (1..=`MAX_AT_ONCE`).
fn restore_at_once(settings: &Settings) -> anyhow::Result<usize> {
    use ccd_daemon::restore::{DEFAULT_AT_ONCE, MAX_AT_ONCE};
    match settings.restore_at_once {
        None => Ok(DEFAULT_AT_ONCE),
        Some(n) if (1..=MAX_AT_ONCE).contains(&n) => Ok(n),
        Some(n) => anyhow::bail!("restore_at_once = {n} in the config: write 1 to {MAX_AT_ONCE}"),
    }
}
