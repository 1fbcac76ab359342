//! `ccd search`: find sessions by what was said in them, on this machine
//! and with `--host` on other machines too.
//!
//! This machine: when its daemon runs (never started for a search: a
//! failed `connect` says it does not), `sessions.search` asked of it,
//! which answers from the search index it keeps open. Without one, the
//! search runs here as the daemon runs it (`ccd_search::service`, the one
//! piece both use): the sessions from the same index `ccd ls` builds
//! (liveness re-validated against the process table), which gives each
//! hit its state and folder and applies `--live`/`--dead`/`--cwd` before
//! any transcript is read; the search index kept in the state dir
//! (`search.idx`, `service::kept_index`: loaded, brought up to date with
//! only the appended bytes, saved under its `flock`) answers, and when it
//! cannot be kept or read the scan does. `--rebuild-index` rebuilds that
//! file here (waiting for the lock) and `--no-index` scans, both without
//! asking the daemon.
//!
//! Another machine runs its own `ccd search --json` with the same words
//! over ssh (the ssh command line `dial-stdio` uses), on a thread each
//! while this one searches; its rows are
//! [`ccd_protocol::search::SearchHit`]s, merged by score, and a machine
//! that cannot be asked is named on stderr (exit 1) while the others
//! answer. Every text printed goes through [`ccd_claude::display`]'s
//! sanitizer, another machine's too; the match is marked after that, so a
//! transcript cannot forge the marks' escape sequences.

