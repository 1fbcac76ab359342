//! Command-line arguments understood by the fake (a small subset of the real CLI's).

/// What the command line asked for. Unknown arguments are ignored, as the fake only
/// needs the flags ccd passes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    pub version: bool,
    pub resume: Option<String>,
    pub fork_session: bool,
    pub session_id: Option<String>,
    /// `--permission-mode <mode>`.
    pub permission_mode: Option<String>,
    /// `--model <model>`: the model id it writes and shows.
    pub model: Option<String>,
    /// `--dangerously-skip-permissions`.
    pub skip_permissions: bool,
}

impl Args {
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Args {
        let mut out = Args::default();
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--version" | "-v" => out.version = true,
                "--resume" | "-r" => out.resume = it.next(),
                "--fork-session" => out.fork_session = true,
                "--session-id" => out.session_id = it.next(),
                "--permission-mode" => out.permission_mode = it.next(),
                "--model" => out.model = it.next(),
                "--dangerously-skip-permissions" => out.skip_permissions = true,
                _ => {
                    if let Some(v) = a.strip_prefix("--resume=") {
                        out.resume = Some(v.to_string());
                    } else if let Some(v) = a.strip_prefix("--session-id=") {
                        out.session_id = Some(v.to_string());
                    } else if let Some(v) = a.strip_prefix("--permission-mode=") {
                        out.permission_mode = Some(v.to_string());
                    } else if let Some(v) = a.strip_prefix("--model=") {
                        out.model = Some(v.to_string());
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Args {
        Args::parse(v.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags() {
        let a = parse(&["--resume", "abc", "--fork-session", "--weird", "x"]);
        assert_eq!(a.resume.as_deref(), Some("abc"));
        assert!(a.fork_session);
        assert!(!a.version);
        assert_eq!(parse(&["--session-id=u"]).session_id.as_deref(), Some("u"));
        assert!(parse(&["--version"]).version);
        let m = parse(&[
            "--permission-mode",
            "plan",
            "--model=sonnet",
            "--dangerously-skip-permissions",
        ]);
        assert_eq!(m.permission_mode.as_deref(), Some("plan"));
        assert_eq!(m.model.as_deref(), Some("sonnet"));
        assert!(m.skip_permissions);
    }
}
