//! `ccd search`: find sessions by what was said in them, on this machine,
//! by reading every transcript (ccd-search's scan; no daemon, no index).
//!
//! The sessions come from the same index `ccd ls` builds (liveness
//! re-validated against the process table), which gives each hit its
//! state and folder and applies `--live`/`--dead`/`--cwd` before any
//! transcript is read. Every text printed goes through
//! [`ccd_claude::display`]'s sanitizer; the match is marked after that, so a
//! transcript cannot forge the marks' escape sequences.

use crate::cli::{GlobalArgs, SearchArgs};
use crate::hosts::Target;
use crate::settings::Settings;
use crate::shared::cells::{ago, short_id, tilde};
use anyhow::Context;
use ccd_claude::context::ContextWindows;
use ccd_claude::display;
use ccd_claude::display::width::{clip, pad};
use ccd_claude::index;
use ccd_claude::liveness::Liveness;
use ccd_claude::paths::{is_within, normalize};
use ccd_claude::ClaudeConfigDir;
use ccd_search::{Filters, Hit, Query, Role, Source};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The folder column's width.
const FOLDER_COLUMNS: usize = 32;

pub fn run(global: &GlobalArgs, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    if global.targets.iter().any(|t| !matches!(t, Target::Local)) {
        anyhow::bail!("ccd search reads this machine's transcripts only for now; run it on the other machine (ssh HOST ccd search ...)");
    }
    let now = OffsetDateTime::now_utc();
    let query = if args.regex {
        Query::regex(&args.query.join(" "))?
    } else {
        Query::terms(&args.query.join(" "))?
    };
    let mut roles = Vec::new();
    for r in &args.role {
        roles.push(Role::parse(r).with_context(|| {
            format!(
                "unknown --role {}: one of user, assistant, tool, title, summary",
                display::line(r)
            )
        })?);
    }
    let since = args
        .since
        .as_deref()
        .map(|s| parse_since(s, now))
        .transpose()?;
    let filters = Filters { roles, since };

    let settings = Settings::load(global.config.as_deref())?;
    let config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let probe = ccd_claude::liveness::system_probe();
    let windows = ContextWindows::new(settings.context_windows);
    let idx = index::build_cached(
        &config,
        probe.as_ref(),
        &windows,
        Some(&crate::settings::state_dir()),
    )
    .with_context(|| format!("reading sessions under {}", config.root().display()))?;
    let cwd_filter = args.cwd.as_deref().map(normalize);
    let mut sessions: HashMap<&str, &index::SessionRecord> = HashMap::new();
    let mut sources = Vec::new();
    for r in &idx.sessions {
        if (args.live && r.state == Liveness::Dead) || (args.dead && r.state != Liveness::Dead) {
            continue;
        }
        if let Some(dir) = &cwd_filter {
            if !r
                .cwd
                .as_deref()
                .is_some_and(|c| is_within(Path::new(c), dir))
            {
                continue;
            }
        }
        let Some(path) = &r.transcript else { continue };
        sessions.insert(&r.session_id, r);
        sources.push(Source {
            session_id: r.session_id.clone(),
            path: path.clone(),
        });
    }
    let started = std::time::Instant::now();
    let (hits, stats) = ccd_search::scan(&sources, &query, &filters, now, usize::from(args.limit));
    tracing::debug!(
        files = stats.files,
        bytes = stats.bytes,
        oversized = stats.oversized,
        unreadable = stats.unreadable,
        hits = hits.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search scan"
    );

    let stdout = std::io::stdout();
    let colour = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let state_of = |h: &Hit| {
        sessions
            .get(h.session_id.as_str())
            .map_or(Liveness::Dead, |r| r.state)
    };
    let cwd_of = |h: &Hit| {
        sessions
            .get(h.session_id.as_str())
            .and_then(|r| r.cwd.clone())
            .or_else(|| h.cwd.clone())
    };
    if args.json {
        let rows: Vec<JsonHit<'_>> = hits
            .iter()
            .map(|h| JsonHit {
                host: crate::hosts::LOCAL,
                state: state_of(h),
                folder: cwd_of(h),
                hit: h,
            })
            .collect();
        display::json::to_writer(&mut out, &rows, std::io::stdout().is_terminal())?;
        writeln!(out)?;
    } else if hits.is_empty() {
        eprintln!(
            "ccd: no session matches ({} transcripts searched)",
            stats.files
        );
    } else {
        let home = std::env::var("HOME").ok();
        for h in &hits {
            // A title has no time of its own before the first message:
            // the session's last activity then.
            let when = h
                .timestamp
                .as_deref()
                .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
                .or(h.newest)
                .or_else(|| {
                    sessions
                        .get(h.session_id.as_str())
                        .and_then(|r| r.last_activity)
                })
                .map_or_else(|| "-".to_string(), |t| ago(now, t));
            let state = match state_of(h) {
                Liveness::Live => "live",
                Liveness::Dead => "dead",
                Liveness::Unknown => "unknown",
            };
            let folder = cwd_of(h).map_or_else(|| "-".into(), |c| tilde(&c, home.as_deref()));
            let folder = pad(
                &clip(&display::line(&folder), FOLDER_COLUMNS),
                FOLDER_COLUMNS,
            );
            writeln!(
                out,
                "{}  {:<7}  {:<8}  {}  {}",
                short_id(&h.session_id),
                state,
                when,
                folder,
                snippet_line(h, colour),
            )?;
        }
    }
    out.flush()?;
    drop(out);
    if stats.unreadable > 0 {
        eprintln!(
            "ccd: {} transcripts could not be read (gone or unreadable) and were not searched",
            stats.unreadable
        );
    }
    if stats.oversized > 0 {
        eprintln!(
            "ccd: {} records longer than {} MiB were not searched",
            stats.oversized,
            ccd_search::incremental::MAX_RECORD_BYTES >> 20
        );
    }
    Ok(if hits.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A row of `ccd search --json`.
#[derive(serde::Serialize)]
struct JsonHit<'a> {
    host: &'a str,
    state: Liveness,
    /// The session's folder (its original cwd).
    folder: Option<String>,
    #[serde(flatten)]
    hit: &'a Hit,
}

/// `role: …before[match]after…`, sanitized to one line; the match in
/// reverse video on a colour terminal, else between `«` and `»`.
fn snippet_line(h: &Hit, colour: bool) -> String {
    let s = &h.snippet;
    let (open, close) = if colour {
        ("\x1b[7m", "\x1b[27m")
    } else {
        ("«", "»")
    };
    format!(
        "{}: {}{open}{}{close}{}",
        h.role.as_str(),
        display::line(&s.before),
        display::line(&s.matched),
        display::line(&s.after),
    )
}

/// `--since`: `30m`, `12h`, `7d`, `2w` ago, a date (midnight UTC) or an
/// RFC 3339 time.
fn parse_since(s: &str, now: OffsetDateTime) -> anyhow::Result<OffsetDateTime> {
    let s = s.trim();
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Ok(t);
    }
    let date_fmt = time::macros::format_description!("[year]-[month]-[day]");
    if let Ok(d) = time::Date::parse(s, &date_fmt) {
        return Ok(d.midnight().assume_utc());
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: i64 = n
        .parse()
        .ok()
        .filter(|n| *n <= 100_000)
        .with_context(|| bad_since(s))?;
    let d = match unit {
        "s" => time::Duration::seconds(n),
        "m" => time::Duration::minutes(n),
        "h" => time::Duration::hours(n),
        "d" => time::Duration::days(n),
        "w" => time::Duration::weeks(n),
        _ => anyhow::bail!(bad_since(s)),
    };
    Ok(now - d)
}

fn bad_since(s: &str) -> String {
    format!(
        "bad --since {}: give 30m, 12h, 7d, 2w, a date (2026-11-01) or an RFC 3339 time",
        display::line(s)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_forms() {
        let now = OffsetDateTime::parse("2026-12-07T10:00:00Z", &Rfc3339).unwrap();
        assert_eq!(
            parse_since("7d", now).unwrap(),
            OffsetDateTime::parse("2026-11-30T10:00:00Z", &Rfc3339).unwrap()
        );
        assert_eq!(
            parse_since("2026-11-01", now).unwrap(),
            OffsetDateTime::parse("2026-11-01T00:00:00Z", &Rfc3339).unwrap()
        );
        assert!(parse_since("7y", now).is_err());
        assert!(parse_since("soon", now).is_err());
    }
}
