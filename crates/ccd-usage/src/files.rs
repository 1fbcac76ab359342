//! Which files are transcripts, and whose.
//!
//! Every `*.jsonl` under `<config>/projects/`, at most [`MAX_DEPTH`]
//! folders deep (ccusage reads `projects/**/*.jsonl`): a session's
//! transcript `<slug>/<sid>.jsonl` and its subagents'
//! `<slug>/<sid>/subagents/agent-<id>.jsonl` (docs/claude-cli-compat.md),
//! both the session `<sid>`'s.
//!
//! And the same files of an archived conversation ([`archived`]: `ccd
//! archive` moved them into `<state>/archive/<sid>/`, one zstd frame
//! each, [`ccd_claude::archive`]): each member whose original path was a
//! transcript as above, named and grouped by that original path, as if
//! it were still in place; [`with_archived`] puts them among the others
//! in the order of those paths (so counting each message once picks the
//! same copy), and leaves out a member whose place holds the file again
//! (a conversation put back is counted from its place). A manifest that
//! cannot be read is named ([`Unreadable`]), never guessed at.

use std::path::{Path, PathBuf};

/// How deep under `projects/` transcripts are looked for.
pub const MAX_DEPTH: usize = 5;

/// One transcript file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Transcript {
    pub path: PathBuf,
    /// The session it belongs to (the file's stem, or for a file in a
    /// session's folder, the folder's name).
    pub session: String,
    /// The project folder's name (the slug of the session's folder).
    pub project: String,
    /// For a member of an archive (`path` is then its compressed copy),
    /// where it was and its stated length.
    pub archived: Option<Archived>,
}

/// Where an archived transcript was, and how long it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Archived {
    /// Its original path (the order and the grouping go by it).
    pub original: PathBuf,
    /// Its length as the manifest states it (never read past).
    pub len: u64,
}

impl Transcript {
    /// Where the transcript is, or was before it was archived.
    pub fn place(&self) -> &Path {
        self.archived.as_ref().map_or(&self.path, |a| &a.original)
    }
}

/// An archived conversation whose usage could not be read (or only in
/// part), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub session: String,
    pub error: String,
}

/// The transcripts of every archive under `archive_root` (see the module
/// doc), sorted by their original paths, and the archives whose manifest
/// could not be read. Reads each manifest (bounded by
/// [`ccd_claude::archive::MAX_MANIFEST_BYTES`]), never a compressed file.
pub fn archived(archive_root: &Path) -> (Vec<Transcript>, Vec<Unreadable>) {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for e in sorted_entries(archive_root) {
        let name = e.file_name().to_string_lossy().into_owned();
        // Archives being written or removed (`.<sid>.tmp-<pid>`).
        if name.starts_with('.') {
            continue;
        }
        let m = match ccd_claude::archive::manifest(archive_root, &name) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(err) => {
                bad.push(Unreadable {
                    session: name,
                    error: err.to_string(),
                });
                continue;
            }
        };
        let Some(project_dir) = m.files[0].path.parent() else {
            continue;
        };
        let project = project_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for f in &m.files {
            let Ok(rel) = f.path.strip_prefix(project_dir) else {
                continue;
            };
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let Some(file) = parts.last() else { continue };
            let Some(stem) = file.strip_suffix(".jsonl") else {
                continue;
            };
            if parts.len() > MAX_DEPTH {
                continue;
            }
            let Some(stored) = ccd_claude::archive::stored_path(archive_root, &m, f) else {
                continue;
            };
            let session = if parts.len() == 1 { stem } else { &parts[0] };
            out.push(Transcript {
                path: stored,
                session: session.to_owned(),
                project: project.clone(),
                archived: Some(Archived {
                    original: f.path.clone(),
                    len: f.len,
                }),
            });
        }
    }
    out.sort_by(|a, b| a.place().cmp(b.place()));
    (out, bad)
}

/// `in_place` (as [`transcripts`] lists them) and `archived` (as
/// [`archived`] does) in one list in the order of their places; an
/// archived member whose place is listed in place is left out.
pub fn with_archived(in_place: Vec<Transcript>, archived: Vec<Transcript>) -> Vec<Transcript> {
    if archived.is_empty() {
        return in_place;
    }
    let mut out = Vec::with_capacity(in_place.len() + archived.len());
    let mut a = archived.into_iter().peekable();
    for t in in_place {
        while let Some(x) = a.next_if(|x| x.place() < t.place()) {
            out.push(x);
        }
        // The same place: the file is back (restored), the archive stale.
        while a.next_if(|x| x.place() == t.place()).is_some() {}
        out.push(t);
    }
    out.extend(a);
    out
}

