//! Where diagnostics go: stderr for client commands; a daily-rotated file
//! in the state directory for the daemon (and stderr too in the
//! foreground; stderr alone when the file cannot be made, or no log at all
//! in the background); a per-holder file for holders. Filter: `CCD_LOG`.
//!
//! File logging goes through a non-blocking writer that drops lines when
//! the disk is full or the file unwritable: logging never stops serving.

use std::path::Path;
use tracing_subscriber::fmt::writer::MakeWriterExt;
use tracing_subscriber::EnvFilter;

fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env("CCD_LOG").unwrap_or_else(|_| EnvFilter::new(default))
}

/// Client commands: warnings on stderr.
pub fn init_client() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter("warn"))
        .with_writer(std::io::stderr)
        .try_init();
}

/// The holder log cap: `CCD_HOLDER_LOG_CAP` bytes (tests), else
/// [`ccd_daemon::logfiles::HOLDER_LOG_CAP`].
fn holder_log_cap() -> u64 {
    std::env::var("CCD_HOLDER_LOG_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ccd_daemon::logfiles::HOLDER_LOG_CAP)
}

/// Log lines waiting for the writer thread before new ones are dropped.
/// tracing-appender's default (128,000) preallocates its whole queue: about
/// 4 MB in every holder, idle or not.
const BUFFERED_LINES: usize = 2048;

/// A non-blocking writer with a small queue (lossy when full: logging never
/// stalls a session).
fn non_blocking<W: std::io::Write + Send + 'static>(
    w: W,
) -> (
    tracing_appender::non_blocking::NonBlocking,
    tracing_appender::non_blocking::WorkerGuard,
) {
    tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(BUFFERED_LINES)
        .lossy(true)
        .finish(w)
}

/// Keeps the non-blocking writer's worker alive.
pub struct Guard(#[allow(dead_code)] Option<tracing_appender::non_blocking::WorkerGuard>);

/// The daemon: `ccd.log` (rotated daily, 7 kept) in `state_dir`, plus
/// stderr in the foreground.
pub fn init_daemon(state_dir: &Path, foreground: bool) -> Guard {
    let appender = std::fs::create_dir_all(state_dir).ok().and_then(|_| {
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix("ccd")
            .filename_suffix("log")
            .max_log_files(7)
            .build(state_dir)
            .ok()
    });
    match appender {
        Some(a) => {
            let (file, guard) = non_blocking(a);
            let file = file.with_max_level(tracing::Level::TRACE);
            if foreground {
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(filter("info"))
                    .with_ansi(false)
                    .with_writer(file.and(std::io::stderr))
                    .try_init();
            } else {
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(filter("info"))
                    .with_ansi(false)
                    .with_writer(file)
                    .try_init();
            }
            Guard(Some(guard))
        }
        // In the background stderr is the starting client's pipe, which
        // nobody reads once the daemon answers (and which closes when that
        // client exits): logging there would stall or end the daemon. It
        // runs without a log instead.
        None if !foreground => {
            eprintln!(
                "ccd: cannot write logs under {}; the daemon runs without a log",
                state_dir.display()
            );
            Guard(None)
        }
        None => {
            eprintln!(
                "ccd: cannot write logs under {}; logging to stderr only",
                state_dir.display()
            );
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter("info"))
                .with_writer(std::io::stderr)
                .try_init();
            Guard(None)
        }
    }
}

/// A holder: its own file, appended, owner-only, moved to `.1` past
/// [`ccd_daemon::logfiles::HOLDER_LOG_CAP`].
pub fn init_file(path: &Path) -> Guard {
    let file = path.parent().and_then(|dir| {
        std::fs::create_dir_all(dir).ok()?;
        ccd_daemon::logfiles::CappedLog::open(path, holder_log_cap()).ok()
    });
    match file {
        Some(f) => {
            let (w, guard) = non_blocking(f);
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter("info"))
                .with_ansi(false)
                .with_writer(w)
                .try_init();
            Guard(Some(guard))
        }
        None => Guard(None),
    }
}
