//! Totals: each counted message priced and added to its group.
//!
//! Groups are a day, a week (starting on Sunday, as ccusage's default), a
//! month, a session, a folder or a model; days are dates at a fixed UTC
//! offset (the caller's local one, taken once). A message is in the range
//! when its date is within `since..=until`. A model the price table does
//! not name is listed in the row's and the report's `unpriced` models and
//! adds no dollars: the dollars are then a lower bound, and say so.

use crate::files::Transcript;
use crate::prices::PriceTable;
use crate::tally::{dedupe, FileUsage, Tokens};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use time::{Date, Duration, OffsetDateTime, UtcOffset};

/// What rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Day,
    Week,
    Month,
    Session,
    Folder,
    Model,
}

impl By {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "day" => Self::Day,
            "week" => Self::Week,
            "month" => Self::Month,
            "session" => Self::Session,
            "folder" => Self::Folder,
            "model" => Self::Model,
            _ => return None,
        })
    }
}

/// One group's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The day (`YYYY-MM-DD`), the week's first day, the month
    /// (`YYYY-MM`), the session id, the folder or the model.
    pub key: String,
    pub tokens: Tokens,
    /// All four kinds added.
    pub total_tokens: u64,
    /// US dollars for the priced models.
    pub cost_usd: f64,
    /// Models used.
    pub models: BTreeSet<String>,
    /// Models the price table does not name (their tokens add no dollars).
    pub unpriced: BTreeSet<String>,
    /// Unix seconds of the first and last message.
    pub first: i64,
    pub last: i64,
    /// For rows by session: the session's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// The rows and their total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub rows: Vec<Row>,
    pub total: Row,
}

/// What to count.
#[derive(Debug, Clone, Copy)]
pub struct Query {
    pub by: By,
    pub since: Option<Date>,
    pub until: Option<Date>,
    pub offset: UtcOffset,
}

/// The name of a message without a model.
pub const NO_MODEL_NAME: &str = "(no model)";

/// Builds the report over `files` (each with its usage), counting each
/// message once across all of them.
pub fn build(files: &[(&Transcript, &FileUsage)], prices: &PriceTable, q: &Query) -> Report {
    let usages: Vec<&FileUsage> = files.iter().map(|(_, u)| *u).collect();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row {
        key: "total".into(),
        ..Row::default()
    };
    let mut last_price: Option<(&str, Option<&crate::prices::Price>)> = None;
    for (fi, m) in dedupe(&usages) {
        // A message without tokens adds nothing, not even a row (ccusage
        // lists none for it either).
        if m.tokens.total() == 0 {
            continue;
        }
        let (t, u) = files[fi];
        let Ok(at) = OffsetDateTime::from_unix_timestamp(m.at) else {
            continue;
        };
        let date = at.to_offset(q.offset).date();
        if q.since.is_some_and(|s| date < s) || q.until.is_some_and(|e| date > e) {
            continue;
        }
        let model = u.model(m);
        let folder = || u.cwd.clone().unwrap_or_else(|| t.project.clone());
        // By session (what `ccd ls` asks for, over every message) the key
        // is borrowed: a row already there costs no allocation.
        let key: Cow<'_, str> = match q.by {
            By::Day => date.to_string().into(),
            By::Week => {
                let back = i64::from(date.weekday().number_days_from_sunday());
                (date - Duration::days(back)).to_string().into()
            }
            By::Month => format!("{:04}-{:02}", date.year(), u8::from(date.month())).into(),
            By::Session => Cow::Borrowed(t.session.as_str()),
            By::Folder => folder().into(),
            By::Model => Cow::Borrowed(model.unwrap_or(NO_MODEL_NAME)),
        };
        let row = match rows.get_mut(key.as_ref()) {
            Some(r) => r,
            None => {
                let key = key.into_owned();
                rows.entry(key.clone()).or_insert_with(|| Row {
                    key,
                    first: m.at,
                    last: m.at,
                    folder: (q.by == By::Session).then(folder),
                    ..Row::default()
                })
            }
        };
        // Priced once for the row and the total, the model's price looked
        // up again only when the model changes (a file's messages mostly
        // name one).
        let price = match (&last_price, model) {
            (Some((name, p)), Some(mm)) if *name == mm => *p,
            _ => {
                let p = model.and_then(|mm| prices.get(mm));
                last_price = model.map(|mm| (mm, p));
                p
            }
        };
        let cost = price.map(|p| p.cost(&m.tokens));
        for r in [row, &mut total] {
            add(r, model, &m.tokens, m.at, cost);
        }
    }
    if total.models.is_empty() && total.total_tokens == 0 {
        total.first = 0;
        total.last = 0;
    }
    Report {
        rows: rows.into_values().collect(),
        total,
    }
}

