//! The `respond` part of `ccd-bench pty`: `ccd approve` at a permission
//! prompt of a fake-claude session, the prompt shown and settled (on the
//! screen for a second), next to `ccd screen` of the same session — once
//! with a current holder, which walks the prompt itself (`holder.respond`,
//! holder protocol 3), once with a holder capped at protocol 2
//! (`CCD_HOLDER_PROTOCOL_MAX=2`), which the daemon walks over
//! `holder.screen` and `holder.input` as every holder was before.
//!
//! Also the holder connections each approve cost (the holder's own count,
//! `holder.info`'s `connections`, read before and after). Issue target:
//! the approve p50 within 10× the screen round trip, one connection.

use super::ccd::Ccd;
use super::Ctx;
use anyhow::Context as _;
use serde::Serialize;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One walker's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Walker {
    /// `holder` or `daemon`.
    pub walked_by: String,
    pub approves: usize,
    pub approve_p50_ms: f64,
    pub approve_max_ms: f64,
    /// `ccd screen` of the same session, the same moments.
    pub screen_p50_ms: f64,
    /// approve p50 / screen p50.
    pub ratio: f64,
    /// Holder connections per approve (median).
    pub connections: f64,
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Respond {
    pub walkers: Vec<Walker>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ccd(c: &Ccd, args: &[&str]) -> anyhow::Result<(Duration, Output)> {
    let mut cmd = Command::new(&c.ccd);
    cmd.args(args).stdin(Stdio::null());
    for (k, v) in &c.env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let out = cmd.output()?;
    let took = t0.elapsed();
    anyhow::ensure!(
        out.status.success(),
        "ccd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok((took, out))
}

/// Polls `ccd screen` until it shows `needle`.
fn wait_screen(c: &Ccd, sid: &str, needle: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, out) = ccd(c, &["screen", sid])?;
        if String::from_utf8_lossy(&out.stdout).contains(needle) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the screen never showed {needle:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn connections(c: &Ccd, sid: &str) -> anyhow::Result<u64> {
    let sock = c.holder_socket(sid).context("no holder socket")?;
    ccd_holder::HolderClient::connect(&sock)?
        .info()?
        .connections
        .context("the holder does not count connections")
}

fn pick(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        0.0
    } else {
        crate::stats::nearest_rank(v, q)
    }
}

fn walker(cx: &Ctx, walked_by: &str, env: &[(&str, &str)], runs: usize) -> Walker {
    let mut w = Walker {
        walked_by: walked_by.to_string(),
        approves: 0,
        approve_p50_ms: 0.0,
        approve_max_ms: 0.0,
        screen_p50_ms: 0.0,
        ratio: 0.0,
        connections: 0.0,
        errors: Vec::new(),
    };
    let mut approves = Vec::new();
    let mut screens = Vec::new();
    let mut conns = Vec::new();
    let mut run = || -> anyhow::Result<()> {
        let dir = cx.dir(&format!("respond-{walked_by}"))?;
        let mut c = Ccd::start_with(&cx.ccd, &cx.bench, &cx.fake, &dir, true, env)?;
        let result = (|| -> anyhow::Result<()> {
            let (sid, _) = c.new_session(&[], true)?;
            for i in 0..runs {
                let file = format!("f{i}.txt");
                ccd(&c, &["send", &sid, &format!("perm touch {file}")])?;
                wait_screen(&c, &sid, "Do you want to proceed?")?;
                // Shown and settled.
                std::thread::sleep(Duration::from_secs(1));
                for _ in 0..3 {
                    screens.push(ms(ccd(&c, &["screen", &sid])?.0));
                }
                let before = connections(&c, &sid)?;
                let (took, _) = ccd(&c, &["approve", &sid])?;
                let after = connections(&c, &sid)?;
                approves.push(ms(took));
                conns.push(after.saturating_sub(before + 1) as f64);
                wait_screen(&c, &sid, &format!("echo: perm touch {file}"))?;
            }
            Ok(())
        })();
        c.stop();
        result
    };
    if let Err(e) = run() {
        w.errors.push(format!("{e:#}"));
    }
    w.approves = approves.len();
    w.approve_p50_ms = pick(&mut approves, 0.5);
    w.approve_max_ms = approves.last().copied().unwrap_or(0.0);
    w.screen_p50_ms = pick(&mut screens, 0.5);
    w.ratio = if w.screen_p50_ms > 0.0 {
        w.approve_p50_ms / w.screen_p50_ms
    } else {
        0.0
    };
    w.connections = pick(&mut conns, 0.5);
    w
}

pub fn respond(cx: &Ctx, runs: usize) -> Respond {
    eprintln!("respond: ccd approve at a settled prompt, holder and daemon walks…");
    Respond {
        walkers: vec![
            walker(cx, "holder", &[], runs),
            walker(cx, "daemon", &[("CCD_HOLDER_PROTOCOL_MAX", "2")], runs),
        ],
    }
}
