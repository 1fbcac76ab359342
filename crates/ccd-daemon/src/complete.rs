//! Directory completion, what Tab does in the dashboard's new-session
//! prompt: here for this machine, through `dirs.complete` for the
//! daemon's (another machine's dashboard asks it).

use std::path::{Path, PathBuf};

/// The most directory entries read for one completion.
pub const MAX_ENTRIES: usize = ccd_protocol::methods::dirs::MAX_COMPLETE_ENTRIES;

/// `~` and `~/…` as the home directory.
pub fn expand(input: &str, home: Option<&str>) -> PathBuf {
    match (input.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(format!("{h}{rest}"))
        }
        _ => PathBuf::from(input),
    }
}

/// Completes `input` to a directory: one match is taken (with a `/`),
/// several extend `input` to what they share and are returned (sorted) to
/// be shown. Hidden directories only when the typed part starts with `.`.
pub fn complete(input: &str, home: Option<&str>) -> (String, Vec<String>) {
    let (dir_part, prefix) = match input.rfind('/') {
        Some(i) => (&input[..=i], &input[i + 1..]),
        None => ("", input),
    };
    let dir = if dir_part.is_empty() {
        PathBuf::from(".")
    } else {
        expand(dir_part, home)
    };
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .take(MAX_ENTRIES)
            .filter_map(|e| e.ok())
            .filter(|e| is_dir(&e.path()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix) && (prefix.starts_with('.') || !n.starts_with('.')))
            .collect(),
        Err(_) => return (input.to_string(), vec![]),
    };
    names.sort();
    match names.len() {
        0 => (input.to_string(), vec![]),
        1 => (format!("{dir_part}{}/", names[0]), vec![]),
        _ => {
            let common = common_prefix(&names);
            let choices = names.iter().map(|n| format!("{dir_part}{n}/")).collect();
            (format!("{dir_part}{common}"), choices)
        }
    }
}

fn is_dir(p: &Path) -> bool {
    std::fs::metadata(p).map(|m| m.is_dir()).unwrap_or(false)
}

fn common_prefix(names: &[String]) -> String {
    let first = &names[0];
    let mut end = first.len();
    for n in &names[1..] {
        end = first
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .map(|((i, a), _)| i + a.len_utf8())
            .last()
            .unwrap_or(0)
            .min(end);
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_completes_directories() {
        let d = tempfile::tempdir().unwrap();
        for n in ["api", "apps", "web", ".hidden"] {
            std::fs::create_dir(d.path().join(n)).unwrap();
        }
        std::fs::write(d.path().join("apple.txt"), b"").unwrap();
        let base = format!("{}/", d.path().display());
        let (got, choices) = complete(&format!("{base}a"), None);
        assert_eq!(got, format!("{base}ap"));
        assert_eq!(choices, [format!("{base}api/"), format!("{base}apps/")]);
        let (got, choices) = complete(&format!("{base}w"), None);
        assert_eq!(got, format!("{base}web/"));
        assert!(choices.is_empty());
        let (got, _) = complete(&format!("{base}."), None);
        assert_eq!(got, format!("{base}.hidden/"));
        let (got, choices) = complete(&format!("{base}zzz"), None);
        assert_eq!(got, format!("{base}zzz"));
        assert!(choices.is_empty());
        let home = d.path().to_str().unwrap();
        assert_eq!(complete("~/w", Some(home)).0, "~/web/");
        assert_eq!(expand("~/x", Some("/h")), PathBuf::from("/h/x"));
    }

    #[test]
    fn a_huge_directory_reads_at_most_the_bound() {
        let d = tempfile::tempdir().unwrap();
        for n in 0..MAX_ENTRIES + 50 {
            std::fs::create_dir(d.path().join(format!("d{n:05}"))).unwrap();
        }
        let (_, choices) = complete(&format!("{}/d", d.path().display()), None);
        assert!(choices.len() <= MAX_ENTRIES, "{}", choices.len());
        assert!(choices.len() > 1);
    }
}
