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
pub fn transcripts(config_root: &Path) -> Vec<Transcript> {
    let projects = config_root.join("projects");
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(&projects) else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if !ft.is_dir() {
            continue;
        }
        let project = e.file_name().to_string_lossy().into_owned();
        walk(&e.path(), &project, None, 1, &mut out);
    }
    out.sort();
    out
}

fn walk(dir: &Path, project: &str, session: Option<&str>, depth: usize, out: &mut Vec<Transcript>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
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
}
