//! ccd's own config file (TOML). Absent file = defaults.
//!
//! ```toml
//! # Context window per model id (or id prefix), in tokens.
//! [context_windows]
//! "claude-opus-5-5" = 1000000
//! ```

use anyhow::Context;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Model id or prefix → context window in tokens.
    #[serde(default)]
    pub context_windows: BTreeMap<String, u64>,
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
