//! The Claude Code versions ccd was verified against: its screen
//! classifiers and its readers of the CLI's files are proven on these (the
//! real-CLI suite runs each; `tests/real-cli/versions` is this same list,
//! a unit test keeps the two equal). Another version may work, or may
//! change a screen or a file in a way ccd misreads: `ccd doctor`, `ccd ls`
//! and the dashboard say so.

/// Verified `@anthropic-ai/claude-code` versions, oldest first. Adding
/// one means adding it to `tests/real-cli/versions` too (and the real-CLI
/// suite passing on it).
pub const VERIFIED_CLI_VERSIONS: &[&str] = &["2.1.173", "2.1.332"];

/// The newest verified version: the one to pin.
pub fn newest_verified() -> &'static str {
    VERIFIED_CLI_VERSIONS[VERIFIED_CLI_VERSIONS.len() - 1]
}

/// True when `version` (as the registry records it, `2.1.332`, or as
/// `claude --version` prints it, `2.1.332 (Claude Code)`) is one ccd was
/// verified against.
pub fn is_verified(version: &str) -> bool {
    VERIFIED_CLI_VERSIONS.contains(&bare(version))
}

/// The version number alone: the first word of `claude --version`'s
/// output (`2.1.332 (Claude Code)` → `2.1.332`).
pub fn bare(version: &str) -> &str {
    version.split_whitespace().next().unwrap_or("")
}

/// The verified versions for a message: `2.1.173, 2.1.332`.
pub fn verified_list() -> String {
    VERIFIED_CLI_VERSIONS.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real-CLI suite's list (`tests/real-cli/versions`, read by
    /// `tests/real-cli/install.sh` and the suite) is this one.
    #[test]
    fn the_real_cli_suite_pins_the_verified_versions() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real-cli/versions");
        let text = std::fs::read_to_string(&path).expect("tests/real-cli/versions");
        let pinned: Vec<&str> = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(
            pinned,
            VERIFIED_CLI_VERSIONS,
            "{} and VERIFIED_CLI_VERSIONS differ: keep them the same list",
            path.display()
        );
    }

    #[test]
    fn versions_as_the_registry_and_the_cli_write_them() {
        assert!(is_verified("2.1.332"));
        assert!(is_verified("2.1.173 (Claude Code)"));
        assert!(is_verified(" 2.1.332 (Claude Code)\n"));
        assert!(!is_verified("2.1.999 (Claude Code)"));
        assert!(!is_verified("1.0.3"));
        assert!(!is_verified("2.1.33"));
        assert!(!is_verified(""));
        assert_eq!(newest_verified(), "2.1.332");
        assert_eq!(verified_list(), "2.1.173, 2.1.332");
    }
}
