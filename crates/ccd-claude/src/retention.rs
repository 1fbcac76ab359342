//! Claude Code's retention sweep, foreseen: which conversations the next
//! start of `claude` would delete (docs/claude-cli-compat.md, "The retention
//! sweep", proven on both pinned CLIs by `tests/real_cli_retention.rs`).
//!
//! What the CLI does: when it starts it deletes every `projects/*/<sid>.jsonl`
//! whose **mtime** is older than `cleanupPeriodDays` (default 30; the
//! records' own timestamps play no part), and with it the sidecar folder
//! `projects/*/<sid>/` and that session's file history, todos, session env
//! and tasks when those are as old. The setting is read from the user
//! settings, `<config dir>/settings.json`; a managed (policy) setting
//! overrides it ([`read_setting`] takes that file too when the caller knows
//! it). `0` or a value that is not a positive integer fails the CLI's
//! settings validation, and the CLI then skips the sweep.
//!
//! Pure logic ([`assess`]: the setting, the files' ages and now → the
//! at-risk list) is apart from the file reads ([`read_setting`], [`scan`]).

use crate::config::ClaudeConfigDir;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The CLI's default `cleanupPeriodDays` (both pinned versions).
pub const DEFAULT_DAYS: u64 = 30;

/// A setting below this many days is "low": ccd warns about it even when
/// nothing is at risk yet (`ccd doctor`).
pub const LOW_DAYS: u64 = 90;

/// How far ahead "soon" looks: conversations the sweep reaches within this
/// many days are counted apart (the `ccd ls` notice names them).
pub const SOON_DAYS: u64 = 7;

const DAY: Duration = Duration::from_secs(86_400);

/// Where the effective `cleanupPeriodDays` came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "file")]
pub enum Source {
    /// No settings file sets it: the CLI's default.
    Default,
    /// The user settings file.
    User(PathBuf),
    /// A managed (policy) settings file, which wins over the user's.
    Managed(PathBuf),
}

/// The sweep as the next `claude` start would run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// `None`: the setting is present but invalid (0, negative, not an
    /// integer): the CLI rejects it and skips the sweep.
    pub days: Option<u64>,
    pub source: Source,
}

impl Setting {
    /// The CLI's default, with no file setting it.
    pub fn default_days() -> Self {
        Self {
            days: Some(DEFAULT_DAYS),
            source: Source::Default,
        }
    }

    /// Whether the sweep keeps less than [`LOW_DAYS`] (the default does).
    pub fn is_low(&self) -> bool {
        self.days.is_some_and(|d| d < LOW_DAYS)
    }
}

/// Why a settings file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not JSON ({source}); the CLI skips its sweep while its settings are invalid"
    )]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Reads `cleanupPeriodDays` from the user settings (`<config>/settings.json`)
/// and, if given and present, the managed settings file (which wins). A
/// missing file is no setting; an unreadable or non-JSON one is an error.
pub fn read_setting(
    config: &ClaudeConfigDir,
    managed: Option<&Path>,
) -> Result<Setting, SettingError> {
    let user = config.root().join("settings.json");
    let mut setting = Setting::default_days();
    for (path, wrap) in [
        (Some(user.as_path()), Source::User as fn(PathBuf) -> Source),
        (managed, Source::Managed as fn(PathBuf) -> Source),
    ] {
        let Some(path) = path else { continue };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(SettingError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        if let Some(days) = parse_days(&bytes).map_err(|source| SettingError::Parse {
            path: path.to_path_buf(),
            source,
        })? {
            setting = Setting {
                days,
                source: wrap(path.to_path_buf()),
            };
        }
    }
    Ok(setting)
}

/// `cleanupPeriodDays` in one settings file: `None` when absent,
/// `Some(None)` when present but not a positive integer.
pub fn parse_days(bytes: &[u8]) -> Result<Option<Option<u64>>, serde_json::Error> {
    let v: serde_json::Value = serde_json::from_slice(bytes)?;
    Ok(v.get("cleanupPeriodDays")
        .map(|d| d.as_u64().filter(|&n| n >= 1)))
}

/// One conversation's transcript and when it was last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aged {
    pub session_id: String,
    pub path: PathBuf,
    pub modified: SystemTime,
}

/// Every top-level transcript under the config dir's projects, with its
/// mtime (one stat each; unreadable ones are left out).
pub fn scan(config: &ClaudeConfigDir) -> Vec<Aged> {
    crate::transcript::list_all(&config.projects_dir())
        .into_iter()
        .filter_map(|f| {
            let modified = f.modified()?;
            Some(Aged {
                session_id: f.session_id,
                path: f.path,
                modified,
            })
        })
        .collect()
}

/// A conversation the sweep will reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AtRisk {
    pub session_id: String,
    pub path: PathBuf,
    /// Whole days since the transcript was last written.
    pub age_days: u64,
}

/// The verdict for one setting and set of files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub setting: Setting,
    /// Deleted by the next start of `claude`, oldest first.
    pub at_risk: Vec<AtRisk>,
    /// Reached by the sweep within [`SOON_DAYS`] (not yet at risk), oldest
    /// first.
    pub soon: Vec<AtRisk>,
}

impl Assessment {
    /// Whether there is anything to tell a person who did not ask
    /// (`ccd ls`, `ccd ui`): conversations at risk now or soon.
    pub fn worth_a_notice(&self) -> bool {
        !self.at_risk.is_empty() || !self.soon.is_empty()
    }
}

