//! `ccd archive`: move dead conversations out of Claude Code's folder, out
//! of reach of its retention sweep, into `<state dir>/archive/` (compressed,
//! [`ccd_claude::archive`]), optionally trimmed losslessly first; list them;
//! put one back (`--restore`). `ccd attach`/`fork` of an archived session
//! puts it back first ([`restore_if_archived`]). Needs no daemon: liveness
//! is the registry's, checked again right before the originals go.

use crate::cli::{ArchiveArgs, GlobalArgs};
use crate::settings::state_dir;
use anyhow::Context;
use ccd_claude::archive::{self, ArchiveError, Manifest};
use ccd_claude::display::line;
use ccd_claude::ClaudeConfigDir;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

/// Where archives live.
pub fn archive_root() -> PathBuf {
    state_dir().join("archive")
}

/// `25d`, `36h`, `2w` → a duration.
pub fn parse_age(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a number and d, h or w (e.g. 25d)"))?;
    let secs = match unit {
        "d" | "" => 86_400,
        "h" => 3_600,
        "w" => 7 * 86_400,
        _ => return Err(format!("{s:?}: the unit is d, h or w (e.g. 25d)")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

/// `Some(why)` when a registry entry of `sid` may be running.
fn live(config: &ClaudeConfigDir, sid: &str) -> Option<String> {
    let probe = ccd_claude::liveness::system_probe();
    ccd_claude::liveness::running_entries(&config.sessions_dir(), probe.as_ref())
        .into_iter()
        .find(|e| e.session_id == sid)
        .map(|e| format!("pid {} in the registry", e.pid))
}

/// The full ids `query` names among Claude Code's transcripts (exact id,
/// else a unique prefix).
fn resolve(config: &ClaudeConfigDir, query: &str) -> Result<String, String> {
    let files = ccd_claude::transcript::list_all(&config.projects_dir());
    if files.iter().any(|f| f.session_id == query) {
        return Ok(query.to_string());
    }
    let mut hits: Vec<&str> = files
        .iter()
        .map(|f| f.session_id.as_str())
        .filter(|s| s.starts_with(query))
        .collect();
    hits.sort_unstable();
    hits.dedup();
    match hits.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "no conversation {query} in {}",
            config.projects_dir().display()
        )),
        many => Err(format!(
            "{query} names {} conversations: give more of the id",
            many.len()
        )),
    }
}

/// The archived id `query` names (exact, else a unique prefix).
fn resolve_archived(query: &str) -> Result<Manifest, String> {
    let all = archive::list(&archive_root());
    if let Some(m) = all.iter().find(|m| m.session_id == query) {
        return Ok(m.clone());
    }
    let hits: Vec<&Manifest> = all
        .iter()
        .filter(|m| m.session_id.starts_with(query))
        .collect();
    match hits.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!("no archived conversation {query}")),
        many => Err(format!(
            "{query} names {} archived conversations",
            many.len()
        )),
    }
}

