//! `ccd service install | uninstall | status`: the daemon (and so what it
//! does at start: adopting the holders, the restore) started at login by
//! the user's service manager, a systemd user unit on Linux and a launchd
//! agent on macOS. The file's text and the manager calls are
//! `ccd_os::service`'s; this module decides what to carry into it (the
//! binary, the global options, the environment named in [`CARRIED_ENV`]),
//! refuses to replace a different file without `--force`, and says what
//! happened, what to run by hand when no manager answers (exit
//! [`NOT_ENABLED`]), and how a daemon running outside the service is
//! switched over.

use crate::cli::{GlobalArgs, ServiceAction, ServiceArgs};
use anyhow::Context;
use ccd_claude::display::{line, text};
use ccd_os::service::{manager, ManagerState, Spec};
use ccd_protocol::methods::daemon::DaemonStatus;
use ccd_protocol::methods::Empty;
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `ccd service install`'s exit status when the file was written but no
/// user service manager answered, so nothing was enabled or started.
pub const NOT_ENABLED: u8 = 3;

/// `ccd service status`'s exit status when no service file is installed.
pub const NOT_INSTALLED: u8 = 3;

/// The environment written into the service, when set (and not empty) at
/// install: what finds `claude` and what ccd reads. Anything else (an API
/// key among it) is not: the file is readable and outlives the shell.
pub const CARRIED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "CLAUDE_CONFIG_DIR",
    "CCD_CONFIG",
    "CCD_STATE_DIR",
    "CCD_SOCKET_DIR",
    "CCD_CLAUDE_BIN",
    "CCD_MEMORY_BUDGET",
    "CCD_LOG",
];

/// Prefixes of variables Claude Code reads that are named (never their
/// values) when set at install and not carried.
const NOT_CARRIED_PREFIXES: &[&str] = &["ANTHROPIC_", "CLAUDE_CODE_"];

pub fn run(global: &GlobalArgs, args: &ServiceArgs) -> anyhow::Result<ExitCode> {
    match &args.action {
        ServiceAction::Install { force, dry_run } => install(global, *force, *dry_run),
        ServiceAction::Uninstall => uninstall(global),
        ServiceAction::Status { json } => status(global, *json),
    }
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| ccd_os::user::home(None))
        .context("no home directory ($HOME is not set and the passwd database has none)")
}

/// Where the service file goes on this system.
fn file_path() -> anyhow::Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    Ok(manager::file_path(&home()?, xdg.as_deref()))
}

/// `p` made absolute against the current directory (the manager starts
/// the daemon in `/` or `~`).
fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("the current directory")?
        .join(p))
}

/// What the service runs: this ccd binary, `daemon` with the global
/// options given, and [`CARRIED_ENV`].
fn spec(global: &GlobalArgs) -> anyhow::Result<Spec> {
    let program = std::env::current_exe().context("locating the ccd executable")?;
    let mut args: Vec<OsString> = vec!["daemon".into()];
    if cfg!(target_os = "macos") {
        // launchd keeps no log of its own: the daemon logs to its state
        // dir only, and standard error (what comes before the log) goes to
        // `stderr_path`.
        args.push("--background".into());
    }
    for (flag, value) in [
        ("--socket-dir", &global.socket_dir),
        ("--claude-config-dir", &global.claude_config_dir),
        ("--config", &global.config),
        ("--claude-bin", &global.claude_bin),
    ] {
        if let Some(v) = value {
            args.push(flag.into());
            args.push(absolute(v)?.into());
        }
    }
    let env = CARRIED_ENV
        .iter()
        .filter_map(|k| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(|v| ((*k).to_owned(), v))
        })
        .collect();
    Ok(Spec {
        program,
        args,
        env,
        stderr_path: cfg!(target_os = "macos")
            .then(|| crate::settings::state_dir().join("launchd-stderr.log")),
    })
}

/// The names of variables set here that Claude Code may want and the
/// service does not carry.
fn not_carried() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| NOT_CARRIED_PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect();
    names.sort();
    names
}

/// The pid of the daemon answering on this machine's socket, if any.
fn running_daemon(global: &GlobalArgs) -> Option<u32> {
    let mut c = crate::shared::connect::connect_existing_local(global)
        .ok()
        .flatten()?;
    c.call::<DaemonStatus>(&Empty {}).ok().map(|s| s.pid)
}

