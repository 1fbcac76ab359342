//! `ccd search`: find sessions by what was said in them, on this machine
//! through the search index kept in the state dir ([`INDEX_FILE`],
//! ccd-search's `index`; no daemon needed), and with `--host` on other
//! machines too.
//!
//! The index is kept by the searches themselves ([`kept_index`]): under an
//! advisory lock ([`LOCK_FILE`], `flock`), each loads it (or starts empty
//! when it is absent, of another format or damaged: logged once), brings
//! it up to date with every transcript of the machine (only the bytes
//! appended since; a trimmed or replaced file read again, a deleted one
//! dropped), saves it atomically when that changed anything, and answers
//! from it. A search that finds the lock held answers from the index as
//! saved (files changed since are scanned whole: same hits) and saves
//! nothing. `--rebuild-index` starts from empty (waiting for the lock);
//! `--no-index` scans every file and leaves the index alone. The index
//! is never required: when it cannot be kept or read, the scan answers.
//!
//! The sessions come from the same index `ccd ls` builds (liveness
//! re-validated against the process table), which gives each hit its
//! state and folder and applies `--live`/`--dead`/`--cwd` before any
//! transcript is read. Another machine runs its own `ccd search --json`
//! with the same words over ssh (the ssh command line `dial-stdio` uses),
//! on a thread each while this one scans; its rows are
//! [`ccd_protocol::search::SearchHit`]s, merged by score, and a machine
//! that cannot be asked is named on stderr (exit 1) while the others
//! answer. Every text printed goes through [`ccd_claude::display`]'s
//! sanitizer, another machine's too; the match is marked after that, so a
//! transcript cannot forge the marks' escape sequences.

use crate::cli::{GlobalArgs, SearchArgs};
use crate::hosts::{Target, LOCAL};
use crate::settings::Settings;
use crate::shared::cells::{ago, short_id, tilde};
use anyhow::Context;
use ccd_claude::context::ContextWindows;
use ccd_claude::display;
use ccd_claude::display::width::{clip, pad, width};
use ccd_claude::index;
use ccd_claude::liveness::Liveness;
use ccd_claude::paths::{is_within, normalize};
use ccd_claude::ClaudeConfigDir;
use ccd_protocol::methods::session::SessionState;
use ccd_protocol::search::{SearchHit, SearchSnippet};
use ccd_search::index::{Index as SearchIndex, IndexError, Limits as IndexLimits};
use ccd_search::{Filters, Query, Role, ScanStats, Source};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The folder column's width.
const FOLDER_COLUMNS: usize = 32;

/// The search index's file in the state dir, kept by every search.
pub const INDEX_FILE: &str = "search.idx";

/// The advisory lock (`flock`) a search holds while it updates and saves
/// the index, beside it in the state dir.
pub const LOCK_FILE: &str = "search.idx.lock";

