//! ccd's own config file (TOML). Absent file = defaults.
//!
//! ```toml
//! # The claude binary sessions run (else $CCD_CLAUDE_BIN, else `claude` on PATH).
//! claude_bin = "/usr/local/bin/claude"
//! # Answer the folder-trust dialog for folders you ask ccd to open (default true).
//! auto_trust = true
//! # The key that leaves an attached session (pressed twice, it is sent through).
//! detach_key = "ctrl-\\"
//! # When resuming a session fails, start a fresh one in its directory instead.
//! fresh_on_failure = false
//! # Stop held sessions idle with no client for this long (off when absent;
//! # at most 525600, a year).
//! reap_idle_minutes = 120
//! # Keep the memory of the sessions ccd holds under this (off when
//! # absent): when their total goes over, the idle ones that free the
//! # most are stopped first (resumable; see the README).
//! memory_budget = "8GiB"
//! # A session must have been idle this long before the budget may stop it
//! # (default 10; at most 525600, a year).
//! reap_min_idle_minutes = 10
//! # Sessions ccd held when the machine went down (a reboot): "ask"
//! # (default: `ccd ls` shows them as lost, `ccd restore` brings them
//! # back), "auto" (brought back when the daemon starts) or "off".
//! restore = "ask"
//! # How many of them are resumed at once (default 4, at most 64).
//! restore_at_once = 4
//! # Dead conversations archived by the daemon 5 days before Claude
//! # Code's cleanupPeriodDays sweep deletes them ("auto"), or not ("off",
//! # default); `ccd archive` does it by hand.
//! archive = "off"
//! # `ccd ui`: how a session that starts waiting is announced, once per
//! # prompt: off (default), bell, osc9 or osc777 (desktop notifications).
//! ui_notify = "bell"
//! # `ccd ui`: the machines it shows by default (one list, a HOST column).
//! # ui_hosts = ["local", "devbox"]
//! # `ccd web`: where it listens, and its TLS files (needed beyond loopback
//! # unless --behind-proxy).
//! # web_listen = "127.0.0.1:7878"
//! # web_tls_cert = "/etc/ccd/cert.pem"
//! # web_tls_key = "/etc/ccd/key.pem"
//! # Notifications when a session needs you (issue 53; the daemon runs
//! # the rules for every session on its machine, `ccd notify` where you
//! # sit). Every key is optional; see docs/notify.md.
//! # [notify]
//! # reasons = ["permission", "question", "turn_done", "exited", "failed",
//! #            "second_writer", "reaped", "budget"]   # default: all
//! # quiet_secs = 5              # not sent if answered within this
//! # turn_done_after_secs = 60   # a turn must have been busy this long
//! # rate_per_minute = 12        # the excess is dropped, then summed up once
//! # command = ["ntfy", "publish", "mytopic"]  # JSON on stdin, CCD_NOTIFY_* env
//! # webhook = "https://hooks.example/ccd"     # an HTTPS POST of the JSON
//! # webhook_ca = "/etc/ccd/hook-ca.pem"       # a private CA for the webhook
//! # send_timeout_secs = 10      # a command is killed, a POST abandoned, after it
//! # desktop = true
//! # Other machines, for `--host NAME` (ssh://[user@]host[:port]).
//! # remote_ccd = "~/.cargo/bin/ccd"     # the ccd run there (default `ccd`)
//! # ssh_command = ["ssh", "-F", "/path/ssh_config"]  # default ["ssh"]
//! # [hosts]
//! # devbox = "ssh://me@devbox.example"
//! # build = { url = "ssh://build:2222", remote_ccd = "/opt/ccd/bin/ccd" }
//! # Context window per model id (or id prefix), in tokens.
//! [context_windows]
//! "claude-opus-5-5" = 1000000
//! # Token prices of a model the built-in table lacks (or overrides), US
//! # dollars per million tokens (`ccd usage`); tier_* optional.
//! # [prices."claude-opus-5-5"]
//! # input = 5.0
//! # output = 25.0
//! # cache_write = 6.25
//! # cache_read = 0.5
//! ```

