//! Path normalization: one canonical form for every cwd that enters ccd.
//!
//! [`normalize`] makes a path absolute, resolves symlinks through the kernel
//! when the path exists, and otherwise resolves the longest existing ancestor
//! and appends the lexically cleaned rest (so a trailing slash, `//`, `.`,
//! `..` and a missing leaf all give one stable form). Cwds are compared only
//! in this form.

use std::path::{Component, Path, PathBuf};

/// Lexically cleans `path`: drops `.` and empty components, collapses `//`,
/// and resolves `..` against the preceding component (`/..` stays `/`).
/// Does not touch the file system.
pub fn lexical_clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let popped = match out.components().next_back() {
                    Some(Component::Normal(_)) => out.pop(),
                    _ => false,
                };
                if !popped && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Normalizes `path` against `base` (used when `path` is relative).
pub fn normalize_from(base: &Path, path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    if let Ok(real) = std::fs::canonicalize(&abs) {
        return real;
    }
    let clean = lexical_clean(&abs);
    // Resolve the longest existing ancestor, keep the missing tail as written.
    let mut existing = clean.clone();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                existing = parent.to_path_buf();
            }
            _ => return clean,
        }
    }
}

/// Normalizes `path` against the process's current directory.
pub fn normalize(path: &Path) -> PathBuf {
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    normalize_from(&base, path)
}

/// Whether `path` is `dir` or lies under it (both already normalized);
/// compares whole components, so `/a/bc` is not under `/a/b`.
pub fn is_within(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_cases() {
        let cases = [
            ("/a/b/", "/a/b"),
            ("/a//b", "/a/b"),
            ("/a/./b/.", "/a/b"),
            ("/a/b/../c", "/a/c"),
            ("/..", "/"),
            ("/a/../../b", "/b"),
            ("a/../..", ".."),
            ("", "."),
        ];
        for (input, want) in cases {
            assert_eq!(
                lexical_clean(Path::new(input)),
                PathBuf::from(want),
                "{input}"
            );
        }
    }

    #[test]
    fn within_is_by_component() {
        assert!(is_within(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(is_within(Path::new("/a/b"), Path::new("/a/b")));
        assert!(!is_within(Path::new("/a/bc"), Path::new("/a/b")));
    }
}