/// Every transcript under `<config_root>/projects`, sorted by path.
///
/// The order is made as the walk goes: each folder's entries are taken
/// in name order (a folder's files before the next name's), which is the
/// order of the paths compared component by component, without sorting
/// 10,000 paths that way afterwards (a warm `ccd ls` paid ~4% of its time
/// for it).
pub fn transcripts(config_root: &Path) -> Vec<Transcript> {
    let projects = config_root.join("projects");
    let mut out = Vec::new();
    for e in sorted_entries(&projects) {
        let Ok(ft) = e.file_type() else { continue };
        if !ft.is_dir() {
            continue;
        }
        let project = e.file_name().to_string_lossy().into_owned();
        walk(&e.path(), &project, None, 1, &mut out);
    }
    out
}

/// A folder's entries in name order (none when it cannot be read).
fn sorted_entries(dir: &Path) -> Vec<std::fs::DirEntry> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<_> = rd.flatten().map(|e| (e.file_name(), e)).collect();
    v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    v.into_iter().map(|(_, e)| e).collect()
}

fn walk(dir: &Path, project: &str, session: Option<&str>, depth: usize, out: &mut Vec<Transcript>) {
    for e in sorted_entries(dir) {
        let Ok(ft) = e.file_type() else { continue };
        let name = e.file_name().to_string_lossy().into_owned();
        if ft.is_dir() {
            if depth < MAX_DEPTH {
                walk(
                    &e.path(),
                    project,
                    Some(session.unwrap_or(&name)),
                    depth + 1,
                    out,
                );
            }
        } else if ft.is_file() {
            if let Some(stem) = name.strip_suffix(".jsonl") {
                out.push(Transcript {
                    path: e.path(),
                    session: session.unwrap_or(stem).to_owned(),
                    project: project.to_owned(),
                    archived: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_files_are_their_sessions() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("projects/-home-a");
        std::fs::create_dir_all(p.join("s1/subagents")).unwrap();
        std::fs::write(p.join("s1.jsonl"), "").unwrap();
        std::fs::write(p.join("s1/subagents/agent-x.jsonl"), "").unwrap();
        std::fs::write(p.join("s1/notes.txt"), "").unwrap();
        // At the depth bound, and one past it.
        let deep = p.join("s2/a/b/c");
        std::fs::create_dir_all(deep.join("d")).unwrap();
        std::fs::write(deep.join("in.jsonl"), "").unwrap();
        std::fs::write(deep.join("d/out.jsonl"), "").unwrap();
        let t = transcripts(d.path());
        let got: Vec<(&str, &str)> = t
            .iter()
            .map(|t| (t.session.as_str(), t.project.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("s1", "-home-a"), ("s1", "-home-a"), ("s2", "-home-a")]
        );
        assert!(t.iter().any(|t| t.path.ends_with("c/in.jsonl")));
        assert!(t
            .iter()
            .any(|t| t.path.ends_with("s1/subagents/agent-x.jsonl")));
    }

    #[test]
    fn archived_members_go_in_their_places_order_and_a_place_taken_wins() {
        let t = |p: &str, archived: bool| Transcript {
            path: if archived {
                PathBuf::from(format!("/state/archive{p}.zst"))
            } else {
                PathBuf::from(p)
            },
            session: String::new(),
            project: String::new(),
            archived: archived.then(|| Archived {
                original: PathBuf::from(p),
                len: 1,
            }),
        };
        let here = vec![t("/p/a-b.jsonl", false), t("/p/c.jsonl", false)];
        // Each in the order of the paths' components (as the walk and
        // `archived` make them).
        let arch = vec![
            t("/p/a/subagents/x.jsonl", true),
            t("/p/a.jsonl", true),
            t("/p/c.jsonl", true),
            t("/p/d.jsonl", true),
        ];
        let got = with_archived(here, arch);
        let places: Vec<(&Path, bool)> = got
            .iter()
            .map(|t| (t.place(), t.archived.is_some()))
            .collect();
        assert_eq!(
            places,
            vec![
                (Path::new("/p/a/subagents/x.jsonl"), true),
                (Path::new("/p/a-b.jsonl"), false),
                (Path::new("/p/a.jsonl"), true),
                (Path::new("/p/c.jsonl"), false),
                (Path::new("/p/d.jsonl"), true),
            ]
        );
    }

    #[test]
    fn the_walk_yields_the_paths_in_their_sorted_order() {
        // Names that sort differently as bytes and as components ('-' and
        // '.' are below '/'), files beside the folder of the same stem.
        let d = tempfile::tempdir().unwrap();
        for p in ["a-b", "a", "a.b", "b"] {
            let dir = d.path().join("projects").join(p);
            std::fs::create_dir_all(dir.join("s/subagents")).unwrap();
            std::fs::create_dir_all(dir.join("s-x")).unwrap();
            for f in [
                "s.jsonl",
                "s-x.jsonl",
                "s/subagents/agent-1.jsonl",
                "s-x/z.jsonl",
                "r.jsonl",
            ] {
                std::fs::write(dir.join(f), "").unwrap();
            }
        }
        let t = transcripts(d.path());
        assert_eq!(t.len(), 20);
        let mut sorted = t.clone();
        sorted.sort();
        assert_eq!(t, sorted);
    }
}