use anyhow::Context;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Model id or prefix → context window in tokens.
    #[serde(default)]
    pub context_windows: BTreeMap<String, u64>,
    /// Model id → its token prices (`ccd usage`, `ccd ls`): added to or
    /// replacing the built-in table's (crates/ccd-usage/prices.toml).
    #[serde(default)]
    pub prices: BTreeMap<String, ccd_usage::Price>,
    #[serde(default)]
    pub claude_bin: Option<PathBuf>,
    #[serde(default)]
    pub auto_trust: Option<bool>,
    /// The key that leaves an attached session (`ctrl-\\` by default).
    #[serde(default)]
    pub detach_key: Option<String>,
    /// `ccd attach` starts a fresh session when a resume fails.
    #[serde(default)]
    pub fresh_on_failure: Option<bool>,
    /// Stop sessions ccd holds that stay idle with no client attached for
    /// longer than this many minutes (off by default).
    #[serde(default)]
    pub reap_idle_minutes: Option<u64>,
    /// The held sessions' memory budget (`"8GiB"`, `"12 GB"`, `"off"`).
    #[serde(default)]
    pub memory_budget: Option<String>,
    /// How long a session must be idle before the budget may stop it
    /// (minutes; default 10).
    #[serde(default)]
    pub reap_min_idle_minutes: Option<u64>,
    /// Named other machines for `--host NAME`.
    #[serde(default)]
    pub hosts: BTreeMap<String, HostEntry>,
    /// The ccd run on a remote host (default `ccd`, looked up there).
    #[serde(default)]
    pub remote_ccd: Option<String>,
    /// The ssh program and its first options (default `["ssh"]`).
    #[serde(default)]
    pub ssh_command: Option<Vec<String>>,
    /// `ccd ui`: `off`, `bell`, `osc9` or `osc777`.
    #[serde(default)]
    pub ui_notify: Option<String>,
    /// `ccd ui`: the machines it shows when no `--host` (nor `$CCD_HOST`)
    /// names any: `local`, `[hosts]` names, `ssh://` URLs.
    #[serde(default)]
    pub ui_hosts: Option<Vec<String>>,
    /// `ccd web`: where it listens (default 127.0.0.1:7878).
    #[serde(default)]
    pub web_listen: Option<String>,
    /// `ccd web`: TLS certificate chain and key (PEM files).
    #[serde(default)]
    pub web_tls_cert: Option<PathBuf>,
    #[serde(default)]
    pub web_tls_key: Option<PathBuf>,
    /// Notifications to a person (`[notify]`; `ccd_notify::NotifyConfig`).
    #[serde(default)]
    pub notify: ccd_notify::NotifyConfig,
    /// What a daemon start does with sessions lost when the machine went
    /// down: `ask` (default: listed as lost, `ccd restore`), `auto`, `off`.
    #[serde(default)]
    pub restore: Option<String>,
    /// How many lost sessions are resumed at once (default 4, at most 64).
    #[serde(default)]
    pub restore_at_once: Option<usize>,
    /// `"auto"`: the daemon archives dead conversations 5 days before
    /// Claude Code's retention sweep would delete them; `"off"` (default).
    #[serde(default)]
    pub archive: Option<String>,
}

/// One entry of `[hosts]`: a URL, or a URL with its own remote_ccd.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum HostEntry {
    Url(String),
    Full {
        url: String,
        #[serde(default)]
        remote_ccd: Option<String>,
    },
}

impl Settings {
    /// Where the config file is looked for.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("CCD_CONFIG").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        directories::BaseDirs::new().map(|d| d.config_dir().join("ccd").join("config.toml"))
    }

    /// Loads `explicit`, else the default path; a missing default file is
    /// the defaults, a missing explicit one an error.
    pub fn load(explicit: Option<&Path>) -> anyhow::Result<Self> {
        let (path, must_exist) = match explicit {
            Some(p) => (p.to_path_buf(), true),
            None => match Self::default_path() {
                Some(p) => (p, false),
                None => return Ok(Self::default()),
            },
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => {
                return Ok(Self::default())
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))
    }
}

/// A memory budget as written in the config: a size with a unit
/// (`8GiB`, `8 GiB`, `12GB`, `512MiB`; a bare number is bytes), or `off`.
pub fn parse_budget(text: &str) -> anyhow::Result<Option<u64>> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("off") || t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let size: bytesize::ByteSize = t
        .parse()
        .map_err(|e: String| anyhow::anyhow!("not a size ({e}); write it like \"8GiB\""))?;
    if size.as_u64() == 0 {
        anyhow::bail!("a budget of 0 bytes would stop every idle session; write \"off\" for none");
    }
    Ok(Some(size.as_u64()))
}

/// The most minutes `reap_idle_minutes` and `reap_min_idle_minutes` take
/// (a year): more is a config error, never a number that wrapped around.
pub const MAX_REAP_MINUTES: u64 = 525_600;

