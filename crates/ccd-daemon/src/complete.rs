//! Directory completion, what Tab does in the dashboard's new-session
//! prompt: here for this machine, through `dirs.complete` for the
//! daemon's (another machine's dashboard asks it).
//!
//! A leading `~` names a home, as in a shell: `~` and `~/…` the user's
//! own (`$HOME`, else the passwd entry of the process's uid), `~name` and
//! `~name/…` user `name`'s (the passwd entry); a user with no entry is
//! [`CompleteError::NoSuchUser`]. A `~` path is never read relative to the
//! process's own directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The most directory entries read for one completion.
pub const MAX_ENTRIES: usize = ccd_protocol::methods::dirs::MAX_COMPLETE_ENTRIES;

/// Why a typed `~` path names no directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompleteError {
    /// `~name/…` with no user `name` on this machine.
    #[error("no such user {0:?} on this machine (`~{0}`)")]
    NoSuchUser(String),
    /// `~/…` with no `$HOME` and no passwd entry for the user.
    #[error("no home directory is known here ($HOME is unset and the user has no passwd entry)")]
    NoHome,
}

/// Where homes are found: `None` the process's own user, `Some(name)`
/// that user (the passwd database; a table in tests).
pub type HomeLookup<'a> = &'a dyn Fn(Option<&str>) -> Option<PathBuf>;

/// The passwd database's home of `user` (`None`: the process's uid); see
/// [`passwd`] for where it is read on each system.
pub fn passwd_home(user: Option<&str>) -> Option<PathBuf> {
    passwd::home(user)
}

/// The passwd database, per system: `ccd_os::user`.
pub use ccd_os::user as passwd;

/// A leading `~` split into the user it names (empty: the own user) and
/// the rest (empty or from the first `/`); `None` without a `~`.
fn split_tilde(input: &str) -> Option<(&str, &str)> {
    let after = input.strip_prefix('~')?;
    Some(match after.find('/') {
        Some(i) => after.split_at(i),
        None => (after, ""),
    })
}

/// `input` with its leading `~`/`~name` replaced by that home: `home` is
/// `$HOME` as the caller read it (empty counts as unset).
pub fn expand_with(
    input: &str,
    home: Option<&str>,
    lookup: HomeLookup<'_>,
) -> Result<PathBuf, CompleteError> {
    let Some((user, rest)) = split_tilde(input) else {
        return Ok(PathBuf::from(input));
    };
    let base = if user.is_empty() {
        home.filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| lookup(None))
            .ok_or(CompleteError::NoHome)?
    } else {
        lookup(Some(user)).ok_or_else(|| CompleteError::NoSuchUser(user.to_string()))?
    };
    let mut joined = OsString::from(base);
    joined.push(rest);
    Ok(PathBuf::from(joined))
}

/// `~`, `~/…`, `~name/…` as the home directory (see the module header);
/// a `~` that names no home is left as typed.
pub fn expand(input: &str, home: Option<&str>) -> PathBuf {
    expand_with(input, home, &passwd_home).unwrap_or_else(|_| PathBuf::from(input))
}

/// Completes `input` to a directory: one match is taken (with a `/`),
/// several extend `input` to what they share and are returned (sorted) to
/// be shown. Hidden directories only when the typed part starts with `.`.
/// A `~` that names no home completes to nothing.
pub fn complete(input: &str, home: Option<&str>) -> (String, Vec<String>) {
    try_complete(input, home).unwrap_or_else(|_| (input.to_string(), vec![]))
}

/// [`complete`], saying why a `~` path names no directory.
pub fn try_complete(
    input: &str,
    home: Option<&str>,
) -> Result<(String, Vec<String>), CompleteError> {
    complete_with(input, home, &passwd_home)
}

