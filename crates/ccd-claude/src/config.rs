//! Locating Claude Code's config dir.
//!
//! The CLI reads `$CLAUDE_CONFIG_DIR` when set, else `$HOME/.claude`; ccd
//! follows the same rule, and every ccd command can override it explicitly
//! (`--claude-config-dir`).

use std::path::{Path, PathBuf};

/// The config dir of one Claude Code installation (`~/.claude` by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeConfigDir {
    root: PathBuf,
}

/// Why no config dir could be determined.
#[derive(Debug, thiserror::Error)]
pub enum ConfigDirError {
    #[error("cannot locate Claude Code's config dir: neither CLAUDE_CONFIG_DIR nor HOME is set")]
    NoHome,
}

impl ClaudeConfigDir {
    /// Uses `root` as the config dir.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Resolves the config dir: `explicit` if given, else `$CLAUDE_CONFIG_DIR`,
    /// else `$HOME/.claude`. Empty values count as unset.
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, ConfigDirError> {
        Self::resolve_with(explicit, |k| std::env::var_os(k))
    }

    /// [`Self::resolve`] with an injected environment, for tests.
    pub fn resolve_with(
        explicit: Option<&Path>,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, ConfigDirError> {
        if let Some(p) = explicit.filter(|p| !p.as_os_str().is_empty()) {
            return Ok(Self::new(p));
        }
        if let Some(p) = env("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
            return Ok(Self::new(p));
        }
        match env("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(Self::new(PathBuf::from(home).join(".claude"))),
            None => Err(ConfigDirError::NoHome),
        }
    }

    /// The config dir itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<config>/sessions`: one `<pid>.json` per running interactive process.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `<config>/projects`: one folder per cwd slug, holding `<sid>.jsonl`.
    pub fn projects_dir(&self) -> PathBuf {
        self.root.join("projects")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn explicit_wins() {
        let d = ClaudeConfigDir::resolve_with(
            Some(Path::new("/x")),
            env(&[("CLAUDE_CONFIG_DIR", "/y"), ("HOME", "/h")]),
        )
        .unwrap();
        assert_eq!(d.root(), Path::new("/x"));
    }

    #[test]
    fn env_then_home() {
        let d = ClaudeConfigDir::resolve_with(
            None,
            env(&[("CLAUDE_CONFIG_DIR", "/y"), ("HOME", "/h")]),
        )
        .unwrap();
        assert_eq!(d.root(), Path::new("/y"));
        let d =
            ClaudeConfigDir::resolve_with(None, env(&[("CLAUDE_CONFIG_DIR", ""), ("HOME", "/h")]))
                .unwrap();
        assert_eq!(d.root(), Path::new("/h/.claude"));
        assert_eq!(d.sessions_dir(), Path::new("/h/.claude/sessions"));
        assert_eq!(d.projects_dir(), Path::new("/h/.claude/projects"));
    }

    #[test]
    fn nothing_set_is_an_error() {
        assert!(ClaudeConfigDir::resolve_with(None, env(&[])).is_err());
    }
}
