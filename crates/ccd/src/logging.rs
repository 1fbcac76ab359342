//! Where diagnostics go: stderr for client commands; a daily-rotated file
//! in the state directory for the daemon (and stderr too in the
//! foreground; stderr alone when the file cannot be made, or no log at all
//! in the background); a per-holder file for holders. Filter: `CCD_LOG`.
//!
//! File logging goes through a non-blocking writer that drops lines when
//! the disk is full or the file unwritable: logging never stops serving.
//!
//! What goes to stderr (a terminal, often) goes through [`Sanitized`]:
//! log fields quote paths and error texts from files, which may hold escape
//! sequences, bidi controls or line breaks.

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
        .with_ansi(false)
        .with_writer(stderr)
        .try_init();
}

/// Stderr, through the terminal sanitizer.
fn stderr() -> Sanitized<std::io::Stderr> {
    Sanitized(std::io::stderr())
}

/// A writer that shows each log line as [`ccd_claude::display::line`]
/// does: no escape sequence, control or bidi control reaches the terminal,
/// and a line break inside a field cannot start a line of its own (it
/// shows as `⏎`).
///
/// tracing's formatter writes each event whole, with one `write_all` of
/// the full line and its `\n`: each write here is one event, never a part
/// of a character, and only its last line break ends a line.
pub struct Sanitized<W>(W);

impl<W: std::io::Write> std::io::Write for Sanitized<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (&*text, ""),
        };
        let mut out = ccd_claude::display::line(body).into_owned();
        out.push_str(end);
        self.0.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The holder log cap: `CCD_HOLDER_LOG_CAP` bytes (a test hook), else
/// [`ccd_daemon::logfiles::HOLDER_LOG_CAP`].
fn holder_log_cap() -> u64 {
    ccd_test_hooks::Hook::HolderLogCap
        .parse()
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
                    .with_writer(file.and(stderr))
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
                ccd_claude::display::line(&state_dir.display().to_string())
            );
            Guard(None)
        }
        None => {
            eprintln!(
                "ccd: cannot write logs under {}; logging to stderr only",
                ccd_claude::display::line(&state_dir.display().to_string())
            );
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter("info"))
                .with_ansi(false)
                .with_writer(stderr)
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

#[cfg(test)]
mod tests {
    use super::Sanitized;
    use std::io::Write;

    #[test]
    fn a_log_line_reaches_stderr_defused() {
        let mut w = Sanitized(Vec::new());
        let line = "WARN skipped path=/p/\u{1b}]0;pwned\u{7}\u{202e}x\nfake-row \u{9b}2J\n";
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"INFO plain\n").unwrap();
        let out = String::from_utf8(w.0).unwrap();
        assert_eq!(out, "WARN skipped path=/p/x⏎fake-row \nINFO plain\n");
    }
}