pub fn run(global: &GlobalArgs, args: &ArchiveArgs) -> anyhow::Result<ExitCode> {
    super::this_machine_only(global, "ccd archive")?;
    let config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())
        .context("locating Claude Code's config dir")?;
    let root = archive_root();
    if args.list {
        let all = archive::list(&root);
        if args.json {
            println!("{}", ccd_claude::display::json::to_string_pretty(&all)?);
        } else {
            for m in &all {
                println!(
                    "{}  archived {}  {} -> {}  {}",
                    line(&m.session_id),
                    line(&m.archived_at),
                    super::trim::human_bytes(m.bytes()),
                    super::trim::human_bytes(m.stored_bytes),
                    line(m.cwd.as_deref().unwrap_or("?"))
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(q) = &args.restore {
        let m = match resolve_archived(q) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("ccd archive: {}", line(&e));
                return Ok(ExitCode::FAILURE);
            }
        };
        return Ok(match archive::restore(&root, &m.session_id) {
            Ok(m) => {
                eprintln!(
                    "ccd: restored {} ({} files) to {}",
                    line(&m.session_id),
                    m.files.len(),
                    line(&m.files[0].path.display().to_string())
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ccd archive: {}", line(&e.to_string()));
                ExitCode::FAILURE
            }
        });
    }
    let mut ids = vec![];
    let mut failed = false;
    for q in &args.sessions {
        match resolve(&config, q) {
            Ok(s) => ids.push(s),
            Err(e) => {
                eprintln!("ccd archive: {}", line(&e));
                failed = true;
            }
        }
    }
    if let Some(age) = args.older_than {
        let horizon = SystemTime::now() - age;
        for f in ccd_claude::retention::scan(&config) {
            if f.modified < horizon && live(&config, &f.session_id).is_none() {
                ids.push(f.session_id);
            }
        }
    }
    ids.sort();
    ids.dedup();
    if ids.is_empty() && !failed {
        eprintln!("ccd archive: nothing to archive");
        return Ok(ExitCode::SUCCESS);
    }
    let mut done = vec![];
    for sid in &ids {
        if args.dry_run {
            println!("{}", line(sid));
            continue;
        }
        match one(&config, &root, sid, args.trim) {
            Ok(m) => {
                eprintln!(
                    "ccd: archived {} ({} files, {} -> {}{})",
                    line(sid),
                    m.files.len(),
                    super::trim::human_bytes(m.bytes()),
                    super::trim::human_bytes(m.stored_bytes),
                    if m.trimmed { ", trimmed first" } else { "" }
                );
                done.push(m);
            }
            Err(e) => {
                eprintln!("ccd archive: {}: {}", line(sid), line(&e));
                failed = true;
            }
        }
    }
    if args.json {
        println!("{}", ccd_claude::display::json::to_string_pretty(&done)?);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Archives one dead conversation, trimmed first when asked.
fn one(
    config: &ClaudeConfigDir,
    root: &std::path::Path,
    sid: &str,
    trim: bool,
) -> Result<Manifest, String> {
    let guard = || live(config, sid);
    if trim {
        if let Some(path) = ccd_claude::transcript::find_by_session_id(&config.projects_dir(), sid)
        {
            let backups = state_dir().join("trim-backups").join(sid);
            ccd_claude::trim::trim(
                &path,
                &backups,
                &ccd_claude::trim::TrimOptions::default(),
                &guard,
                None,
            )
            .map_err(|e| format!("trim refused, nothing archived: {e}"))?;
        }
    }
    archive::archive(config, root, sid, &guard, trim, &|_| {}).map_err(|e| match e {
        ArchiveError::Live(..) => format!("{e} (end it first)"),
        e => e.to_string(),
    })
}

/// The archived conversations as `ccd ls` rows (state `archived`): the
/// folder and last write from the manifest, the archive folder as the
/// transcript, its uncompressed size.
pub fn archived_rows() -> Vec<ccd_protocol::methods::session::SessionInfo> {
    // The daemon's `sessions.list` lists them with the same code.
    ccd_daemon::views::archived_info(&archive_root())
}

/// Before `ccd attach`/`fork`: when `query` names no conversation in Claude
/// Code's folder but an archived one, puts it back (and says so).
pub fn restore_if_archived(global: &GlobalArgs, query: &str) -> anyhow::Result<()> {
    let Ok(config) = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref()) else {
        return Ok(());
    };
    // Only when nothing in Claude Code's folder answers to it (an id or
    // prefix there, even an ambiguous one, is for the daemon to judge).
    let here = ccd_claude::transcript::list_all(&config.projects_dir());
    if here.iter().any(|f| f.session_id.starts_with(query)) {
        return Ok(());
    }
    let Ok(m) = resolve_archived(query) else {
        return Ok(());
    };
    let m = archive::restore(&archive_root(), &m.session_id)
        .map_err(|e| anyhow::anyhow!("putting back archived session {query}: {e}"))?;
    eprintln!(
        "ccd: {} was archived: put back in {}",
        line(&m.session_id),
        line(&m.files[0].path.display().to_string())
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_write_them() {
        assert_eq!(parse_age("25d").unwrap(), Duration::from_secs(25 * 86_400));
        assert_eq!(parse_age("36h").unwrap(), Duration::from_secs(36 * 3_600));
        assert_eq!(parse_age("2w").unwrap(), Duration::from_secs(14 * 86_400));
        assert_eq!(parse_age("7").unwrap(), Duration::from_secs(7 * 86_400));
        assert!(parse_age("d").is_err() && parse_age("3m").is_err());
    }
}