pub fn run(global: &GlobalArgs, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let targets: Vec<Target> = if global.targets.is_empty() {
        vec![Target::Local]
    } else {
        global.targets.clone()
    };
    let show_host = !matches!(targets.as_slice(), [Target::Local]);
    let now = OffsetDateTime::now_utc();
    // The query is checked here first, also when only other machines
    // are asked: a bad one is refused before any ssh starts.
    let plan = Plan::parse(args, now)?;
    let asked: Vec<(String, RemoteHits)> = targets
        .iter()
        .filter_map(|t| t.remote().cloned())
        .map(|r| {
            let words = remote_words(args);
            (
                r.label.clone(),
                std::thread::spawn(move || remote(&r, &words)),
            )
        })
        .collect();
    let mut rows: Vec<SearchHit> = Vec::new();
    let mut stats = None;
    if targets.iter().any(|t| matches!(t, Target::Local)) {
        let (local, st) = local_hits(global, args, &plan, now)?;
        rows.extend(local);
        stats = Some(st);
    }
    let mut unreachable = Vec::new();
    for (label, h) in asked {
        match h.join() {
            Ok(Ok(list)) => rows.extend(list.into_iter().map(|mut r| {
                r.host = label.clone();
                r
            })),
            Ok(Err(e)) => unreachable.push((label, format!("{e:#}"))),
            Err(_) => unreachable.push((label, "search failed".to_string())),
        }
    }
    // Best first across machines; ties newest first.
    rows.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.timestamp.cmp(&a.timestamp))
    });
    rows.truncate(usize::from(args.limit));

    let stdout = std::io::stdout();
    let colour = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.json {
        display::json::to_writer(&mut out, &rows, std::io::stdout().is_terminal())?;
        writeln!(out)?;
    } else if rows.is_empty() {
        if unreachable.is_empty() {
            match &stats {
                Some(st) => eprintln!(
                    "ccd: no session matches ({} transcripts searched)",
                    st.files
                ),
                None => eprintln!("ccd: no session matches"),
            }
        }
    } else {
        let home = std::env::var("HOME").ok();
        let host_w = rows
            .iter()
            .map(|r| width(&r.host))
            .max()
            .unwrap_or(0)
            .min(16);
        for h in &rows {
            let when = h
                .timestamp
                .as_deref()
                .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
                .map_or_else(|| "-".to_string(), |t| ago(now, t));
            let state = match h.state {
                SessionState::Live => "live",
                SessionState::Dead => "dead",
                _ => "unknown",
            };
            // Another machine's home is not this one's: `~` only here.
            let folder = h.folder.as_deref().map_or_else(
                || "-".into(),
                |c| {
                    if h.host == LOCAL {
                        tilde(c, home.as_deref())
                    } else {
                        c.to_string()
                    }
                },
            );
            let folder = pad(
                &clip(&display::line(&folder), FOLDER_COLUMNS),
                FOLDER_COLUMNS,
            );
            if show_host {
                write!(
                    out,
                    "{}  ",
                    pad(&clip(&display::line(&h.host), host_w), host_w)
                )?;
            }
            writeln!(
                out,
                "{}  {:<7}  {:<8}  {}  {}",
                display::line(short_id(&h.session_id)),
                state,
                when,
                folder,
                snippet_line(h, colour),
            )?;
        }
    }
    out.flush()?;
    drop(out);
    if let Some(st) = &stats {
        if st.unreadable > 0 {
            eprintln!(
                "ccd: {} transcripts could not be read (gone or unreadable) and were not searched",
                st.unreadable
            );
        }
        if st.oversized > 0 {
            eprintln!(
                "ccd: {} records longer than {} MiB were not searched",
                st.oversized,
                ccd_search::incremental::MAX_RECORD_BYTES >> 20
            );
        }
    }
    for (label, e) in &unreachable {
        eprintln!(
            "ccd: host {}: {} (its sessions are not searched)",
            display::line(label),
            display::line(e)
        );
    }
    Ok(if rows.is_empty() || !unreachable.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The query and the per-message filters, parsed once.
struct Plan {
    query: Query,
    filters: Filters,
}

impl Plan {
    fn parse(args: &SearchArgs, now: OffsetDateTime) -> anyhow::Result<Plan> {
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
        Ok(Plan {
            query,
            filters: Filters { roles, since },
        })
    }
}

/// This machine's hits: the session index as `ccd ls` builds it picks
/// the transcripts (state, folder), the scan reads them.
fn local_hits(
    global: &GlobalArgs,
    args: &SearchArgs,
    plan: &Plan,
    now: OffsetDateTime,
) -> anyhow::Result<(Vec<SearchHit>, ScanStats)> {
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
    // Every transcript (what the index covers) and those searched.
    let mut all = Vec::new();
    let mut sources = Vec::new();
    for r in &idx.sessions {
        let Some(path) = &r.transcript else { continue };
        let src = Source {
            session_id: r.session_id.clone(),
            path: path.clone(),
        };
        if (args.live && r.state == Liveness::Dead) || (args.dead && r.state != Liveness::Dead) {
            all.push(src);
            continue;
        }
        if let Some(dir) = &cwd_filter {
            if !r
                .cwd
                .as_deref()
                .is_some_and(|c| is_within(Path::new(c), dir))
            {
                all.push(src);
                continue;
            }
        }
        sessions.insert(&r.session_id, r);
        all.push(src.clone());
        sources.push(src);
    }
    let started = std::time::Instant::now();
    let limit = usize::from(args.limit);
    let kept = if args.no_index {
        None
    } else {
        kept_index(&crate::settings::state_dir(), &all, args.rebuild_index)
    };
    let (hits, stats) = match kept {
        Some(ix) => {
            let (hits, stats, used) = ix.search(&sources, &plan.query, &plan.filters, now, limit);
            tracing::debug!(
                verified = used.verified,
                scanned = used.scanned,
                "search index used"
            );
            (hits, stats)
        }
        None => ccd_search::scan(&sources, &plan.query, &plan.filters, now, limit),
    };
    tracing::debug!(
        files = stats.files,
        bytes = stats.bytes,
        oversized = stats.oversized,
        unreadable = stats.unreadable,
        hits = hits.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search scan"
    );
    let rows = hits
        .into_iter()
        .map(|h| {
            let rec = sessions.get(h.session_id.as_str());
            let state = match rec.map_or(Liveness::Dead, |r| r.state) {
                Liveness::Live => SessionState::Live,
                Liveness::Dead => SessionState::Dead,
                Liveness::Unknown => SessionState::Unknown,
            };
            // A title has no time of its own before the first message:
            // the session's newest match, else its last activity.
            let timestamp = h.timestamp.clone().or_else(|| {
                h.newest
                    .or_else(|| rec.and_then(|r| r.last_activity))
                    .and_then(|t| t.format(&Rfc3339).ok())
            });
            SearchHit {
                host: LOCAL.to_string(),
                state,
                folder: rec.and_then(|r| r.cwd.clone()).or(h.cwd),
                path: h.path.to_string_lossy().into_owned(),
                role: h.role.as_str().to_string(),
                timestamp,
                offset: h.offset,
                snippet: SearchSnippet {
                    before: h.snippet.before,
                    matched: h.snippet.matched,
                    after: h.snippet.after,
                },
                matches: h.matches as u64,
                score: h.score,
                session_id: h.session_id,
            }
        })
        .collect();
    Ok((rows, stats))
}

/// The search index in `state`, kept up to date with `all` (every
/// transcript of the machine) and saved when that changed it, under
/// [`LOCK_FILE`]; with the lock held by another search, the index as
/// saved (not updated, not saved). `None`: no index to answer from (the
/// caller scans). `rebuild` starts from empty, waiting for the lock.
///
/// A first build always happens inside the search that finds no index:
/// about 2 s per 400 MB of transcripts (docs/architecture.md, "Search"),
/// once; every later search reads only what was appended.
fn kept_index(state: &Path, all: &[Source], rebuild: bool) -> Option<SearchIndex> {
    use nix::fcntl::{Flock, FlockArg};
    use std::os::unix::fs::OpenOptionsExt;
    let path = state.join(INDEX_FILE);
    let limits = IndexLimits::default();
    let lock = std::fs::create_dir_all(state).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(state.join(LOCK_FILE))
    });
    let how = if rebuild {
        FlockArg::LockExclusive
    } else {
        FlockArg::LockExclusiveNonblock
    };
    let held = match lock {
        Ok(f) => match Flock::lock(f, how) {
            Ok(l) => Some(l),
            Err((_, e)) => {
                tracing::info!(path = %path.display(), error = %e, "search index busy (another search keeps it): answered from it as saved, not updated");
                None
            }
        },
        Err(e) => {
            tracing::info!(path = %path.display(), error = %e, "search index lock not opened: not updated");
            None
        }
    };
    let loaded = if rebuild {
        tracing::info!(path = %path.display(), "search index rebuilt from scratch (--rebuild-index)");
        Err(None)
    } else {
        SearchIndex::load(&path, limits).map_err(Some)
    };
    let Some(_held) = held else {
        return match loaded {
            Ok(ix) => Some(ix),
            Err(e) => {
                if let Some(e) = e.filter(|e| !is_absent(e)) {
                    tracing::info!(path = %path.display(), error = %e, "search index not used: scanning");
                }
                None
            }
        };
    };
    let (mut ix, fresh) = match loaded {
        Ok(ix) => (ix, false),
        Err(e) => {
            if let Some(e) = e.filter(|e| !is_absent(e)) {
                tracing::info!(path = %path.display(), error = %e, "search index unreadable: rebuilt");
            }
            (SearchIndex::new(limits), true)
        }
    };
    let started = std::time::Instant::now();
    let st = ix.update(all);
    tracing::debug!(
        files_read = st.files_read,
        restarted = st.restarted,
        dropped = st.dropped,
        left_out = st.left_out,
        bytes = st.bytes,
        records = ix.records_len(),
        fresh,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "search index updated"
    );
    if fresh || st != ccd_search::index::UpdateStats::default() {
        let started = std::time::Instant::now();
        match ix.save(&path) {
            Ok(()) => tracing::debug!(
                path = %path.display(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "search index saved"
            ),
            // Answered from memory all the same; the next search retries.
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "search index not saved")
            }
        }
    }
    Some(ix)
}

