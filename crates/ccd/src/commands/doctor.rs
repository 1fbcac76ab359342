//! `ccd doctor`: is everything ccd depends on as it expects? The claude
//! CLI, the format of Claude Code's files on this machine (the drift
//! guard), the daemon, the socket directory, the logs. Each problem comes
//! with a one-line fix.

use crate::cli::GlobalArgs;
use crate::settings::{state_dir, Settings};
use ccd_claude::cli_versions;
use ccd_claude::display::line;
use ccd_claude::drift::{self, Severity};
use ccd_claude::ClaudeConfigDir;
use ccd_client::{SocketDir, SocketDirError};
use ccd_protocol::methods::daemon::DaemonStatus;
use ccd_protocol::methods::Empty;
use serde::Serialize;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    /// `ok`, `warn` or `error`.
    status: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
    /// The conversation a check is about (`retention`: one the sweep
    /// deletes next).
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
}

fn ok(check: &'static str, message: impl Into<String>) -> Check {
    Check {
        check,
        status: "ok",
        message: message.into(),
        file: None,
        fix: None,
        session_id: None,
    }
}

fn bad(
    check: &'static str,
    status: &'static str,
    message: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check {
        check,
        status,
        message: message.into(),
        file: None,
        fix: Some(fix.into()),
        session_id: None,
    }
}