/// A `reap_*_minutes` value as a duration (`None` when the key is
/// absent); over [`MAX_REAP_MINUTES`] is an error naming `key`.
pub fn reap_minutes(key: &str, value: Option<u64>) -> anyhow::Result<Option<Duration>> {
    let Some(minutes) = value else {
        return Ok(None);
    };
    if minutes > MAX_REAP_MINUTES {
        let instead = match key {
            "reap_idle_minutes" => "; to never stop idle sessions, leave reap_idle_minutes out",
            "reap_min_idle_minutes" => "; to keep sessions from the memory budget, pin them (`ccd pin`) or set memory_budget = \"off\"",
            _ => "",
        };
        anyhow::bail!(
            "{key} = {minutes} in the config is too large: at most {MAX_REAP_MINUTES} minutes (a year){instead}"
        );
    }
    // At most 525,600 × 60 seconds: no overflow.
    Ok(Some(Duration::from_secs(minutes * 60)))
}

/// ccd's state directory (logs, the transcript summary cache):
/// `$CCD_STATE_DIR`, else the platform's
/// state dir (`~/.local/state/ccd`).
pub fn state_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CCD_STATE_DIR").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    directories::BaseDirs::new()
        .map(|d| {
            d.state_dir()
                .unwrap_or_else(|| d.data_local_dir())
                .join("ccd")
        })
        .unwrap_or_else(|| std::env::temp_dir().join("ccd-state"))
}

/// Finds `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_sizes_with_units_or_off() {
        assert_eq!(parse_budget("8GiB").unwrap(), Some(8 << 30));
        assert_eq!(parse_budget(" 8 GiB ").unwrap(), Some(8 << 30));
        assert_eq!(parse_budget("512MiB").unwrap(), Some(512 << 20));
        assert_eq!(parse_budget("12GB").unwrap(), Some(12_000_000_000));
        assert_eq!(parse_budget("off").unwrap(), None);
        for bad in ["lots", "8 parsecs", "-1GiB", "0", ""] {
            let e = parse_budget(bad).unwrap_err().to_string();
            assert!(!e.is_empty(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_config_takes_the_budget_keys_and_refuses_a_typo() {
        let s: Settings =
            toml::from_str("memory_budget = \"8GiB\"\nreap_min_idle_minutes = 30\n").unwrap();
        assert_eq!(s.memory_budget.as_deref(), Some("8GiB"));
        assert_eq!(s.reap_min_idle_minutes, Some(30));
        assert!(toml::from_str::<Settings>("memory_budge = \"8GiB\"").is_err());
    }

    #[test]
    fn the_notify_table_parses_and_refuses_a_typo() {
        let s: Settings = toml::from_str(
            "[notify]\ncommand = [\"ntfy\", \"publish\", \"t\"]\nquiet_secs = 0\nreasons = [\"permission\"]\n",
        )
        .unwrap();
        assert_eq!(s.notify.command.as_deref().map(|c| c.len()), Some(3));
        assert_eq!(s.notify.quiet_secs, 0);
        assert_eq!(s.notify.reasons, [ccd_notify::Reason::Permission]);
        assert_eq!(
            toml::from_str::<Settings>("").unwrap().notify,
            ccd_notify::NotifyConfig::default()
        );
        assert!(toml::from_str::<Settings>("[notify]\nquiet = 1\n").is_err());
        assert!(toml::from_str::<Settings>("[notify]\nreasons = [\"everything\"]\n").is_err());
    }

    #[test]
    fn reap_minutes_past_the_bound_are_an_error_naming_the_key() {
        assert_eq!(reap_minutes("reap_idle_minutes", None).unwrap(), None);
        assert_eq!(
            reap_minutes("reap_idle_minutes", Some(120)).unwrap(),
            Some(Duration::from_secs(7200))
        );
        assert_eq!(
            reap_minutes("reap_min_idle_minutes", Some(MAX_REAP_MINUTES)).unwrap(),
            Some(Duration::from_secs(MAX_REAP_MINUTES * 60))
        );
        // u64::MAX / 60 + 1 minutes wrapped to 44 s when multiplied.
        for key in ["reap_idle_minutes", "reap_min_idle_minutes"] {
            for m in [MAX_REAP_MINUTES + 1, u64::MAX / 60 + 1, u64::MAX] {
                let e = reap_minutes(key, Some(m)).unwrap_err().to_string();
                assert!(e.contains(key) && e.contains("at most 525600"), "{e}");
            }
        }
        // Through the TOML too: the largest integer TOML holds.
        let s: Settings = toml::from_str("reap_idle_minutes = 9223372036854775807\n").unwrap();
        assert!(reap_minutes("reap_idle_minutes", s.reap_idle_minutes).is_err());
    }
}
