//! Linux: Claude Code's managed settings live in `/etc/claude-code`.

pub(super) const MANAGED_DIR: Option<&str> = Some("/etc/claude-code");