pub fn run(global: &GlobalArgs, as_json: bool, sample: usize) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(global.config.as_deref())?;
    let mut checks = vec![cli(global, &settings)];
    checks.extend(formats(global, sample));
    checks.extend(transcripts(global));
    checks.extend(trim_backups());
    checks.extend(retention(global));
    checks.extend(socket_and_daemon(global));
    checks.push(logs());
    checks.extend(restore_record(&state_dir()));
    checks.extend(notify(&settings.notify, &state_dir()));
    if as_json {
        println!("{}", ccd_claude::display::json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            let mark = match c.status {
                "ok" => "ok  ",
                "warn" => "warn",
                _ => "FAIL",
            };
            println!("[{mark}] {:<10} {}", c.check, line(&c.message));
            if let Some(f) = &c.file {
                println!("            in {}", line(&f.display().to_string()));
            }
            if let Some(fix) = &c.fix {
                println!("            fix: {}", line(fix));
            }
        }
    }
    Ok(if checks.iter().any(|c| c.status == "error") {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn cli(global: &GlobalArgs, settings: &Settings) -> Check {
    let bin = super::daemon::claude_bin(global, settings);
    let out = Command::new(&bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|c| wait_timeout(c, Duration::from_secs(10)));
    match out {
        Ok(Some(v)) => version_check(&bin.display().to_string(), v.trim()),
        Ok(None) => bad("claude", "error", format!("{} --version printed nothing", bin.display()),
            "check the binary, or point ccd at another one with --claude-bin / CCD_CLAUDE_BIN / claude_bin in the config"),
        Err(e) => bad("claude", "error", format!("cannot run {}: {e}", bin.display()),
            "install Claude Code (npm install -g @anthropic-ai/claude-code) or set CCD_CLAUDE_BIN"),
    }
}

/// The CLI's version against the versions ccd was verified on
/// ([`cli_versions::VERIFIED_CLI_VERSIONS`]): another one is a warning
/// (ccd may work with it, or misread it), with how to pin a verified one.
fn version_check(bin: &str, printed: &str) -> Check {
    let verified = cli_versions::verified_list();
    if cli_versions::is_verified(printed) {
        return ok(
            "claude",
            format!("{bin} is {printed}; ccd is verified on Claude Code {verified}"),
        );
    }
    bad(
        "claude",
        "warn",
        format!(
            "{bin} is {printed}, a version ccd was not verified against (verified: {verified}): \
             ccd may misread its screens (status, permission prompts, the trust dialog) and its \
             files (session registry, transcripts)"
        ),
        format!(
            "pin a verified version (npm install -g @anthropic-ai/claude-code@{}), \
             or point ccd at one with --claude-bin / CCD_CLAUDE_BIN; if this version works, \
             or does not, report it to ccd",
            cli_versions::newest_verified()
        ),
    )
}

fn wait_timeout(
    mut child: std::process::Child,
    limit: Duration,
) -> std::io::Result<Option<String>> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(_status) = child.try_wait()? {
            let mut s = String::new();
            if let Some(mut o) = child.stdout.take() {
                use std::io::Read;
                o.read_to_string(&mut s)?;
            }
            return Ok((!s.trim().is_empty()).then_some(s));
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("timed out"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn formats(global: &GlobalArgs, sample: usize) -> Vec<Check> {
    let config = match ClaudeConfigDir::resolve(global.claude_config_dir.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            return vec![bad(
                "formats",
                "error",
                e.to_string(),
                "set HOME or CLAUDE_CONFIG_DIR",
            )]
        }
    };
    if !config.root().is_dir() {
        return vec![ok(
            "formats",
            format!(
                "{} does not exist yet (no session ever ran)",
                config.root().display()
            ),
        )];
    }
    let findings = drift::check(&config, sample);
    if findings.is_empty() {
        return vec![ok(
            "formats",
            format!("registry entries and the {sample} most recent transcripts under {} have every field ccd relies on", config.root().display()),
        )];
    }
    findings
        .into_iter()
        .map(|f| Check {
            check: "formats",
            status: if f.severity == Severity::Error { "error" } else { "warn" },
            message: f.message,
            file: Some(f.file),
            fix: Some("Claude Code's file format changed: report it with this file's shape, and check for a newer ccd".into()),
            session_id: None,
        })
        .collect()
}

/// How many of the largest dead transcripts are listed, how many of those
/// are read through (a trim's dry run, pass 1 only), and at most how many
/// bytes those reads add up to: doctor stays quick with 10,000 transcripts
/// (one stat each) and with huge ones.
const TRIM_LISTED: usize = 5;
const TRIM_PLANNED: usize = 3;
const TRIM_PLAN_BYTES: u64 = 1 << 30;
/// Smaller dead transcripts are not worth a line.
const TRIM_MIN_BYTES: u64 = 10 * 1024 * 1024;

/// The largest dead transcripts, and what `ccd trim` would save on the
/// first few.
fn transcripts(global: &GlobalArgs) -> Vec<Check> {
    let Ok(config) = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref()) else {
        return Vec::new();
    };
    let files = ccd_claude::transcript::list_all(&config.projects_dir());
    let probe = ccd_claude::liveness::system_probe();
    let running: std::collections::HashSet<String> =
        ccd_claude::liveness::running_entries(&config.sessions_dir(), probe.as_ref())
            .into_iter()
            .map(|e| e.session_id)
            .collect();
    let mut dead: Vec<(u64, &ccd_claude::transcript::TranscriptFile)> = files
        .iter()
        .filter(|f| !running.contains(&f.session_id))
        .filter_map(|f| Some((std::fs::metadata(&f.path).ok()?.len(), f)))
        .filter(|(n, _)| *n >= TRIM_MIN_BYTES)
        .collect();
    if dead.is_empty() {
        return vec![ok(
            "trim",
            format!(
                "no dead transcript of {} MB or more ({} transcripts)",
                TRIM_MIN_BYTES >> 20,
                files.len()
            ),
        )];
    }
    dead.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let mut read = 0u64;
    dead.iter()
        .take(TRIM_LISTED)
        .enumerate()
        .map(|(i, (n, f))| {
            let size = super::trim::human_bytes(*n);
            let short = crate::shared::cells::short_id(&f.session_id).to_string();
            let plan = (i < TRIM_PLANNED && read + n <= TRIM_PLAN_BYTES).then(|| {
                read += n;
                ccd_claude::trim::plan(
                    &f.path,
                    &ccd_claude::trim::TrimOptions::default(),
                    &state_dir().join("trim-backups"),
                )
            });
            let (status, message) = match plan {
                Some(Ok(r)) => {
                    let saves = r.bytes_before.saturating_sub(r.bytes_after);
                    (
                        if saves >= 50_000_000 { "warn" } else { "ok" },
                        format!(
                            "dead session {short}: transcript {size}; ccd trim would save about {}",
                            super::trim::human_bytes(saves)
                        ),
                    )
                }
                Some(Err(e)) => ("ok", format!("dead session {short}: transcript {size}; ccd trim would refuse it: {e}")),
                None => ("ok", format!("dead session {short}: transcript {size} (not read: doctor reads at most {TRIM_PLANNED} files, 1 GiB)")),
            };
            Check {
                check: "trim",
                status,
                message,
                file: Some(f.path.clone()),
                fix: (status == "warn").then(|| format!("ccd trim {short} --dry-run, then ccd trim {short}")),
                session_id: None,
            }
        })
        .collect()
}

/// Claude Code's retention sweep: the setting (warned when at its default
/// or low) and each conversation the next start of `claude` deletes.
fn retention(global: &GlobalArgs) -> Vec<Check> {
    use ccd_claude::retention::{LOW_DAYS, SOON_DAYS};
    let Ok(config) = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref()) else {
        return Vec::new();
    };
    let settings_file = config.root().join("settings.json");
    let a = match crate::shared::retention::assess_here(&config) {
        Ok(a) => a,
        Err(e) => {
            return vec![bad(
                "retention",
                "warn",
                e.to_string(),
                format!("fix {}", settings_file.display()),
            )]
        }
    };
    let phrase = crate::shared::retention::setting_phrase(&a.setting, config.root());
    let keep = format!(
        "set \"cleanupPeriodDays\": 3650 in {} to keep conversations ~10 years, or ccd archive --older-than {}d",
        settings_file.display(),
        a.setting.days.unwrap_or(30).saturating_sub(5).max(1)
    );
    let mut out = vec![];
    let summary = format!(
        "{phrase}: the next start of claude deletes {} conversation(s), {} more within {SOON_DAYS} days",
        a.at_risk.len(),
        a.soon.len()
    );
    // A default or low setting is a warning once it has something to take
    // (now or within the week); before that it is said, not flagged.
    out.push(if a.setting.is_low() && a.worth_a_notice() {
        bad("retention", "warn", summary, keep.clone())
    } else if a.setting.is_low() {
        ok(
            "retention",
            format!("{summary} (below {LOW_DAYS} days: conversations older than that are deleted)"),
        )
    } else if a.setting.days.is_none() {
        ok("retention", phrase)
    } else {
        ok(
            "retention",
            format!("{summary} (at least {LOW_DAYS} days: not low)"),
        )
    });
    for r in &a.at_risk {
        let short = crate::shared::cells::short_id(&r.session_id).to_string();
        out.push(Check {
            check: "retention",
            status: "warn",
            message: format!(
                "conversation {short}, last written {} days ago, is deleted by the next start of claude",
                r.age_days
            ),
            file: Some(r.path.clone()),
            fix: Some(keep.clone()),
            session_id: Some(r.session_id.clone()),
        });
    }
    out
}

/// The originals `ccd trim` kept (never removed but by `ccd trim --undo`):
/// how much disk they hold.
fn trim_backups() -> Vec<Check> {
    let dir = state_dir().join("trim-backups");
    let Ok(sessions) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let (mut n, mut bytes) = (0u64, 0u64);
    for s in sessions.flatten() {
        let Ok(files) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for f in files.flatten() {
            if f.file_name().to_string_lossy().ends_with(".jsonl") {
                n += 1;
                bytes += f.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    if n == 0 {
        return Vec::new();
    }
    vec![Check {
        check: "trim",
        status: "ok",
        message: format!(
            "{n} original transcript(s) kept by ccd trim take {}",
            super::trim::human_bytes(bytes)
        ),
        file: Some(dir.clone()),
        fix: Some(format!(
            "once you no longer need `ccd trim --undo <sid>`: rm -r {}/<sid>",
            dir.display()
        )),
        session_id: None,
    }]
}

fn socket_and_daemon(global: &GlobalArgs) -> Vec<Check> {
    let dir = SocketDir::resolve(global.socket_dir.as_deref());
    let p = dir.path().display().to_string();
    // The same checks a client makes before it talks (directory, then the
    // daemon's socket), and the same message.
    let dir_check = match dir.verify_with_socket() {
        Ok(()) => ok(
            "socket",
            format!("{p} is a private directory owned by you, with a private socket"),
        ),
        Err(SocketDirError::Io { path, source })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            if path == dir.path() {
                ok(
                    "socket",
                    format!("{p} does not exist yet (created when the daemon starts)"),
                )
            } else {
                ok(
                    "socket",
                    format!("{p} is a private directory owned by you (no daemon socket in it)"),
                )
            }
        }
        Err(e) => {
            let fix = e.fix().unwrap_or_else(|| format!("check {p}"));
            bad("socket", "error", e.to_string(), fix)
        }
    };
    let daemon = match crate::shared::connect::connect_existing(global) {
        Err(e) => match e.not_private() {
            // Named by the socket check: not mistaken for a stale socket.
            Some(refusal) => bad(
                "daemon",
                "error",
                "not asked: ccd does not talk through a socket directory or socket that is not private (see the socket check)",
                refusal.fix().unwrap_or_default(),
            ),
            None => bad(
                "daemon",
                "error",
                format!("cannot be asked: {e}"),
                "ccd daemon stop; the next command starts a fresh one",
            ),
        },
        Ok(Some(mut c)) => match c.call::<DaemonStatus>(&Empty {}) {
            Ok(s) => ok(
                "daemon",
                format!(
                    "running: version {}, pid {}, {} session(s) held",
                    s.daemon_version, s.pid, s.sessions
                ),
            ),
            Err(e) => bad(
                "daemon",
                "error",
                format!("answers but fails: {e}"),
                "ccd daemon stop; the next command starts a fresh one",
            ),
        },
        Ok(None) if dir.socket().exists() => bad(
            "daemon",
            "warn",
            "a socket exists but nothing answers (a daemon that died)",
            "nothing to do: the next command replaces the stale socket",
        ),
        Ok(None) => ok("daemon", "not running (it starts when a command needs it)"),
    };
    vec![dir_check, daemon]
}

/// The name of the file `ccd doctor` writes in the state dir to see that
/// logs can be written there.
const PROBE: &str = ".doctor-probe";

/// Writes, syncs and removes a probe file in `dir`: opening a log for
/// append succeeds on a full disk; writing and syncing does not.
fn probe(dir: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(PROBE);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| {
            f.write_all(&[b'.'; 4096])?;
            f.sync_all()
        });
    let _ = std::fs::remove_file(&path);
    written
}

fn logs() -> Check {
    let dir = state_dir();
    if !dir.exists() {
        return ok("logs", format!("no daemon log in {} yet", dir.display()));
    }
    match probe(&dir) {
        Ok(()) => ok(
            "logs",
            format!(
                "{} is writable (a probe was written and synced)",
                dir.display()
            ),
        ),
        Err(e) => Check {
            check: "logs",
            status: "warn",
            message: format!(
                "cannot write in {}: {e} (the daemon keeps serving, without a log)",
                dir.display()
            ),
            file: Some(dir.clone()),
            fix: Some(format!(
                "free space or fix permissions in {}",
                dir.display()
            )),
            session_id: None,
        },
    }
}

/// The restore record (`held.json` in the state dir, issue 54): whether it
/// parses, how many sessions it holds and how many are lost (waiting for
/// `ccd restore`), and an unreadable one the daemon moved aside.
fn restore_record(state: &std::path::Path) -> Vec<Check> {
    use ccd_protocol::methods::session::HeldRecord;
    let mut out = Vec::new();
    let path = state.join("held.json");
    match std::fs::read(&path) {
        Err(_) => out.push(ok("restore", "no restore record yet (no session held)")),
        Ok(bytes) => match serde_json::from_slice::<HeldRecord>(&bytes) {
            Ok(r) if r.lost.is_empty() => out.push(ok(
                "restore",
                format!("the restore record holds {} session(s)", r.held.len()),
            )),
            Ok(r) => out.push(bad(
                "restore",
                "warn",
                format!(
                    "{} session(s) were lost when the machine went down",
                    r.lost.len()
                ),
                "ccd restore (or restore = \"auto\" in the config)",
            )),
            Err(e) => out.push(Check {
                check: "restore",
                status: "error",
                message: format!("the restore record does not parse: {e}"),
                file: Some(path.clone()),
                fix: Some(
                    "restart the daemon: it moves the record aside and starts a new one".into(),
                ),
                session_id: None,
            }),
        },
    }
    let moved = state.join("held.json.bad");
    if moved.exists() {
        out.push(Check {
            check: "restore",
            status: "warn",
            message:
                "an unreadable restore record was moved aside (its sessions were not restored)"
                    .into(),
            file: Some(moved),
            fix: Some(
                "read it for the sessions it named (ccd attach <id> resumes one), then delete it"
                    .into(),
            ),
            session_id: None,
        });
    }
    out
}

/// The `[notify]` table (issue 53): a command that cannot run, a webhook
/// URL or CA file that cannot be used (errors: nothing is sent through
/// them), the daemon's last failed send of each sink (from its record in
/// the state dir), and whether the desktop can be reached (`ccd notify`).
/// Each problem once, with what to do.
fn notify(cfg: &ccd_notify::NotifyConfig, state: &std::path::Path) -> Vec<Check> {
    use ccd_notify::health::read_report;
    let mut out = Vec::new();
    let record = |sink: &str| read_report(&state.join(format!("notify-{sink}.json")));
    let last_send = |sink: &'static str, out: &mut Vec<Check>| {
        if let Some(r) = record(sink) {
            if let Some(e) = &r.last_error {
                out.push(bad(
                    "notify",
                    "warn",
                    format!(
                        "the daemon's last {sink} send failed: {e} ({} failed, {} sent, {} dropped since it started)",
                        r.failed, r.sent, r.dropped
                    ),
                    format!("check notify.{sink} in the config and the daemon log (ccd daemon logs)"),
                ));
            }
        }
    };
    if let Some(argv) = &cfg.command {
        match ccd_notify::command::resolve(argv) {
            Ok(exe) => {
                out.push(ok(
                    "notify",
                    format!("command {} is executable", exe.display()),
                ));
                last_send("command", &mut out);
            }
            Err(e) => out.push(bad(
                "notify",
                "error",
                format!("{e}: no notification is sent through it"),
                "install it, or give notify.command an absolute path to an executable",
            )),
        }
    }
    if let Some(url) = &cfg.webhook {
        let checked = ccd_notify::webhook::parse(url).and_then(|_| {
            ccd_notify::webhook::Connector::new(cfg.webhook_ca.as_deref()).map(|_| ())
        });
        match checked {
            Ok(()) => {
                out.push(ok("notify", format!("webhook {url} is an https:// URL")));
                last_send("webhook", &mut out);
            }
            Err(e) => out.push(bad(
                "notify",
                "error",
                format!("{e}: no notification is posted"),
                "set notify.webhook to an https:// URL (and notify.webhook_ca to a PEM file of CA certificates, if used)",
            )),
        }
    }
    if cfg.desktop {
        match ccd_notify::desktop::probe(Duration::from_secs(2)) {
            Ok(info) => out.push(ok(
                "notify",
                format!(
                    "desktop notifications through {} ({})",
                    if info.name.is_empty() {
                        "the notification service"
                    } else {
                        &info.name
                    },
                    if info.actions {
                        "with actions"
                    } else {
                        "no actions"
                    }
                ),
            )),
            // No session bus at all is how a server without a desktop is
            // (the person is told where they sit, by `ccd notify`): said,
            // not warned. A bus without a working notification service is
            // a desktop that will not show them.
            Err(e @ ccd_notify::desktop::DesktopError::NoBus(_)) => out.push(ok(
                "notify",
                format!(
                    "no desktop here ({e}): desktop notifications come from `ccd notify` where you sit"
                ),
            )),
            Err(e) => out.push(bad(
                "notify",
                "warn",
                format!("desktop notifications (ccd notify): {e}"),
                "start a notification service (e.g. dunst) in this desktop session, or set notify.desktop = false",
            )),
        }
    }
    out
}
