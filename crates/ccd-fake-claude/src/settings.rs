//! Behaviour knobs, read once from the environment (see the crate README for the list).

use std::path::PathBuf;
use std::time::Duration;

/// Which recorded CLI version a behaviour imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    V2_1_173,
    V2_1_332,
}

impl Variant {
    fn from_env(name: &str) -> Variant {
        match std::env::var(name).as_deref() {
            Ok("2.1.173") => Variant::V2_1_173,
            _ => Variant::V2_1_332,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
    pub config_dir: PathBuf,
    /// `<config>/.claude.json` when `CLAUDE_CONFIG_DIR` is set, else `$HOME/.claude.json`.
    pub global_state: PathBuf,
    /// Trust dialog text/default and the look of the whole UI.
    pub ui: Variant,
    /// Whether `--resume` from another cwd is refused (2.1.173) or allowed (2.1.332).
    pub resume_cwd_rule: Variant,
    pub input_delay: Duration,
    pub turn: Duration,
    pub busy_after: Duration,
    /// How long each chunk of input waits before its keys act (a CLI slow
    /// to take keys: the screen lags what was typed). Default none.
    pub key_lag: Duration,
    /// How long after the registry says `waiting` a permission dialog is
    /// drawn (the real CLI: ~0.1 s). Default none.
    pub dialog_lag: Duration,
    pub version: String,
    pub model: String,
    pub usage_input: u64,
    pub crash_after: Option<Duration>,
    /// Crash with SIGABRT instead of exit status 3.
    pub crash_signal: bool,
    pub api_key_dialog: bool,
    pub prompt_too_long: bool,
}

fn env_ms(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
}

fn env_flag(name: &str) -> bool {
    matches!(
        std::env::var(name).as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

/// `FAKE_CLAUDE_VERSION`, default "2.1.332" (needs nothing else from the environment).
pub fn version() -> String {
    std::env::var("FAKE_CLAUDE_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "2.1.332".to_string())
}

impl Settings {
    pub fn from_env() -> Result<Settings, String> {
        let config_override = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty());
        let home = std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let (config_dir, global_state) = match (config_override, home) {
            (Some(dir), _) => {
                let dir = PathBuf::from(dir);
                (dir.clone(), dir.join(".claude.json"))
            }
            (None, Some(home)) => (home.join(".claude"), home.join(".claude.json")),
            (None, None) => return Err("neither CLAUDE_CONFIG_DIR nor HOME is set".into()),
        };
        Ok(Settings {
            config_dir,
            global_state,
            ui: Variant::from_env("FAKE_CLAUDE_TRUST_VARIANT"),
            resume_cwd_rule: Variant::from_env("FAKE_CLAUDE_RESUME_CWD_RULE"),
            input_delay: env_ms("FAKE_CLAUDE_INPUT_DELAY_MS").unwrap_or(Duration::from_millis(300)),
            turn: env_ms("FAKE_CLAUDE_TURN_MS").unwrap_or(Duration::from_millis(300)),
            busy_after: env_ms("FAKE_CLAUDE_BUSY_AFTER_MS").unwrap_or(Duration::from_millis(200)),
            key_lag: env_ms("FAKE_CLAUDE_KEY_LAG_MS").unwrap_or(Duration::ZERO),
            dialog_lag: env_ms("FAKE_CLAUDE_DIALOG_LAG_MS").unwrap_or(Duration::ZERO),
            version: version(),
            model: std::env::var("FAKE_CLAUDE_MODEL")
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "claude-opus-5-5".to_string()),
            usage_input: std::env::var("FAKE_CLAUDE_USAGE_INPUT")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(1234),
            crash_after: env_ms("FAKE_CLAUDE_CRASH_AFTER_MS"),
            crash_signal: env_flag("FAKE_CLAUDE_CRASH_SIGNAL"),
            api_key_dialog: env_flag("FAKE_CLAUDE_API_KEY_DIALOG"),
            prompt_too_long: env_flag("FAKE_CLAUDE_PROMPT_TOO_LONG"),
        })
    }

    /// "Opus 5.5" for "claude-opus-5-5": the name the header shows.
    pub fn model_display_name(&self) -> String {
        let id = self.model.strip_prefix("claude-").unwrap_or(&self.model);
        let mut parts = id.split('-').filter(|p| p.len() < 8);
        let family = parts.next().unwrap_or("Claude");
        let mut fam = family.to_string();
        if let Some(first) = fam.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        let ver: Vec<&str> = parts.collect();
        if ver.is_empty() {
            fam
        } else {
            format!("{fam} {}", ver.join("."))
        }
    }
}
