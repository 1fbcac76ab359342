//! How a session's fields read in a table cell, for `ccd ls` and the
//! dashboard alike: the short id, a relative time, a home-shortened
//! directory, sizes, memory, CPU and the context share. Pure functions
//! of their arguments.

use ccd_protocol::methods::session::SessionInfo;
use time::OffsetDateTime;

/// The first 8 characters of a session id.
pub fn short_id(sid: &str) -> &str {
    sid.get(..8).unwrap_or(sid)
}

/// "12s ago", "3m ago", "5h ago", "4d ago".
pub fn ago(now: OffsetDateTime, then: OffsetDateTime) -> String {
    let secs = (now - then).whole_seconds();
    match secs {
        s if s < 5 => "just now".into(),
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

/// `cwd` with the home directory shown as `~`.
pub fn tilde(cwd: &str, home: Option<&str>) -> String {
    match home.filter(|h| h.len() > 1) {
        Some(h) if cwd == h => "~".into(),
        Some(h) => match cwd.strip_prefix(h) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => cwd.into(),
        },
        None => cwd.into(),
    }
}

/// The `SIZE` cell: the transcript's size, short (`812`, `34K`, `5.2M`,
/// `1.1G`; powers of 1024). `ccd trim` shrinks a dead one.
pub fn size_cell(n: u64) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        format!("{n}")
    } else if f < K * K {
        format!("{:.0}K", f / K)
    } else if f < 10.0 * K * K * K {
        let (v, u) = if f < K * K * K {
            (f / (K * K), "M")
        } else {
            (f / (K * K * K), "G")
        };
        if v < 10.0 {
            format!("{v:.1}{u}")
        } else {
            format!("{v:.0}{u}")
        }
    } else {
        format!("{:.0}G", f / (K * K * K))
    }
}

/// The `MEM` cell: the live session's process tree's memory (`1.2G`);
/// `-` when not measured.
pub fn mem_cell(r: &SessionInfo) -> String {
    r.cost
        .as_ref()
        .map(|c| size_cell(c.memory_bytes))
        .unwrap_or_else(|| "-".into())
}

/// The `CPU` cell: % of one core over the last interval (`12%`); `-`
/// when not measured yet.
pub fn cpu_cell(r: &SessionInfo) -> String {
    match r.cost.as_ref().and_then(|c| c.cpu_percent) {
        Some(p) if p > 0.0 && p < 1.0 => "<1%".into(),
        Some(p) => format!("{p:.0}%"),
        None => "-".into(),
    }
}

/// The `TOKENS` cell: the conversation's tokens, all four kinds
/// (`532`, `48k`, `1.2M`, `3.4G`); `-` when not counted.
pub fn tokens_cell(r: &SessionInfo) -> String {
    let Some(u) = r.usage.as_ref() else {
        return "-".into();
    };
    tokens_text(u.total_tokens)
}

/// A token count as the TOKENS cell shows it (`950`, `12k`, `1.2M`).
pub fn tokens_text(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{}k", n / 1_000),
        1_000_000..=9_999_999 => format!("{:.1}M", n as f64 / 1e6),
        10_000_000..=999_999_999 => format!("{}M", n / 1_000_000),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

/// The `$` cell: the conversation's dollars (`$0.42`, `$1234`), `+`
/// after them when a model is not priced (a lower bound); `-` when not
/// counted.
pub fn dollars_cell(r: &SessionInfo) -> String {
    let Some(u) = r.usage.as_ref() else {
        return "-".into();
    };
    dollars_text(u.cost_usd, !u.unpriced.is_empty())
}

/// Dollars as the `$` cell shows them (`$0.42`, `$1234`), `+` after them
/// when `lower_bound` (a model is not priced).
pub fn dollars_text(usd: f64, lower_bound: bool) -> String {
    let mut s = if usd >= 1000.0 {
        format!("${usd:.0}")
    } else {
        format!("${usd:.2}")
    };
    if lower_bound {
        s.push('+');
    }
    s
}

/// The `CTX` cell: the share of the window in use; `~` marks a share of
/// an assumed window (ccd's default: the CLI did not state one, and no
/// config or built-in entry knows the model).
pub fn ctx_cell(r: &SessionInfo) -> String {
    let Some(p) = r.context_percent else {
        return "-".into();
    };
    let guessed = r
        .context_window
        .as_ref()
        .is_some_and(|w| w.source == "default");
    format!("{}{p:.0}%", if guessed { "~" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    #[test]
    fn sizes() {
        assert_eq!(size_cell(812), "812");
        assert_eq!(size_cell(34 * 1024), "34K");
        assert_eq!(size_cell(5 * 1024 * 1024 + 200 * 1024), "5.2M");
        assert_eq!(size_cell(386 * 1024 * 1024), "386M");
        assert_eq!(size_cell(1024 * 1024 * 1024 + 100 * 1024 * 1024), "1.1G");
        assert_eq!(size_cell(20 * 1024 * 1024 * 1024), "20G");
    }

    #[test]
    fn ages() {
        let now = OffsetDateTime::now_utc();
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now, now - Duration::seconds(42)), "42s ago");
        assert_eq!(ago(now, now - Duration::minutes(3)), "3m ago");
        assert_eq!(ago(now, now - Duration::hours(5)), "5h ago");
        assert_eq!(ago(now, now - Duration::days(4)), "4d ago");
        assert_eq!(ago(now, now + Duration::minutes(4)), "just now");
    }

    #[test]
    fn a_share_of_an_assumed_window_is_marked() {
        use ccd_protocol::methods::session::ContextWindow;
        let mut r: SessionInfo = serde_json::from_value(serde_json::json!({
            "session_id": "s", "state": "dead", "pid": null, "cwd": null, "status": null,
            "waiting_for": null, "kind": null, "name": null, "version": null,
            "started_at": null, "last_activity": null, "title": null, "model": null,
            "context_tokens": 82000, "context_percent": 41.0, "context_window": null,
            "transcript": null, "transcript_bytes": null, "writers": [],
            "several_writers": false, "ccd": null
        }))
        .unwrap();
        assert_eq!(ctx_cell(&r), "41%");
        for (source, cell) in [("default", "~41%"), ("screen", "41%"), ("config", "41%")] {
            r.context_window = Some(ContextWindow {
                tokens: 200_000,
                source: source.into(),
            });
            assert_eq!(ctx_cell(&r), cell);
        }
        r.context_percent = None;
        assert_eq!(ctx_cell(&r), "-");
    }

    #[test]
    fn home_shortening() {
        assert_eq!(tilde("/home/u/p", Some("/home/u")), "~/p");
        assert_eq!(tilde("/home/u", Some("/home/u")), "~");
        assert_eq!(tilde("/home/user2/p", Some("/home/u")), "/home/user2/p");
        assert_eq!(tilde("/x", None), "/x");
    }
}
