//! The `cost` part of `ccd-bench pty`: what measuring each session's cost
//! costs, with the idle fake-claude sessions of the memory part.
//!
//! - `ccd ls --json` with the costs (the daemon's board, one more call)
//!   next to `ccd ls --json --no-cost`, the runs interleaved so a machine
//!   that drifts weighs on both alike (issue target: within 20%);
//! - one `ccd_cost::CostProbe::sample` over every session's process, the
//!   work the daemon's sampler does each tick (every 5 s while sessions
//!   are live), in this process;
//! - with `--cost-unrelated N`: the same sample again while N unrelated
//!   `sleep` processes this bench starts (and ends, by pid) are on the
//!   machine, the first sample after they started apart (it may read the
//!   whole process table once).

use super::cases::Held;
use serde::Serialize;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub sessions: usize,
    pub runs: usize,
    pub ls_with_cost_median_ms: f64,
    pub ls_no_cost_median_ms: f64,
    pub ls_with_cost_p90_ms: f64,
    pub ls_no_cost_p90_ms: f64,
    /// with / without, medians.
    pub ratio: f64,
    /// One sample of every session's tree (the sampler's tick).
    pub sample_median_ms: f64,
    pub sample_p90_ms: f64,
    /// Processes on the machine when sampled.
    pub machine_processes: usize,
    /// Unrelated processes started for the samples below (0: none).
    pub unrelated: usize,
    /// The first sample after they started.
    pub unrelated_first_ms: f64,
    pub unrelated_sample_median_ms: f64,
    pub unrelated_sample_p90_ms: f64,
    /// Processes on the machine during those samples.
    pub unrelated_machine_processes: usize,
    pub errors: Vec<String>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One `ccd ls --json` (plus `extra`) in the held sessions' environment;
/// its wall time and how many live rows carry a cost.
fn ls_once(h: &Held, extra: &[&str]) -> anyhow::Result<(Duration, usize, usize)> {
    let (ccd, env) = h.ccd_and_env();
    let mut c = Command::new(ccd);
    c.args(["ls", "--json"])
        .args(extra)
        .stderr(Stdio::inherit());
    for (k, v) in env {
        c.env(k, v);
    }
    let t0 = Instant::now();
    let out = c.output()?;
    let took = t0.elapsed();
    anyhow::ensure!(out.status.success(), "ccd ls {extra:?} failed");
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)?;
    let live = rows.iter().filter(|r| r["state"] == "live").count();
    let costed = rows.iter().filter(|r| r.get("cost").is_some()).count();
    Ok((took, live, costed))
}

/// `n` `sleep` processes, children of this one (ended by [`end_all`]).
fn start_unrelated(n: usize, errors: &mut Vec<String>) -> Vec<std::process::Child> {
    let mut kids = Vec::with_capacity(n);
    for _ in 0..n {
        match Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => kids.push(c),
            Err(e) => {
                errors.push(format!(
                    "{} unrelated processes started, then: {e}",
                    kids.len()
                ));
                break;
            }
        }
    }
    kids
}

/// Ends each of `kids` by its pid and reaps it.
fn end_all(kids: Vec<std::process::Child>) {
    for mut k in kids {
        let _ = k.kill();
        let _ = k.wait();
    }
}

/// Samples of `roots` each [`ccd_cost::MIN_INTERVAL`] apart after a first
/// one; the first one's time and the others'.
fn samples(
    probe: &mut ccd_cost::CostProbe,
    roots: &[u32],
    n: usize,
    errors: &mut Vec<String>,
) -> (Duration, Vec<Duration>) {
    let t0 = Instant::now();
    let _ = probe.sample(roots);
    let first = t0.elapsed();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        // As far apart as the probe's CPU interval needs.
        std::thread::sleep(ccd_cost::MIN_INTERVAL);
        let t0 = Instant::now();
        let got = probe.sample(roots);
        out.push(t0.elapsed());
        if got.len() != roots.len() {
            errors.push(format!(
                "a sample found {} of {} sessions",
                got.len(),
                roots.len()
            ));
        }
    }
    (first, out)
}

pub fn cost(h: &Held, runs: usize, unrelated: usize) -> Cost {
    let n = h.claudes.len();
    let mut errors = Vec::new();
    let mut with = Vec::new();
    let mut without = Vec::new();
    // Warm-up, and the check that the figures are there (else the
    // comparison says nothing).
    match (ls_once(h, &[]), ls_once(h, &["--no-cost"])) {
        (Ok((_, live, costed)), Ok((_, _, none))) => {
            if live < n || costed < n || none != 0 {
                errors.push(format!(
                    "{live} live rows, {costed} with a cost, {none} with --no-cost (expected {n}, {n}, 0)"
                ));
            }
        }
        (a, b) => errors.push(format!("ccd ls: {:?} / {:?}", a.err(), b.err())),
    }
    for i in 0..runs {
        // Alternate which goes first.
        let order: [&[&str]; 2] = if i % 2 == 0 {
            [&[], &["--no-cost"]]
        } else {
            [&["--no-cost"], &[]]
        };
        for extra in order {
            match ls_once(h, extra) {
                Ok((d, _, _)) if extra.is_empty() => with.push(d),
                Ok((d, _, _)) => without.push(d),
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
    }
    let mut samples = Vec::new();
    let mut machine_processes = 0;
    let mut unrelated_first = Duration::ZERO;
    let mut unrelated_samples = Vec::new();
    let mut unrelated_machine_processes = 0;
    let mut started = 0;
    match ccd_cost::CostProbe::new() {
        Ok(mut probe) => {
            samples = self::samples(&mut probe, &h.claudes, runs.max(5), &mut errors).1;
            machine_processes = ccd_testkit::procs::pids().len();
            if unrelated > 0 {
                let kids = start_unrelated(unrelated, &mut errors);
                started = kids.len();
                (unrelated_first, unrelated_samples) =
                    self::samples(&mut probe, &h.claudes, runs.max(5), &mut errors);
                unrelated_machine_processes = ccd_testkit::procs::pids().len();
                end_all(kids);
            }
        }
        Err(e) => errors.push(format!("no cost probe: {e}")),
    }
    unrelated_samples.sort();
    for v in [&mut with, &mut without, &mut samples] {
        v.sort();
    }
    let pick = |v: &[Duration], q: f64| {
        let ms: Vec<f64> = v.iter().map(|d| ms(*d)).collect();
        if ms.is_empty() {
            0.0
        } else {
            crate::stats::nearest_rank(&ms, q)
        }
    };
    let (wm, nm) = (pick(&with, 0.5), pick(&without, 0.5));
    Cost {
        sessions: n,
        runs,
        ls_with_cost_median_ms: wm,
        ls_no_cost_median_ms: nm,
        ls_with_cost_p90_ms: pick(&with, 0.9),
        ls_no_cost_p90_ms: pick(&without, 0.9),
        ratio: if nm > 0.0 { wm / nm } else { 0.0 },
        sample_median_ms: pick(&samples, 0.5),
        sample_p90_ms: pick(&samples, 0.9),
        machine_processes,
        unrelated: started,
        unrelated_first_ms: ms(unrelated_first),
        unrelated_sample_median_ms: pick(&unrelated_samples, 0.5),
        unrelated_sample_p90_ms: pick(&unrelated_samples, 0.9),
        unrelated_machine_processes,
        errors,
    }
}
