//! `ccd trim`: shrink a dead session's transcript through the daemon
//! (`session.trim`), print what went by record type, or undo it.

use crate::cli::{GlobalArgs, TrimArgs};
use ccd_claude::display::line;
use ccd_client::ClientError;
use ccd_protocol::methods::session::{SessionTrim, TrimParams, TrimResult};
use std::process::ExitCode;

/// Bytes for people: `512 B`, `3.4 KB`, `1.2 MB`, `2.00 GB` (powers of 1000).
pub fn human_bytes(n: u64) -> String {
    let f = n as f64;
    if n < 1000 {
        format!("{n} B")
    } else if n < 1_000_000 {
        format!("{:.1} KB", f / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.1} MB", f / 1e6)
    } else {
        format!("{:.2} GB", f / 1e9)
    }
}

/// A refusal under `--json`: the daemon's error object, as it came.
#[derive(serde::Serialize)]
struct JsonError<'a> {
    error: &'a ccd_protocol::RpcError,
}

pub fn run(global: &GlobalArgs, args: &TrimArgs) -> anyhow::Result<ExitCode> {
    let mut c = crate::shared::connect::connect(global)?;
    let params = TrimParams {
        session: args.session.clone(),
        dry_run: args.dry_run,
        drop_file_history: args.drop_file_history,
        before_compact: args.before_compact,
        force: args.force,
        undo: args.undo,
    };
    let r = match c.call::<SessionTrim>(&params) {
        Ok(r) => r,
        Err(e) => {
            if args.json {
                if let ClientError::Rpc(error) = &e {
                    println!(
                        "{}",
                        ccd_claude::display::json::to_string(&JsonError { error })?
                    );
                }
            }
            eprintln!("ccd trim: {}", line(&e.to_string()));
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.json {
        println!("{}", ccd_claude::display::json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", render(&r));
    Ok(ExitCode::SUCCESS)
}

/// The human-readable report (every file-derived text sanitized).
pub fn render(r: &TrimResult) -> String {
    let mut o = String::new();
    let short = crate::shared::cells::short_id(&r.session);
    if r.undo {
        o += &format!(
            "{}: restored the original ({} → {})\n  from {}\n",
            line(&r.transcript),
            human_bytes(r.bytes_before),
            human_bytes(r.bytes_after),
            line(r.backup.as_deref().unwrap_or("?")),
        );
        return o;
    }
    o += &format!("{}\n", line(&r.transcript));
    if r.unchanged {
        o += "  nothing to trim: left as it is\n";
        return o;
    }
    o += &format!(
        "  {}:\n  {:<44} {:>9} {:>10}\n",
        if r.dry_run { "would drop" } else { "dropped" },
        "KIND",
        "RECORDS",
        "BYTES"
    );
    let mut rows: Vec<_> = r.dropped.iter().collect();
    rows.sort_by_key(|c| std::cmp::Reverse(c.bytes));
    for c in rows {
        o += &format!(
            "  {:<44} {:>9} {:>10}\n",
            line(&c.kind),
            c.records,
            human_bytes(c.bytes)
        );
    }
    if let Some(t) = &r.tool_use_result {
        o += &format!(
            "  {:<44} {:>9} {:>10}\n",
            "toolUseResult (field of user records)",
            t.records,
            human_bytes(t.bytes)
        );
    }
    if r.relinked > 0 || r.rescued_for_tool_pairs > 0 {
        o += &format!(
            "  {} record(s) re-linked to their nearest kept ancestor; {} kept for tool pairs\n",
            r.relinked, r.rescued_for_tool_pairs
        );
    }
    if !r.unmeasured_versions.is_empty() {
        o += &format!(
            "  note: written by CLI version(s) {} — the rules were measured on 2.1.173 and 2.1.332\n",
            line(&r.unmeasured_versions.join(", "))
        );
    }
    if let Some(t) = r.half_written_tail {
        o += &format!("  a half-written last line ({t} bytes) is kept as it is\n");
    }
    let pct = if r.bytes_before > 0 {
        100.0 * (r.bytes_before.saturating_sub(r.bytes_after)) as f64 / r.bytes_before as f64
    } else {
        0.0
    };
    o += &format!(
        "  {} → {}{} (−{pct:.0} %)\n",
        human_bytes(r.bytes_before),
        if r.dry_run { "about " } else { "" },
        human_bytes(r.bytes_after),
    );
    if let Some(b) = &r.backup {
        o += &format!(
            "  original kept at {}\n  undo: ccd trim --undo {short}\n",
            line(b)
        );
    }
    o
}
