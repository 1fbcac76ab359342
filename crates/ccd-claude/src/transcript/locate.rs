//! Finding transcript files.
//!
//! By session id first (`projects/*/<sid>.jsonl`: a resumed session keeps
//! writing to its original file, wherever it runs now), by cwd second (the
//! slug rule, with long names matched by their cut prefix and confirmed by
//! the `cwd` field).

use crate::paths::normalize;
use crate::slug::{long_slug_prefix, slug};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One `<sid>.jsonl` file under a project folder. Listing does not stat
/// files (the directory entry's type suffices); [`TranscriptFile::modified`]
/// asks when needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptFile {
    pub path: PathBuf,
    /// The file stem.
    pub session_id: String,
}

impl TranscriptFile {
    /// The file's modification time now, if it can be read.
    pub fn modified(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
    }
}

fn project_dirs(projects: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(projects) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.path())
        .collect()
}

fn transcripts_in(dir: &Path, out: &mut Vec<TranscriptFile>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
            continue;
        };
        // Regular files only; symlinks and folders are not transcripts.
        if !e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            continue;
        }
        out.push(TranscriptFile {
            path: e.path(),
            session_id: stem.to_string(),
        });
    }
}

/// Every transcript under `projects` (one level of project folders).
pub fn list_all(projects: &Path) -> Vec<TranscriptFile> {
    let mut out = Vec::new();
    for dir in project_dirs(projects) {
        transcripts_in(&dir, &mut out);
    }
    out
}

/// `<session_id>.jsonl`, if `session_id` can name a file in a folder
/// (no separators, not hidden).
fn transcript_file_name(session_id: &str) -> Option<String> {
    let plain =
        !session_id.is_empty() && !session_id.contains(['/', '\\']) && !session_id.starts_with('.');
    plain.then(|| format!("{session_id}.jsonl"))
}

/// The transcript of `session_id`, wherever it lives. When several project
/// folders hold one (unusual), the most recently written wins.
pub fn find_by_session_id(projects: &Path, session_id: &str) -> Option<PathBuf> {
    let file = transcript_file_name(session_id)?;
    project_dirs(projects)
        .into_iter()
        .map(|d| d.join(&file))
        .filter_map(|p| {
            let m = std::fs::symlink_metadata(&p).ok()?;
            m.is_file().then(|| (m.modified().ok(), p))
        })
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p)
}

/// [`find_by_session_id`] for a session running in `cwd`, which writes its
/// transcript in that cwd's project folder: one stat there before a search
/// of every folder (one stat each).
pub fn find_by_session_id_in_cwd(projects: &Path, session_id: &str, cwd: &str) -> Option<PathBuf> {
    let file = transcript_file_name(session_id)?;
    let own = projects.join(slug(cwd)).join(file);
    if own.is_file() {
        return Some(own);
    }
    find_by_session_id(projects, session_id)
}

/// The project folders that may hold transcripts of `cwd`: the exact slug,
/// and for a cut slug every folder with the same prefix (older CLIs hashed
/// differently).
pub fn project_dirs_for_cwd(projects: &Path, cwd: &str) -> Vec<PathBuf> {
    let mut dirs = vec![projects.join(slug(cwd))];
    if let Some(prefix) = long_slug_prefix(cwd) {
        for d in project_dirs(projects) {
            let matches = d
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix));
            if matches && !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs
}

/// Transcripts whose sessions ran in `cwd` (compared normalized), newest
/// first. Slugs collide, so each candidate is confirmed by its `cwd` field.
pub fn find_for_cwd(projects: &Path, cwd: &Path) -> Vec<TranscriptFile> {
    let want = normalize(cwd);
    let mut candidates = Vec::new();
    for dir in project_dirs_for_cwd(projects, &want.to_string_lossy()) {
        transcripts_in(&dir, &mut candidates);
    }
    candidates.retain(|t| {
        super::read_summary(&t.path)
            .ok()
            .and_then(|s| s.cwd)
            .is_some_and(|c| normalize(Path::new(&c)) == want)
    });
    let mut dated: Vec<_> = candidates.into_iter().map(|t| (t.modified(), t)).collect();
    dated.sort_by_key(|d| std::cmp::Reverse(d.0));
    dated.into_iter().map(|(_, t)| t).collect()
}