/// What differs between the file found and the one to write, as a
/// unified diff (sanitized: the old file is anyone's text).
fn difference(old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => "-",
            similar::ChangeTag::Insert => "+",
            similar::ChangeTag::Equal => continue,
        };
        out.push_str(sign);
        out.push_str(&line(change.value().trim_end_matches('\n')));
        out.push('\n');
    }
    out
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// manager never reads half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().context("the service file has no folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("renaming {} to {}", tmp.display(), path.display())
    })
}

fn install(global: &GlobalArgs, force: bool, dry_run: bool) -> anyhow::Result<ExitCode> {
    let spec = spec(global)?;
    let bytes = manager::render(&spec)?;
    let path = file_path()?;
    if dry_run {
        println!("# {}", line(&path.display().to_string()));
        print!("{}", text(&String::from_utf8_lossy(&bytes)));
        return Ok(ExitCode::SUCCESS);
    }
    let unchanged = match std::fs::read(&path) {
        Ok(old) if old == bytes => true,
        Ok(old) if !force => {
            eprint!(
                "{} exists and differs from the one ccd would write:\n{}",
                line(&path.display().to_string()),
                difference(&old, &bytes)
            );
            anyhow::bail!("not replaced; `ccd service install --force` replaces it");
        }
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if cfg!(target_os = "macos") {
        // launchd opens the stderr file before the daemon makes its dir.
        let _ = ccd_daemon::logfiles::prepare_state_dir(&crate::settings::state_dir());
    }
    if !unchanged {
        write_atomically(&path, &bytes)?;
    }
    let shown = line(&path.display().to_string()).into_owned();
    println!(
        "{} {shown}: it starts {} daemon at login",
        if unchanged { "unchanged" } else { "wrote" },
        line(&spec.program.display().to_string())
    );
    let carried: Vec<&str> = spec.env.iter().map(|(k, _)| k.as_str()).collect();
    println!("environment carried: {}", carried.join(", "));
    let left = not_carried();
    if !left.is_empty() {
        println!(
            "not carried (set here, may hold secrets): {}; add what the daemon needs to the service yourself",
            left.join(", ")
        );
    }
    if let Err(e) = manager::available() {
        println!(
            "no user service manager answers here ({}): nothing was enabled or started.\nTo enable and start it, run these in a login session that has {}:",
            line(&e.to_string()),
            manager::MANAGER
        );
        for c in manager::enable_commands(&path) {
            println!("  {}", line(&c));
        }
        advice();
        return Ok(ExitCode::from(NOT_ENABLED));
    }
    let state = manager::state().unwrap_or_default();
    match running_daemon(global) {
        Some(pid) if state.pid != Some(pid) => {
            manager::enable(&path, false)?;
            println!(
                "enabled for the next login. A ccd daemon started outside the service runs now (pid {pid}); to switch to the service's, run:\n  ccd daemon stop   # held sessions keep running; the service's daemon adopts them"
            );
            for c in manager::start_commands(&path) {
                println!("  {}", line(&c));
            }
        }
        _ => {
            manager::enable(&path, true)?;
            println!("enabled and started");
        }
    }
    advice();
    Ok(ExitCode::SUCCESS)
}

fn advice() {
    for a in manager::advice() {
        println!("note: {a}");
    }
}

fn uninstall(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let path = file_path()?;
    let shown = line(&path.display().to_string()).into_owned();
    if !path.exists() {
        println!("not installed (no {shown})");
        return Ok(ExitCode::SUCCESS);
    }
    let managed = manager::available();
    if managed.is_ok() {
        if let Err(e) = manager::disable(&path) {
            eprintln!(
                "ccd: {} did not disable it: {}",
                manager::MANAGER,
                line(&e.to_string())
            );
        }
    }
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    if managed.is_ok() {
        if let Err(e) = manager::forget() {
            tracing::warn!(error = %e, "the service manager did not reload");
        }
    }
    println!("removed {shown}");
    match (managed, running_daemon(global)) {
        (Ok(()), None) => println!(
            "the service's daemon is stopped; held sessions keep running, and the next ccd command starts a daemon that adopts them"
        ),
        (Ok(()), Some(pid)) => println!(
            "a ccd daemon still runs (pid {pid}, not the service's); held sessions keep running"
        ),
        (Err(e), _) => println!(
            "no user service manager answers here ({}): nothing was stopped",
            line(&e.to_string())
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `ccd service status --json`.
#[derive(Debug, Serialize)]
struct Status {
    file: PathBuf,
    installed: bool,
    /// The binary the installed file starts.
    program: Option<PathBuf>,
    /// Whether that binary is still there (a moved or upgraded one is not).
    program_exists: Option<bool>,
    /// Whether it is this ccd.
    program_is_this: Option<bool>,
    /// `None`: no manager answers (`manager_error` says why).
    enabled: Option<bool>,
    running: Option<bool>,
    service_pid: Option<u32>,
    manager_state: Option<String>,
    manager_error: Option<String>,
    /// The daemon answering on the socket, by the service or not.
    daemon_pid: Option<u32>,
}

fn status(global: &GlobalArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let file = file_path()?;
    let content = std::fs::read(&file).ok();
    let program = content.as_deref().and_then(manager::program_of);
    let this = std::env::current_exe().ok();
    let (state, manager_error): (Option<ManagerState>, _) =
        match manager::available().and_then(|()| manager::state()) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let s = Status {
        installed: content.is_some(),
        program_exists: program.as_ref().map(|p| p.is_file()),
        program_is_this: program.as_ref().map(|p| Some(p) == this.as_ref()),
        program,
        enabled: state.as_ref().map(|s| s.enabled),
        running: state.as_ref().map(|s| s.running),
        service_pid: state.as_ref().and_then(|s| s.pid),
        manager_state: state.as_ref().map(|s| s.detail.clone()),
        manager_error,
        daemon_pid: running_daemon(global),
        file,
    };
    if as_json {
        println!("{}", ccd_claude::display::json::to_string(&s)?);
    } else {
        print_status(&s);
    }
    Ok(if s.installed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_INSTALLED)
    })
}

fn print_status(s: &Status) {
    let file = line(&s.file.display().to_string()).into_owned();
    if !s.installed {
        println!("not installed ({file} absent): `ccd service install` starts the daemon at login");
    } else {
        println!("installed: {file}");
        match (&s.program, s.program_exists, s.program_is_this) {
            (Some(p), Some(true), Some(true)) => {
                println!("runs: {} (this ccd)", line(&p.display().to_string()))
            }
            (Some(p), Some(true), _) => println!(
                "runs: {} (not this ccd: `ccd service install --force` from the one you use points it there)",
                line(&p.display().to_string())
            ),
            (Some(p), _, _) => println!(
                "runs: {} — MISSING (moved or removed): the service cannot start; `ccd service install --force` from the ccd you use points it there",
                line(&p.display().to_string())
            ),
            (None, _, _) => println!("runs: ? (not a file ccd wrote)"),
        }
    }
    match (&s.manager_error, s.enabled, s.running) {
        (Some(e), _, _) => println!(
            "enabled, running: unknown, no user service manager answers here ({})",
            line(e)
        ),
        (None, Some(enabled), Some(running)) => println!(
            "enabled at login: {}; running: {}{} ({})",
            if enabled { "yes" } else { "no" },
            if running { "yes" } else { "no" },
            s.service_pid
                .map(|p| format!(", pid {p}"))
                .unwrap_or_default(),
            line(s.manager_state.as_deref().unwrap_or("?"))
        ),
        _ => {}
    }
    match s.daemon_pid {
        Some(pid) if Some(pid) == s.service_pid => {
            println!("daemon: pid {pid}, the service's")
        }
        Some(pid) => println!(
            "daemon: pid {pid}, started outside the service{}",
            if s.installed {
                " (`ccd daemon stop`, then start the service, to switch)"
            } else {
                ""
            }
        ),
        None => println!("daemon: none running"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_difference_names_the_changed_lines_only_and_sanitized() {
        let d = difference(
            b"[Service]\nExecStart=\"/old/ccd\" \"daemon\"\nKillMode=process\n\x1b]0;evil\x07\n",
            b"[Service]\nExecStart=\"/new/ccd\" \"daemon\"\nKillMode=process\n",
        );
        assert!(d.contains("-ExecStart=\"/old/ccd\""), "{d}");
        assert!(d.contains("+ExecStart=\"/new/ccd\""), "{d}");
        assert!(!d.contains("KillMode"), "{d}");
        assert!(!d.contains('\x1b') && !d.contains('\x07'), "{d:?}");
    }
}
