//! The price of tokens per model: a dated table built in (`prices.toml`,
//! its source and date in it) that the config can add to or override.
//!
//! A model is priced only when the table names it: exactly, with an
//! `anthropic/` prefix, a context-window variant (`[1m]`) or a date
//! suffix (`-YYYYMMDD`) the table names it without (ccusage reads those
//! the same way). Any other model is reported as unpriced, never guessed
//! from a similar name (`claude-opus-4-9` is not `claude-opus-4-8`).

use crate::tally::Tokens;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The table built into ccd.
pub const BUILTIN: &str = include_str!("../prices.toml");

/// One model's prices, US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
    /// 1-hour cache writes (twice the input price where not given).
    pub cache_write_1h: Option<f64>,
    /// Tokens of one kind in one request above this pay the tier price.
    pub tier_from: Option<u64>,
    pub tier_input: Option<f64>,
    pub tier_output: Option<f64>,
    pub tier_cache_write: Option<f64>,
    pub tier_cache_read: Option<f64>,
    pub tier_cache_write_1h: Option<f64>,
}

impl Price {
    /// What one request's tokens cost, in dollars (each kind priced on its
    /// own, the part above `tier_from` at the tier price).
    pub fn cost(&self, t: &Tokens) -> f64 {
        let part = |n: u64, base: f64, tier: Option<f64>| -> f64 {
            match (self.tier_from, tier) {
                (Some(from), Some(high)) if n > from => {
                    (from as f64 * base + (n - from) as f64 * high) / 1e6
                }
                _ => n as f64 * base / 1e6,
            }
        };
        part(t.input, self.input, self.tier_input)
            + part(t.output, self.output, self.tier_output)
            + part(
                t.cache_creation.saturating_sub(t.cache_creation_1h),
                self.cache_write,
                self.tier_cache_write,
            )
            + part(
                t.cache_creation_1h,
                self.cache_write_1h.unwrap_or(2.0 * self.input),
                self.tier_cache_write_1h
                    .or(self.tier_input.map(|p| 2.0 * p)),
            )
            + part(t.cache_read, self.cache_read, self.tier_cache_read)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("price table: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("price of {model}: {what} is negative or not a number")]
    Bad { model: String, what: &'static str },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    date: String,
    source: String,
    prices: BTreeMap<String, Price>,
}

/// Prices by model id.
#[derive(Debug, Clone)]
pub struct PriceTable {
    /// The built-in table's date (`YYYY-MM-DD`) and source.
    pub date: String,
    pub source: String,
    models: BTreeMap<String, Price>,
    /// Models the config set.
    overridden: Vec<String>,
}

impl PriceTable {
    /// The built-in table.
    pub fn builtin() -> Self {
        // The file is ours and its parse is tested: a failure is a build bug.
        let f: TableFile = toml::from_str(BUILTIN).unwrap_or_else(|e| {
            tracing::error!(error = %e, "built-in price table unreadable");
            TableFile {
                date: String::new(),
                source: String::new(),
                prices: BTreeMap::new(),
            }
        });
        Self {
            date: f.date,
            source: f.source,
            models: f.prices,
            overridden: Vec::new(),
        }
    }

    /// The built-in table with the config's `[prices."model"]` entries
    /// added or replacing the built-in ones.
    pub fn with(overrides: &BTreeMap<String, Price>) -> Result<Self, PriceError> {
        let mut t = Self::builtin();
        for (model, p) in overrides {
            for (what, v) in [
                ("input", Some(p.input)),
                ("output", Some(p.output)),
                ("cache_write", Some(p.cache_write)),
                ("cache_read", Some(p.cache_read)),
                ("tier_input", p.tier_input),
                ("tier_output", p.tier_output),
                ("tier_cache_write", p.tier_cache_write),
                ("tier_cache_read", p.tier_cache_read),
                ("cache_write_1h", p.cache_write_1h),
                ("tier_cache_write_1h", p.tier_cache_write_1h),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(PriceError::Bad {
                            model: model.clone(),
                            what,
                        });
                    }
                }
            }
            t.models.insert(model.clone(), *p);
            t.overridden.push(model.clone());
        }
        Ok(t)
    }

    /// The price of `model`, if the table names it.
    pub fn get(&self, model: &str) -> Option<&Price> {
        if let Some(p) = self.models.get(model) {
            return Some(p);
        }
        let bare = model.strip_prefix("anthropic/").unwrap_or(model);
        if let Some(p) = self.models.get(bare) {
            return Some(p);
        }
        // The same model named with its context-window variant
        // (`claude-opus-4-6[1m]`) or a dated release of a model the table
        // names undated (`claude-opus-4-8-20260101`), as ccusage reads them.
        let bare = bare.split_once('[').map_or(bare, |(b, _)| b);
        if let Some(p) = self.models.get(bare) {
            return Some(p);
        }
        let (stem, tail) = bare.rsplit_once('-')?;
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
            return self.models.get(stem);
        }
        None
    }

