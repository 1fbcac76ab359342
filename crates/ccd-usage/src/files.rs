//! Which files are transcripts, and whose.
//!
//! Every `*.jsonl` under `<config>/projects/`, at most [`MAX_DEPTH`]
//! folders deep (ccusage reads `projects/**/*.jsonl`): a session's
//! transcript `<slug>/<sid>.jsonl` and its subagents'
//! `<slug>/<sid>/subagents/agent-<id>.jsonl` (docs/claude-cli-compat.md),
//! both the session `<sid>`'s.

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
