//! macOS: Claude Code's managed settings live in
//! `/Library/Application Support/ClaudeCode`.

pub(super) const MANAGED_DIR: Option<&str> = Some("/Library/Application Support/ClaudeCode");