/// Which of `files` the sweep under `setting` deletes at `now`, and which it
/// reaches within [`SOON_DAYS`]. `live` ids are left out (a running
/// session's transcript is written, so fresh, anyway; one that is not yet
/// is kept out of a list the user acts on). A file dated in the future is
/// age 0.
pub fn assess(setting: Setting, files: &[Aged], live: &[&str], now: SystemTime) -> Assessment {
    let mut at_risk = vec![];
    let mut soon = vec![];
    if let Some(days) = setting.days {
        let horizon = DAY * u32::try_from(days).unwrap_or(u32::MAX);
        for f in files {
            if live.contains(&f.session_id.as_str()) {
                continue;
            }
            let age = now.duration_since(f.modified).unwrap_or_default();
            let row = AtRisk {
                session_id: f.session_id.clone(),
                path: f.path.clone(),
                age_days: age.as_secs() / 86_400,
            };
            // The CLI deletes when mtime < now - days.
            if age > horizon {
                at_risk.push(row);
            } else if age + DAY * SOON_DAYS as u32 > horizon {
                soon.push(row);
            }
        }
    }
    let oldest_first = |a: &AtRisk, b: &AtRisk| b.age_days.cmp(&a.age_days);
    at_risk.sort_by(oldest_first);
    soon.sort_by(oldest_first);
    Assessment {
        setting,
        at_risk,
        soon,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(sid: &str, days_ago: f64, now: SystemTime) -> Aged {
        Aged {
            session_id: sid.into(),
            path: PathBuf::from(format!("/p/{sid}.jsonl")),
            modified: if days_ago >= 0.0 {
                now - Duration::from_secs_f64(days_ago * 86_400.0)
            } else {
                now + Duration::from_secs_f64(-days_ago * 86_400.0)
            },
        }
    }

    fn ids(v: &[AtRisk]) -> Vec<&str> {
        v.iter().map(|r| r.session_id.as_str()).collect()
    }

    #[test]
    fn the_default_deletes_past_thirty_days_and_counts_the_next_week() {
        let now = SystemTime::now();
        let files = [
            aged("fresh", 0.0, now),
            aged("d10", 10.0, now),
            aged("d24", 24.0, now),
            aged("d29", 29.9, now),
            aged("d31", 30.01, now),
            aged("d400", 400.0, now),
            aged("future", -3.0, now),
        ];
        let a = assess(Setting::default_days(), &files, &[], now);
        assert_eq!(ids(&a.at_risk), ["d400", "d31"]);
        assert_eq!(ids(&a.soon), ["d29", "d24"]);
        assert!(a.worth_a_notice());
        assert_eq!(a.at_risk[0].age_days, 400);
    }

    #[test]
    fn live_sessions_and_an_invalid_setting_put_nothing_at_risk() {
        let now = SystemTime::now();
        let files = [aged("old", 40.0, now), aged("live", 40.0, now)];
        let a = assess(Setting::default_days(), &files, &["live"], now);
        assert_eq!(ids(&a.at_risk), ["old"]);
        let invalid = Setting {
            days: None,
            source: Source::User("/s.json".into()),
        };
        let a = assess(invalid, &files, &[], now);
        assert!(a.at_risk.is_empty() && !a.worth_a_notice());
    }

    #[test]
    fn a_high_setting_is_quiet_and_a_low_one_reaches_further() {
        let now = SystemTime::now();
        let files = [aged("d10", 10.0, now), aged("d40", 40.0, now)];
        let high = Setting {
            days: Some(3650),
            source: Source::User("/s.json".into()),
        };
        assert!(!high.is_low());
        assert!(!assess(high, &files, &[], now).worth_a_notice());
        let low = Setting {
            days: Some(7),
            source: Source::User("/s.json".into()),
        };
        assert_eq!(ids(&assess(low, &files, &[], now).at_risk), ["d40", "d10"]);
        assert!(Setting::default_days().is_low());
    }

    #[test]
    fn settings_files_are_read_as_the_cli_reads_them() {
        assert_eq!(parse_days(b"{}").unwrap(), None);
        assert_eq!(
            parse_days(br#"{"cleanupPeriodDays": 7}"#).unwrap(),
            Some(Some(7))
        );
        assert_eq!(
            parse_days(br#"{"cleanupPeriodDays": 0}"#).unwrap(),
            Some(None)
        );
        assert_eq!(
            parse_days(br#"{"cleanupPeriodDays": -1}"#).unwrap(),
            Some(None)
        );
        assert_eq!(
            parse_days(br#"{"cleanupPeriodDays": 2.5}"#).unwrap(),
            Some(None)
        );
        assert!(parse_days(b"{nope").is_err());

        let dir = tempfile::tempdir().unwrap();
        let config = ClaudeConfigDir::new(dir.path());
        assert_eq!(
            read_setting(&config, None).unwrap(),
            Setting::default_days()
        );
        let user = dir.path().join("settings.json");
        std::fs::write(&user, br#"{"cleanupPeriodDays": 3650}"#).unwrap();
        let s = read_setting(&config, None).unwrap();
        assert_eq!((s.days, s.source), (Some(3650), Source::User(user.clone())));
        let managed = dir.path().join("managed-settings.json");
        std::fs::write(&managed, br#"{"cleanupPeriodDays": 14}"#).unwrap();
        let s = read_setting(&config, Some(&managed)).unwrap();
        assert_eq!((s.days, s.source), (Some(14), Source::Managed(managed)));
        std::fs::write(&user, b"{broken").unwrap();
        assert!(matches!(
            read_setting(&config, None),
            Err(SettingError::Parse { .. })
        ));
    }
}
