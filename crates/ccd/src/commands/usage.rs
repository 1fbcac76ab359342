//! `ccd usage`: what conversations cost in tokens and dollars, by day,
//! week, month, session, folder or model (issue 56), read from every
//! transcript under the Claude config folder through ccd-usage's
//! incremental cache (no daemon needed).
//!
//! With `--host` (several allowed, `local` for this machine), each other
//! machine runs `ccd usage --json` with the same query over ssh (the same
//! ssh command line as `dial-stdio`'s) and the rows are merged by key; a
//! machine that cannot be reached is named on stderr and in the JSON's
//! `unreachable`, and the others are still shown. Archived conversations
//! (`ccd archive`) count as if they were still in place; one whose archive
//! cannot be read (whole or in part) is named on stderr and in the JSON's
//! `unreadable`, the rest still counted. Text from transcripts
//! (folders, model names) goes through [`display::line`] before printing.

use crate::cli::{GlobalArgs, UsageArgs};
use crate::hosts::Target;
use crate::settings::Settings;
use anyhow::Context;
use ccd_claude::display;
use ccd_claude::ClaudeConfigDir;
use ccd_usage::cache::CACHE_FILE;
use ccd_usage::report::{By, Query, Report, Row};
use ccd_usage::PriceTable;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::Write;
use std::process::{ExitCode, Stdio};
use time::{Date, UtcOffset};