fn is_absent(e: &IndexError) -> bool {
    matches!(e, IndexError::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

/// Another machine's hits on their way.
type RemoteHits = std::thread::JoinHandle<anyhow::Result<Vec<SearchHit>>>;

/// The words of `ccd search` to run on another machine: the same query
/// and filters, `--json`.
fn remote_words(args: &SearchArgs) -> Vec<String> {
    let mut w: Vec<String> = vec!["search".into(), "--json".into()];
    if args.regex {
        w.push("--regex".into());
    }
    if let Some(c) = &args.cwd {
        w.push("--cwd".into());
        w.push(c.to_string_lossy().into_owned());
    }
    if let Some(s) = &args.since {
        w.push("--since".into());
        w.push(s.clone());
    }
    if args.live {
        w.push("--live".into());
    }
    if args.dead {
        w.push("--dead".into());
    }
    for r in &args.role {
        w.push("--role".into());
        w.push(r.clone());
    }
    w.push("--limit".into());
    w.push(args.limit.to_string());
    w.push("--".into());
    w.extend(args.query.iter().cloned());
    w
}

/// Another machine's hits: its `ccd search --json` over ssh (the ssh
/// command line `dial-stdio` uses). No hit there is `[]` and exit 1.
fn remote(r: &ccd_client::ssh::Remote, words: &[String]) -> anyhow::Result<Vec<SearchHit>> {
    let mut line = r.command_line();
    // The last word is `dial-stdio`: search instead.
    line.pop();
    for w in words {
        line.push(OsString::from(ccd_client::ssh::shell_quote(w)));
    }
    let (prog, rest) = line.split_first().context("empty ssh command")?;
    let out = std::process::Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", prog.to_string_lossy()))?;
    match serde_json::from_slice::<Vec<SearchHit>>(&out.stdout) {
        Ok(hits) => Ok(hits),
        Err(e) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("").trim();
            anyhow::bail!("{} ({e}): {last}", out.status)
        }
    }
}

/// `role: …before[match]after…`, sanitized to one line; the match in
/// reverse video on a colour terminal, else between `«` and `»`.
fn snippet_line(h: &SearchHit, colour: bool) -> String {
    let s = &h.snippet;
    let (open, close) = if colour {
        ("\x1b[7m", "\x1b[27m")
    } else {
        ("«", "»")
    };
    format!(
        "{}: {}{open}{}{close}{}",
        display::line(&h.role),
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