use crate::cli::{GlobalArgs, SearchArgs};
use crate::hosts::{Target, LOCAL};
use crate::settings::Settings;
use crate::shared::cells::{ago, short_id, tilde};
use crate::shared::connect::sending_existing_local;
use anyhow::Context;
use ccd_claude::context::ContextWindows;
use ccd_claude::display;
use ccd_claude::display::width::{clip, pad, width};
use ccd_claude::index;
use ccd_claude::ClaudeConfigDir;
use ccd_client::ClientError;
use ccd_protocol::methods::session::SessionState;
use ccd_protocol::methods::session::{SearchParams, SearchResult, SearchScope, SessionsSearch};
use ccd_protocol::search::SearchHit;
use ccd_search::service::{self, Request};
use ccd_search::{Role, ScanStats};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::{ExitCode, Stdio};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The folder column's width.
const FOLDER_COLUMNS: usize = 32;

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
    let mut searched = None;
    if targets.iter().any(|t| matches!(t, Target::Local)) {
        let (local, st) = local_hits(global, args, &plan, now)?;
        searched = Some(local.sessions);
        rows.extend(local.hits);
        stats = st;
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
            match searched {
                Some(n) => eprintln!("ccd: no session matches ({n} transcripts searched)"),
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

/// The search this machine answers: the parameters `sessions.search`
/// takes (what the daemon is sent) and the same parsed (what a search
/// without the daemon runs), checked once.
struct Plan {
    params: SearchParams,
    request: Request,
}

impl Plan {
    fn parse(args: &SearchArgs, now: OffsetDateTime) -> anyhow::Result<Plan> {
        for r in &args.role {
            if Role::parse(r).is_none() {
                anyhow::bail!(
                    "unknown --role {}: one of user, assistant, tool, title, summary",
                    display::line(r)
                );
            }
        }
        let since = args
            .since
            .as_deref()
            .map(|s| parse_since(s, now))
            .transpose()?
            .map(|t| t.format(&Rfc3339))
            .transpose()?;
        let params = SearchParams {
            query: args.query.join(" "),
            regex: args.regex,
            // Absolute here: the daemon's working folder is not this one.
            cwd: args.cwd.as_deref().map(|c| {
                ccd_claude::paths::normalize(c)
                    .to_string_lossy()
                    .into_owned()
            }),
            since,
            scope: if args.live {
                SearchScope::Live
            } else if args.dead {
                SearchScope::Dead
            } else {
                SearchScope::All
            },
            roles: args.role.clone(),
            limit: u32::from(args.limit),
        };
        let request = Request::parse(&params)?;
        Ok(Plan { params, request })
    }
}

/// This machine's hits: asked of the daemon when one runs (never started
/// for a search; its index is open), else searched here through the
/// index kept in the state dir (`--no-index`: by scanning), the session
/// index as `ccd ls` builds it picking the transcripts (state, folder).
/// The stats are `None` when the daemon answered.
fn local_hits(
    global: &GlobalArgs,
    args: &SearchArgs,
    plan: &Plan,
    now: OffsetDateTime,
) -> anyhow::Result<(SearchResult, Option<ScanStats>)> {
    if !args.no_index && !args.rebuild_index {
        if let Some(result) = from_daemon(global, &plan.params)? {
            return Ok((result, None));
        }
    }
    let settings = Settings::load(global.config.as_deref())?;
    let config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let probe = ccd_claude::liveness::system_probe();
    let windows = ContextWindows::new(settings.context_windows);
    let state = crate::settings::state_dir();
    let idx = index::build_cached_stamped(&config, probe.as_ref(), &windows, Some(&state))
        .with_context(|| format!("reading sessions under {}", config.root().display()))?;
    let picked = service::pick(&idx.sessions, &plan.request);
    let kept = if args.no_index {
        None
    } else {
        // The listing's stamps: its stat of each transcript is the search's one.
        service::kept_index_stamped(&state, &picked.all, args.rebuild_index, &|p| {
            idx.stamps.get(p).copied()
        })
    };
    // Trusted when the kept index was updated just now: its update's stat
    // of each file is the search's one.
    let index = kept.as_ref().map(|(ix, fresh)| (ix, *fresh));
    let mut answer = service::answer(&plan.request, &picked, index, now);
    // Archived conversations: through the kept index (it covers them),
    // else each read decompressed.
    let root = super::archive::archive_root();
    let arch = kept
        .as_ref()
        .and_then(|(ix, _)| ccd_search::archived::search_indexed(ix, &root, &plan.request, now))
        .unwrap_or_else(|| ccd_search::archived::search(&root, &plan.request, now));
    answer.stats.add(&arch.stats);
    ccd_search::archived::merge(&mut answer.result, arch, plan.request.limit);
    // The index, the session list and its transcripts' paths are not
    // freed: the process ends once the rows are printed, and freeing
    // their ~10^5 allocations one by one took several ms of a search
    // over 10,000 transcripts.
    std::mem::forget(picked);
    std::mem::forget(kept);
    std::mem::forget(idx);
    Ok((answer.result, Some(answer.stats)))
}

/// `sessions.search` asked of this machine's daemon if one answers on the
/// socket (`None`: none runs, or it could not be asked: searched here).
/// A refusal of the query is an error like any other.
fn from_daemon(global: &GlobalArgs, params: &SearchParams) -> anyhow::Result<Option<SearchResult>> {
    // The search goes out right behind `hello`: one round trip.
    let (mut client, sent) = match sending_existing_local::<SessionsSearch>(global, params) {
        Ok(Some(c)) => c,
        Ok(None) => {
            tracing::trace!("no daemon: searched here");
            return Ok(None);
        }
        Err(e) => {
            tracing::trace!(error = %e, "daemon not reached: searched here");
            return Ok(None);
        }
    };
    match client.wait_sent::<SessionsSearch>(sent) {
        Ok(r) => {
            tracing::trace!(
                indexed = r.indexed,
                hits = r.hits.len(),
                sessions = r.sessions,
                "search answered by the daemon"
            );
            Ok(Some(r))
        }
        Err(ClientError::Rpc(e)) if e.code == ccd_protocol::ErrorCode::InvalidParams.code() => {
            anyhow::bail!("{}", display::line(&e.message))
        }
        Err(e) => {
            tracing::trace!(error = %e, "daemon search failed: searched here");
            Ok(None)
        }
    }
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
