//! The retention guard on this machine: what Claude Code's sweep would
//! delete at the next start of `claude` ([`ccd_claude::retention`]), for
//! `ccd doctor` (every conversation named), `ccd ls` and `ccd ui` (one line,
//! only when something is at risk now or within a week). The setting is the
//! user's, or the managed (policy) file's where one exists
//! ([`ccd_os::claude::managed_settings`]).

use ccd_claude::retention::{self, Assessment, Setting, Source};
use ccd_claude::ClaudeConfigDir;
use std::path::Path;
use std::time::SystemTime;

/// The assessment for `config` now: its settings, its transcripts' ages,
/// the ids the registry says may be running left out.
pub fn assess_here(config: &ClaudeConfigDir) -> Result<Assessment, retention::SettingError> {
    let managed = ccd_os::claude::managed_settings();
    let setting = retention::read_setting(config, managed.as_deref())?;
    let probe = ccd_claude::liveness::system_probe();
    let live: Vec<String> =
        ccd_claude::liveness::running_entries(&config.sessions_dir(), probe.as_ref())
            .into_iter()
            .map(|e| e.session_id)
            .collect();
    let live: Vec<&str> = live.iter().map(String::as_str).collect();
    let files = retention::scan(config);
    Ok(retention::assess(setting, &files, &live, SystemTime::now()))
}

/// Where the setting lives, for a person: the file, or the default.
pub fn setting_phrase(s: &Setting, config: &Path) -> String {
    match (&s.days, &s.source) {
        (Some(d), Source::Default) => format!(
            "cleanupPeriodDays is {d} (Claude Code's default; {} does not set it)",
            config.join("settings.json").display()
        ),
        (Some(d), Source::User(p) | Source::Managed(p)) => {
            format!("cleanupPeriodDays is {d} (set in {})", p.display())
        }
        (None, Source::User(p) | Source::Managed(p)) => format!(
            "cleanupPeriodDays in {} is not a positive integer: Claude Code skips its sweep",
            p.display()
        ),
        (None, Source::Default) => "cleanupPeriodDays is unset".into(),
    }
}

/// The one-line notice (`ccd ls`, `ccd ui`), or `None` when nothing is at
/// risk now or within [`retention::SOON_DAYS`] days.
pub fn notice(a: &Assessment) -> Option<String> {
    if !a.worth_a_notice() {
        return None;
    }
    let days = a.setting.days.unwrap_or(retention::DEFAULT_DAYS);
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let now = a.at_risk.len();
    let soon = a.soon.len();
    let what = match (now, soon) {
        (0, s) => format!(
            "{s} conversation{} will be older than cleanupPeriodDays ({days}) within {} days",
            plural(s),
            retention::SOON_DAYS
        ),
        (n, 0) => format!(
            "the next start of claude deletes {n} conversation{} older than {days} days",
            plural(n)
        ),
        (n, s) => format!(
            "the next start of claude deletes {n} conversation{} older than {days} days ({s} more within {} days)",
            plural(n),
            retention::SOON_DAYS
        ),
    };
    Some(format!(
        "{what}: ccd doctor lists them; ccd archive --older-than {}d keeps them",
        days.saturating_sub(5).max(1)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_claude::retention::AtRisk;

    fn row(sid: &str) -> AtRisk {
        AtRisk {
            session_id: sid.into(),
            path: format!("/p/{sid}.jsonl").into(),
            age_days: 40,
        }
    }

    #[test]
    fn the_notice_is_silent_when_nothing_is_at_risk_and_counts_otherwise() {
        let mut a = Assessment {
            setting: Setting::default_days(),
            at_risk: vec![],
            soon: vec![],
        };
        assert_eq!(notice(&a), None);
        a.soon.push(row("b"));
        assert_eq!(
            notice(&a).unwrap(),
            "1 conversation will be older than cleanupPeriodDays (30) within 7 days: ccd doctor lists them; ccd archive --older-than 25d keeps them"
        );
        a.at_risk = vec![row("a"), row("c")];
        assert_eq!(
            notice(&a).unwrap(),
            "the next start of claude deletes 2 conversations older than 30 days (1 more within 7 days): ccd doctor lists them; ccd archive --older-than 25d keeps them"
        );
    }
}
