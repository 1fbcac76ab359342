//! `ccd ls --json` wall time over a generated config dir.
//!
//! Two shapes in one run, so the "flat as transcripts grow" claim can be
//! read off directly: 10,000 transcripts with none large, and the same with
//! a few 100 MB ones. Each is generated once into `--work` and reused.
//!
//! Each shape is timed twice: *cold* (every run with an empty state dir, so
//! every transcript is read) and *warm* (ccd's transcript summary cache
//! from the run before: unchanged transcripts are only stat'ed).

use crate::gen_config;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// Where generated config dirs are kept between runs.
    #[arg(long, default_value = "target/bench-data")]
    pub work: PathBuf,
    #[arg(long, default_value_t = 10_000)]
    pub transcripts: u64,
    #[arg(long, default_value_t = 15)]
    pub runs: usize,
    /// Write the figures as JSON here too.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let ccd = crate::beside_me(a.ccd.as_deref(), "ccd")?;
    anyhow::ensure!(
        ccd.exists(),
        "{} not found: cargo build --release -p ccd",
        ccd.display()
    );
    let mut results = Vec::new();
    for (label, big) in [
        ("10k transcripts, none large", 0u64),
        ("10k transcripts, 3 of 100 MB", 3),
    ] {
        let dir = gen_config::kept(&gen_config::Args {
            dir: a.work.join(format!("ls-{}-{big}", a.transcripts)),
            transcripts: a.transcripts,
            big,
            big_mb: 100,
            entries: 50,
            projects: 250,
        })?;
        for cache in [Cache::Cold, Cache::Warm] {
            let times = time_ls(&ccd, &dir, a.runs, cache)?;
            let ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
            let (min, med, p90) = (
                ms[0],
                crate::stats::nearest_rank(&ms, 0.5),
                crate::stats::nearest_rank(&ms, 0.9),
            );
            let cache = cache.name();
            println!("ccd ls --json, {label}, {cache}: min {min:.1} ms, median {med:.1} ms, p90 {p90:.1} ms ({} runs)", a.runs);
            results.push(serde_json::json!({"case": label, "cache": cache, "runs": a.runs, "min_ms": min, "median_ms": med, "p90_ms": p90}));
        }
    }
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&results)?)?;
    }
    Ok(())
}

/// Whether runs find the transcript summary cache of the run before.
#[derive(Clone, Copy)]
enum Cache {
    Cold,
    Warm,
}

impl Cache {
    fn name(self) -> &'static str {
        match self {
            Cache::Cold => "cold (no summary cache)",
            Cache::Warm => "warm (summary cache)",
        }
    }
}

/// Runs `ccd ls --json` `runs` times (after one warm-up) and returns the
/// sorted wall times. Output is checked to be a JSON array of the expected
/// length, so a broken ls cannot post a fast time.
fn time_ls(ccd: &Path, config: &Path, runs: usize, cache: Cache) -> anyhow::Result<Vec<Duration>> {
    let home = tempfile_home()?;
    let state = home.join("state");
    let once = || -> anyhow::Result<(Duration, usize)> {
        if let Cache::Cold = cache {
            let _ = std::fs::remove_dir_all(&state);
        }
        let t0 = Instant::now();
        let out = Command::new(ccd)
            .args(["ls", "--json", "--claude-config-dir"])
            .arg(config)
            .env("HOME", &home)
            .env("CCD_STATE_DIR", &state)
            .env_remove("CLAUDE_CONFIG_DIR")
            .stderr(Stdio::inherit())
            .output()?;
        let took = t0.elapsed();
        anyhow::ensure!(out.status.success(), "ccd ls failed");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        Ok((took, v.as_array().map(Vec::len).unwrap_or(0)))
    };
    let (_, n) = once()?;
    anyhow::ensure!(n > 0, "ccd ls listed nothing");
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        times.push(once()?.0);
    }
    times.sort();
    Ok(times)
}

fn tempfile_home() -> anyhow::Result<PathBuf> {
    let p = std::env::temp_dir().join(format!("ccd-bench-home-{}", std::process::id()));
    std::fs::create_dir_all(&p)?;
    Ok(p)
}