/// What `ccd usage --json` prints.
#[derive(Debug, Serialize, Deserialize)]
pub struct UsageOut {
    pub by: String,
    pub since: Option<String>,
    pub until: Option<String>,
    /// The built-in price table's date and source.
    pub prices_date: String,
    pub prices_source: String,
    pub rows: Vec<Row>,
    pub total: Row,
    /// Each machine's total (one entry without `--host`).
    pub hosts: Vec<HostTotal>,
    /// Machines that could not be asked, and why.
    pub unreachable: Vec<Unreachable>,
    /// Archived conversations whose usage could not be read (whole or in
    /// part: what was read is counted), and why.
    #[serde(default)]
    pub unreadable: Vec<UnreadableOut>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct UnreadableOut {
    pub host: String,
    pub session: String,
    pub error: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct HostTotal {
    pub host: String,
    pub total: Row,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Unreachable {
    pub host: String,
    pub error: String,
}

fn parse_date(s: &str) -> anyhow::Result<Date> {
    let f = time::macros::format_description!("[year]-[month]-[day]");
    let g = time::macros::format_description!("[year][month][day]");
    Date::parse(s, &f)
        .or_else(|_| Date::parse(s, &g))
        .with_context(|| format!("not a date: {} (2026-11-01 or 20261101)", display::line(s)))
}

pub fn run(global: &GlobalArgs, args: &UsageArgs) -> anyhow::Result<ExitCode> {
    let by =
        By::parse(&args.by).with_context(|| format!("unknown --by {}", display::line(&args.by)))?;
    let since = args.since.as_deref().map(parse_date).transpose()?;
    let until = args.until.as_deref().map(parse_date).transpose()?;
    // Taken before any thread starts (the `time` crate refuses it after).
    let offset = if args.utc {
        UtcOffset::UTC
    } else {
        UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC)
    };
    let settings = Settings::load(global.config.as_deref())?;
    let prices = PriceTable::with(&settings.prices).context("[prices] in the config")?;
    let q = Query {
        by,
        since,
        until,
        offset,
    };
    let mut parts: Vec<(String, Report)> = Vec::new();
    let mut unreachable = Vec::new();
    let mut unreadable = Vec::new();
    for t in &global.targets {
        match t {
            Target::Local => {
                let (report, bad) = local(global, &prices, &q)?;
                unreadable.extend(bad.into_iter().map(|u| UnreadableOut {
                    host: t.label().to_owned(),
                    session: u.session,
                    error: u.error,
                }));
                parts.push((t.label().to_owned(), report));
            }
            Target::Remote(r) => match remote(r, args) {
                Ok(out) => {
                    for u in out.unreachable {
                        unreachable.push(u);
                    }
                    for u in out.unreadable {
                        unreadable.push(UnreadableOut {
                            host: t.label().to_owned(),
                            ..u
                        });
                    }
                    parts.push((
                        t.label().to_owned(),
                        Report {
                            rows: out.rows,
                            total: out.total,
                        },
                    ));
                }
                Err(e) => {
                    tracing::warn!(host = %t.label(), error = %format!("{e:#}"), "ccd usage: machine not reached");
                    unreachable.push(Unreachable {
                        host: t.label().to_owned(),
                        error: format!("{e:#}"),
                    });
                }
            },
        }
    }
    let merged = merge(parts.iter().map(|(_, r)| r));
    let out = UsageOut {
        by: args.by.clone(),
        since: since.map(|d| d.to_string()),
        until: until.map(|d| d.to_string()),
        prices_date: prices.date.clone(),
        prices_source: prices.source.clone(),
        rows: merged.rows,
        total: merged.total,
        hosts: parts
            .into_iter()
            .map(|(host, r)| HostTotal {
                host,
                total: r.total,
            })
            .collect(),
        unreachable,
        unreadable,
    };
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if args.json {
        serde_json::to_writer_pretty(&mut w, &out)?;
        writeln!(w)?;
    } else {
        print_table(&mut w, &out, by)?;
    }
    for u in &out.unreadable {
        eprintln!(
            "ccd usage: the archived conversation {} on {} could not be read, its tokens are not (all) counted: {}",
            display::line(&u.session),
            display::line(&u.host),
            display::line(&u.error)
        );
    }
    for u in &out.unreachable {
        eprintln!(
            "ccd usage: {} not reached: {}",
            display::line(&u.host),
            display::line(&u.error)
        );
    }
    Ok(if out.unreachable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// This machine's report, through the cache, and the archived
/// conversations that could not be read.
fn local(
    global: &GlobalArgs,
    prices: &PriceTable,
    q: &Query,
) -> anyhow::Result<(Report, Vec<ccd_usage::files::Unreadable>)> {
    let config = ClaudeConfigDir::resolve(global.claude_config_dir.as_deref())?;
    let cache_path = crate::settings::state_dir().join(CACHE_FILE);
    let (report, r) = ccd_usage::here::report(config.root(), &cache_path, prices, q);
    if r.oversized > 0 {
        eprintln!(
            "ccd usage: {} record(s) over {} MiB skipped",
            r.oversized,
            ccd_search::incremental::MAX_RECORD_BYTES >> 20
        );
    }
    Ok((report, r.unreadable))
}

/// Another machine's report: its `ccd usage --json` over ssh.
fn remote(r: &ccd_client::ssh::Remote, args: &UsageArgs) -> anyhow::Result<UsageOut> {
    let mut line = r.command_line();
    // The last word is `dial-stdio`: ask for the usage instead.
    line.pop();
    let mut words: Vec<String> = vec![
        "usage".into(),
        "--json".into(),
        "--by".into(),
        args.by.clone(),
    ];
    for (flag, v) in [("--since", &args.since), ("--until", &args.until)] {
        if let Some(v) = v {
            words.push(flag.into());
            words.push(v.clone());
        }
    }
    if args.utc {
        words.push("--utc".into());
    }
    for w in words {
        line.push(OsString::from(ccd_client::ssh::shell_quote(&w)));
    }
    let (prog, rest) = line.split_first().context("empty ssh command")?;
    let out = std::process::Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", prog.to_string_lossy()))?;
    let parsed: Result<UsageOut, _> = serde_json::from_slice(&out.stdout);
    match parsed {
        Ok(u) => Ok(u),
        Err(e) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("").trim();
            anyhow::bail!("{} ({}): {}", out.status, e, last)
        }
    }
}

/// Rows of several reports added by key.
fn merge<'a>(reports: impl Iterator<Item = &'a Report>) -> Report {
    let mut rows: std::collections::BTreeMap<String, Row> = Default::default();
    let mut total = Row {
        key: "total".into(),
        ..Row::default()
    };
    for r in reports {
        for row in &r.rows {
            match rows.get_mut(&row.key) {
                Some(have) => add_row(have, row),
                None => {
                    rows.insert(row.key.clone(), row.clone());
                }
            }
        }
        add_row(&mut total, &r.total);
    }
    Report {
        rows: rows.into_values().collect(),
        total,
    }
}

fn add_row(a: &mut Row, b: &Row) {
    let empty = a.total_tokens == 0 && a.models.is_empty();
    a.tokens.add(&b.tokens);
    a.total_tokens = a.tokens.total();
    a.cost_usd += b.cost_usd;
    a.models.extend(b.models.iter().cloned());
    a.unpriced.extend(b.unpriced.iter().cloned());
    if b.total_tokens > 0 || !b.models.is_empty() {
        a.first = if empty { b.first } else { a.first.min(b.first) };
        a.last = if empty { b.last } else { a.last.max(b.last) };
    }
    if a.folder.is_none() {
        a.folder.clone_from(&b.folder);
    }
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn dollars(r: &Row) -> String {
    let mut s = format!("${:.2}", r.cost_usd);
    if !r.unpriced.is_empty() {
        s.push('+');
    }
    s
}

fn print_table(w: &mut impl Write, out: &UsageOut, by: By) -> std::io::Result<()> {
    let head = match by {
        By::Day => "DAY",
        By::Week => "WEEK OF",
        By::Month => "MONTH",
        By::Session => "SESSION",
        By::Folder => "FOLDER",
        By::Model => "MODEL",
    };
    let key_w = out
        .rows
        .iter()
        .map(|r| display::width::width(&display::line(&r.key)))
        .chain([head.len(), 5])
        .max()
        .unwrap_or(5)
        .min(48);
    writeln!(
        w,
        "{:<key_w$}  {:>13}  {:>11}  {:>13}  {:>15}  {:>15}  {:>10}  MODELS",
        head, "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "TOTAL", "$"
    )?;
    for r in out.rows.iter().chain([&out.total]) {
        let key = display::width::clip(&display::line(&r.key), key_w);
        let key = display::width::pad(&key, key_w);
        let models: Vec<String> = r
            .models
            .iter()
            .map(|m| display::line(m).into_owned())
            .collect();
        let models = if r.key == "total" && std::ptr::eq(r, &out.total) {
            String::new()
        } else {
            models.join(", ")
        };
        writeln!(
            w,
            "{key}  {:>13}  {:>11}  {:>13}  {:>15}  {:>15}  {:>10}  {}",
            thousands(r.tokens.input),
            thousands(r.tokens.output),
            thousands(r.tokens.cache_creation),
            thousands(r.tokens.cache_read),
            thousands(r.total_tokens),
            dollars(r),
            display::width::clip(&models, 60),
        )?;
    }
    if !out.total.unpriced.is_empty() {
        let names: Vec<String> = out
            .total
            .unpriced
            .iter()
            .map(|m| display::line(m).into_owned())
            .collect();
        writeln!(
            w,
            "+ not priced (the price table of {} does not name them; add [prices.\"model-id\"] to the config): {}",
            out.prices_date,
            names.join(", ")
        )?;
    }
    if out.hosts.len() > 1 {
        for h in &out.hosts {
            writeln!(
                w,
                "{}: {} tokens, {}",
                display::line(&h.host),
                thousands(h.total.total_tokens),
                dollars(&h.total)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_dates() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(
            parse_date("20261101").unwrap(),
            parse_date("2026-11-01").unwrap()
        );
        assert!(parse_date("yesterday").is_err());
    }
}