/// [`try_complete`] with homes from `lookup`.
pub fn complete_with(
    input: &str,
    home: Option<&str>,
    lookup: HomeLookup<'_>,
) -> Result<(String, Vec<String>), CompleteError> {
    let (dir_part, prefix) = match input.rfind('/') {
        Some(i) => (&input[..=i], &input[i + 1..]),
        None => ("", input),
    };
    let dir = match (dir_part, split_tilde(input)) {
        // `~` or `~name` alone: the home itself, as a shell's Tab (a name
        // no user has may be half typed: left as it is).
        ("", Some(("", _))) => {
            expand_with("~", home, lookup)?;
            return Ok(("~/".to_string(), vec![]));
        }
        ("", Some((user, _))) => {
            let found = lookup(Some(user)).is_some();
            let now = if found {
                format!("~{user}/")
            } else {
                input.to_string()
            };
            return Ok((now, vec![]));
        }
        ("", None) => PathBuf::from("."),
        _ => expand_with(dir_part, home, lookup)?,
    };
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .take(MAX_ENTRIES)
            .filter_map(|e| e.ok())
            .filter(|e| is_dir(&e.path()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix) && (prefix.starts_with('.') || !n.starts_with('.')))
            .collect(),
        Err(_) => return Ok((input.to_string(), vec![])),
    };
    names.sort();
    Ok(match names.len() {
        0 => (input.to_string(), vec![]),
        1 => (format!("{dir_part}{}/", names[0]), vec![]),
        _ => {
            let common = common_prefix(&names);
            let choices = names.iter().map(|n| format!("{dir_part}{n}/")).collect();
            (format!("{dir_part}{common}"), choices)
        }
    })
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

    /// `~` never reads the process's own directory: `~` alone is the
    /// home, `~name/` that user's home, an unknown user an error (before,
    /// `~` listed the cwd's folders starting with `~`, and `~nosuch/` read
    /// `./~nosuch/`).
    #[test]
    fn tilde_names_a_home_never_the_cwd() {
        let own = tempfile::tempdir().unwrap();
        let alice = tempfile::tempdir().unwrap();
        std::fs::create_dir(own.path().join("mine")).unwrap();
        std::fs::create_dir(alice.path().join("hers")).unwrap();
        let alice_home = alice.path().to_path_buf();
        let passwd_own = own.path().to_path_buf();
        let lookup = move |u: Option<&str>| match u {
            None => Some(passwd_own.clone()),
            Some("alice") => Some(alice_home.clone()),
            Some(_) => None,
        };
        let h = own.path().to_str().unwrap();
        assert_eq!(
            complete_with("~", Some(h), &lookup).unwrap(),
            ("~/".into(), vec![])
        );
        assert_eq!(complete_with("~/m", Some(h), &lookup).unwrap().0, "~/mine/");
        // No $HOME: the passwd entry.
        assert_eq!(complete_with("~/m", None, &lookup).unwrap().0, "~/mine/");
        assert_eq!(
            complete_with("~/m", Some(""), &lookup).unwrap().0,
            "~/mine/"
        );
        assert_eq!(
            complete_with("~alice", Some(h), &lookup).unwrap().0,
            "~alice/"
        );
        assert_eq!(
            complete_with("~alice/h", Some(h), &lookup).unwrap().0,
            "~alice/hers/"
        );
        assert_eq!(
            complete_with("~nosuch/x", Some(h), &lookup),
            Err(CompleteError::NoSuchUser("nosuch".into()))
        );
        // Half a name: as typed.
        assert_eq!(
            complete_with("~ali", Some(h), &lookup).unwrap(),
            ("~ali".into(), vec![])
        );
        let nobody = |_: Option<&str>| None;
        assert_eq!(
            complete_with("~/", None, &nobody),
            Err(CompleteError::NoHome)
        );
        assert_eq!(
            expand_with("~alice/p", None, &lookup).unwrap(),
            alice.path().join("p")
        );
        assert_eq!(
            expand("~nosuchuser-ccd/p", None),
            PathBuf::from("~nosuchuser-ccd/p")
        );
    }

    #[test]
    fn passwd_text_is_read_within_its_bound() {
        let text = "# a comment\nroot:x:0:0:root:/root:/bin/sh\nbroken\nme:x:1000:1000:Me,,,:/home/me:/bin/bash\n";
        assert_eq!(
            passwd::find(text.as_bytes(), Some("me"), 0),
            Some(PathBuf::from("/home/me"))
        );
        assert_eq!(
            passwd::find(text.as_bytes(), None, 1000),
            Some(PathBuf::from("/home/me"))
        );
        assert_eq!(passwd::find(text.as_bytes(), Some("m"), 0), None);
        assert_eq!(passwd::find(text.as_bytes(), None, 7), None);
        // Past MAX_PASSWD_BYTES: not read (one long line, then many short).
        let filler = |n: usize| "x".repeat(n) + "\n";
        for pad in [
            filler(passwd::MAX_PASSWD_BYTES as usize),
            filler(99).repeat(passwd::MAX_PASSWD_BYTES as usize / 100 + 1),
        ] {
            let late = format!("{pad}late:x:5:5::/home/late:/bin/sh\n");
            assert_eq!(passwd::find(late.as_bytes(), Some("late"), 0), None);
        }
        let early = format!(
            "late:x:5:5::/home/late:/bin/sh\n{}",
            filler(passwd::MAX_PASSWD_BYTES as usize)
        );
        assert_eq!(
            passwd::find(early.as_bytes(), Some("late"), 0),
            Some(PathBuf::from("/home/late"))
        );
    }

    /// The real passwd database: root has an entry on Linux and macOS.
    #[test]
    fn users_are_found_in_the_passwd_database() {
        let root = passwd_home(Some("root")).expect("root's home");
        assert!(root.is_absolute(), "{}", root.display());
        assert_eq!(complete("~root", None).0, "~root/");
        assert_eq!(
            try_complete("~no-such-user-ccd-test/", None),
            Err(CompleteError::NoSuchUser("no-such-user-ccd-test".into()))
        );
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