fn add(r: &mut Row, model: Option<&str>, t: &Tokens, at: i64, cost: Option<f64>) {
    if r.total_tokens == 0 && r.models.is_empty() && r.unpriced.is_empty() {
        r.first = at;
        r.last = at;
    }
    r.tokens.add(t);
    r.total_tokens = r.tokens.total();
    r.first = r.first.min(at);
    r.last = r.last.max(at);
    let name = model.unwrap_or(NO_MODEL_NAME);
    // Checked before inserting: a model already named allocates nothing.
    if !r.models.contains(name) {
        r.models.insert(name.to_owned());
    }
    match cost {
        Some(c) => r.cost_usd += c,
        None => {
            if !r.unpriced.contains(name) {
                r.unpriced.insert(name.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(lines: &[&str]) -> FileUsage {
        let mut f = FileUsage::default();
        for l in lines {
            f.push_line(l.as_bytes());
        }
        f
    }

    fn tr(session: &str) -> Transcript {
        Transcript {
            path: PathBuf::from(format!("/p/{session}.jsonl")),
            session: session.into(),
            project: "-p".into(),
            archived: None,
        }
    }

    #[test]
    fn groups_prices_and_names_the_unpriced() {
        let a = file(&[
            r#"{"timestamp":"2026-11-28T23:30:00Z","cwd":"/a","message":{"id":"1","model":"claude-sonnet-4-20250514","usage":{"input_tokens":1000000,"output_tokens":0}}}"#,
            r#"{"timestamp":"2026-11-29T10:00:00Z","message":{"id":"2","model":"claude-opus-5-5","usage":{"input_tokens":5,"output_tokens":5}}}"#,
        ]);
        let b = file(&[
            r#"{"timestamp":"2026-12-01T10:00:00Z","message":{"id":"3","model":"claude-haiku-4-5-20251001","usage":{"input_tokens":1000000,"output_tokens":0}}}"#,
        ]);
        let (ta, tb) = (tr("a"), tr("b"));
        let files = [(&ta, &a), (&tb, &b)];
        let prices = PriceTable::builtin();
        let q = |by, offset| Query {
            by,
            since: None,
            until: None,
            offset,
        };
        let r = build(&files, &prices, &q(By::Day, UtcOffset::UTC));
        let keys: Vec<&str> = r.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["2026-11-28", "2026-11-29", "2026-12-01"]);
        assert!((r.total.cost_usd - 6.4).abs() < 1e-9);
        assert_eq!(
            r.total.unpriced.iter().collect::<Vec<_>>(),
            ["claude-opus-5-5"]
        );
        assert_eq!(r.total.total_tokens, 2_000_010);
        // An hour east, the first message is on the 29th.
        let r = build(
            &files,
            &prices,
            &q(By::Day, UtcOffset::from_hms(1, 0, 0).unwrap()),
        );
        assert_eq!(r.rows[0].key, "2026-11-29");
        // Weeks start on Sunday (2026-11-29 is one), months, sessions, folders.
        let r = build(&files, &prices, &q(By::Week, UtcOffset::UTC));
        let keys: Vec<&str> = r.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["2026-11-22", "2026-11-29"]);
        let r = build(&files, &prices, &q(By::Month, UtcOffset::UTC));
        assert_eq!(r.rows.len(), 2);
        let r = build(&files, &prices, &q(By::Session, UtcOffset::UTC));
        assert_eq!(r.rows[0].folder.as_deref(), Some("/a"));
        assert_eq!(r.rows[1].folder.as_deref(), Some("-p"));
        let r = build(&files, &prices, &q(By::Model, UtcOffset::UTC));
        assert_eq!(r.rows.len(), 3);
        // The range is inclusive, by date.
        let d = |s: &str| {
            Date::parse(s, time::macros::format_description!("[year]-[month]-[day]")).ok()
        };
        let r = build(
            &files,
            &prices,
            &Query {
                by: By::Day,
                since: d("2026-11-29"),
                until: d("2026-11-29"),
                offset: UtcOffset::UTC,
            },
        );
        assert_eq!(r.rows.len(), 1);
        assert_eq!(r.total.total_tokens, 10);
    }
}