    /// What `t` cost with `model`, `None` when it is unpriced.
    pub fn cost(&self, model: Option<&str>, t: &Tokens) -> Option<f64> {
        Some(self.get(model?)?.cost(t))
    }

    /// The models the config set.
    pub fn overridden(&self) -> &[String] {
        &self.overridden
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_parses_and_is_dated() {
        let t = PriceTable::builtin();
        assert_eq!(t.date.len(), 10);
        assert!(!t.source.is_empty());
        assert!(t.get("claude-sonnet-4-20250514").is_some());
        assert!(t.get("anthropic/claude-sonnet-4-20250514").is_some());
        assert!(t.get("claude-opus-4-8-20260101").is_some());
        assert!(t.get("claude-opus-4-6[1m]").is_some());
        assert!(t.get("claude-opus-4-9").is_none());
        assert!(t.get("claude-opus-4-9-20260101").is_none());
        // Unknown models are unpriced, never guessed.
        assert!(t.get("claude-opus-5-5").is_none());
        assert!(t.get("claude-sonnet-4-7").is_none());
        assert_eq!(t.cost(None, &Tokens::default()), None);
    }

    #[test]
    fn tiered_price_as_ccusage_counts_it() {
        // Measured with ccusage 20.0.24: 1M input tokens of Sonnet 4 in one
        // request cost $5.40 (200k at $3, 800k at $6), 1M output $21.
        let t = PriceTable::builtin();
        let p = t.get("claude-sonnet-4-20250514").unwrap();
        let c = |input, output, cache_creation, cache_read| {
            p.cost(&Tokens {
                input,
                output,
                cache_creation,
                cache_creation_1h: 0,
                cache_read,
            })
        };
        // 1-hour writes: twice the input price, tiered likewise (ccusage:
        // $10.80 for 1M of them with Sonnet 4, $10 with Opus 4.5, $4.25
        // for 200k 5-minute and 300k 1-hour ones with Opus 4.5).
        let h = |p: &Price, five: u64, hour: u64| {
            p.cost(&Tokens {
                cache_creation: five + hour,
                cache_creation_1h: hour,
                ..Tokens::default()
            })
        };
        assert!((h(p, 0, 1_000_000) - 10.8).abs() < 1e-9);
        let o = t.get("claude-opus-4-5-20251101").unwrap();
        assert!((h(o, 0, 1_000_000) - 10.0).abs() < 1e-9);
        assert!((h(o, 200_000, 300_000) - 4.25).abs() < 1e-9);
        assert!((c(1_000_000, 0, 0, 0) - 5.4).abs() < 1e-9);
        assert!((c(0, 1_000_000, 0, 0) - 21.0).abs() < 1e-9);
        assert!((c(0, 0, 1_000_000, 0) - 6.75).abs() < 1e-9);
        assert!((c(0, 0, 0, 1_000_000) - 0.54).abs() < 1e-9);
        assert!((c(100_000, 0, 0, 0) - 0.3).abs() < 1e-9);
    }

    #[test]
    fn the_config_adds_and_overrides() {
        let mut o = BTreeMap::new();
        let p: Price =
            toml::from_str("input = 1.0\noutput = 2.0\ncache_write = 0.0\ncache_read = 0.0")
                .unwrap();
        o.insert("claude-opus-5-5".to_string(), p);
        o.insert("claude-sonnet-4-20250514".to_string(), p);
        let t = PriceTable::with(&o).unwrap();
        assert_eq!(t.get("claude-opus-5-5"), Some(&p));
        assert_eq!(t.get("claude-sonnet-4-20250514"), Some(&p));
        let mut bad = p;
        bad.input = -1.0;
        o.insert("x".into(), bad);
        assert!(PriceTable::with(&o).is_err());
    }
}
