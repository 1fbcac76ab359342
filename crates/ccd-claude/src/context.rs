//! How many tokens a model's context window holds.
//!
//! The transcript does not record the window, so ccd assumes one per model
//! and always says which: a user override (ccd's config file) first, then
//! a built-in table, then a default. Some CLI versions state it in their
//! welcome banner; for a session ccd runs that figure wins
//! ([`WindowSource::Screen`], read by the holder).

use serde::Serialize;
use std::collections::BTreeMap;

/// The window assumed when nothing better is known.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// Where an assumed window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowSource {
    /// ccd's config file.
    Config,
    /// ccd's built-in table.
    BuiltIn,
    /// No model known, or not in any table.
    Default,
    /// Stated by the CLI itself (the welcome banner of a session ccd runs:
    /// "Opus 4.8 (1M context)").
    Screen,
}

/// A window size and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    pub tokens: u64,
    pub source: WindowSource,
}

/// Built-in table: (model id prefix or marker, window). First match wins.
/// Claude Code marks 1M-context variants with a `[1m]` suffix.
const BUILT_IN: &[(&str, u64)] = &[("[1m]", 1_000_000)];

/// The per-model window table with user overrides.
#[derive(Debug, Clone, Default)]
pub struct ContextWindows {
    /// Exact model id or prefix → tokens. Longest matching key wins.
    overrides: BTreeMap<String, u64>,
}

impl ContextWindows {
    pub fn new(overrides: BTreeMap<String, u64>) -> Self {
        Self { overrides }
    }

    /// The window assumed for `model`.
    pub fn window_for(&self, model: Option<&str>) -> Window {
        let Some(model) = model else {
            return Window {
                tokens: DEFAULT_WINDOW,
                source: WindowSource::Default,
            };
        };
        if let Some((_, &tokens)) = self
            .overrides
            .iter()
            .filter(|(k, _)| model.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
        {
            return Window {
                tokens,
                source: WindowSource::Config,
            };
        }
        if let Some(&(_, tokens)) = BUILT_IN.iter().find(|(m, _)| model.contains(m)) {
            return Window {
                tokens,
                source: WindowSource::BuiltIn,
            };
        }
        Window {
            tokens: DEFAULT_WINDOW,
            source: WindowSource::Default,
        }
    }

    /// `tokens` as a percentage of the window, one decimal.
    pub fn percent(tokens: u64, window: Window) -> f64 {
        if window.tokens == 0 {
            return 0.0;
        }
        (tokens as f64 * 1000.0 / window.tokens as f64).round() / 10.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_order() {
        let mut o = BTreeMap::new();
        o.insert("claude-opus".to_string(), 500_000);
        o.insert("claude-opus-5-5".to_string(), 1_000_000);
        let w = ContextWindows::new(o);
        assert_eq!(w.window_for(Some("claude-opus-5-5")).tokens, 1_000_000);
        assert_eq!(w.window_for(Some("claude-opus-4")).tokens, 500_000);
        assert_eq!(
            w.window_for(Some("claude-opus-4")).source,
            WindowSource::Config
        );
        let b = w.window_for(Some("claude-sonnet-4-5[1m]"));
        assert_eq!((b.tokens, b.source), (1_000_000, WindowSource::BuiltIn));
        assert_eq!(w.window_for(None).source, WindowSource::Default);
        assert_eq!(w.window_for(Some("x")).tokens, DEFAULT_WINDOW);
        assert_eq!(ContextWindows::percent(1234, w.window_for(None)), 0.6);
    }
}
