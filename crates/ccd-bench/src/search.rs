//! `ccd search` beside `rg -F -l` over the same generated transcripts, page
//! cache warm, in one run (issue 55's yardstick: the index must make the
//! first ≥ 20× faster than the second).
//!
//! For each size (`--scales`: multiples of `--transcripts`, each generated
//! once into `--work` by `gen-config` and reused) every transcript is read
//! once to warm the page cache, then the two commands alternate `--runs`
//! times after a warm-up each. Both look for one phrase that occurs in one
//! session (`task N: step 3 of the plan`); a run whose files differ from
//! rg's fails the benchmark, so a broken search cannot post a fast time.
//! Printed: min, median and p90 wall time of each whole process, the
//! ratio of the medians, and the bytes searched per second of `ccd search`.

use crate::gen_config;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// The ripgrep binary.
    #[arg(long, default_value = "rg")]
    pub rg: PathBuf,
    /// Where generated config dirs are kept between runs.
    #[arg(long, default_value = "target/bench-data")]
    pub work: PathBuf,
    /// Transcripts of the smallest set (gen-config's default).
    #[arg(long, default_value_t = 10_000)]
    pub transcripts: u64,
    /// The sets' sizes, as multiples of --transcripts (the large
    /// transcripts and registry entries scale too).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub scales: Vec<u64>,
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
    let home = std::env::temp_dir().join(format!("ccd-bench-search-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;
    let mut results = Vec::new();
    for &scale in &a.scales {
        let n = a.transcripts * scale.max(1);
        let dir = gen_config::kept(&gen_config::Args {
            dir: std::path::absolute(a.work.join(format!("search-{n}")))?,
            transcripts: n,
            big: 3 * scale.max(1),
            big_mb: 100,
            entries: 50 * scale.max(1),
            projects: 250 * scale.max(1),
        })?;
        let projects = dir.join("projects");
        let bytes = warm(&projects)?;
        let phrase = format!("task {}: step 3 of the plan", n / 2 + 7);
        let search = || -> anyhow::Result<(Duration, BTreeSet<PathBuf>)> {
            let t0 = Instant::now();
            let out = Command::new(&ccd)
                .arg("search")
                .arg(format!("\"{phrase}\""))
                .args(["--json", "--claude-config-dir"])
                .arg(&dir)
                .env("HOME", &home)
                .env("XDG_STATE_HOME", home.join("state"))
                .env("CCD_SOCKET_DIR", home.join("sock"))
                .env_remove("CLAUDE_CONFIG_DIR")
                .env_remove("CCD_HOST")
                .stderr(Stdio::inherit())
                .output()?;
            let took = t0.elapsed();
            anyhow::ensure!(out.status.success(), "ccd search failed");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
            let files = v
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|h| h["path"].as_str().map(PathBuf::from))
                .collect();
            Ok((took, files))
        };
        let rg = || -> anyhow::Result<(Duration, BTreeSet<PathBuf>)> {
            let t0 = Instant::now();
            let out = Command::new(&a.rg)
                .args(["-F", "-l", "--", &phrase])
                .arg(&projects)
                .stderr(Stdio::inherit())
                .output()?;
            let took = t0.elapsed();
            anyhow::ensure!(out.status.success(), "rg found nothing");
            let files = String::from_utf8(out.stdout)?
                .lines()
                .map(PathBuf::from)
                .collect();
            Ok((took, files))
        };
        let (_, want) = rg()?;
        let (_, got) = search()?;
        anyhow::ensure!(got == want, "ccd search found {got:?}, rg -F -l {want:?}");
        let (mut s_times, mut r_times) = (Vec::new(), Vec::new());
        for _ in 0..a.runs {
            s_times.push(search()?.0.as_secs_f64() * 1e3);
            r_times.push(rg()?.0.as_secs_f64() * 1e3);
        }
        s_times.sort_by(f64::total_cmp);
        r_times.sort_by(f64::total_cmp);
        let q = |v: &[f64], f| crate::stats::nearest_rank(v, f);
        let mb = bytes as f64 / 1e6;
        for (name, t) in [("ccd search", &s_times), ("rg -F -l", &r_times)] {
            println!(
                "{n} transcripts, {mb:.0} MB, {name}: min {:.1} ms, median {:.1} ms, p90 {:.1} ms ({} runs)",
                t[0],
                q(t, 0.5),
                q(t, 0.9),
                a.runs
            );
        }
        let ratio = q(&s_times, 0.5) / q(&r_times, 0.5);
        let mbps = mb / (q(&s_times, 0.5) / 1e3);
        println!(
            "{n} transcripts: ccd search / rg = {ratio:.2} (median); ccd search {mbps:.0} MB/s"
        );
        results.push(serde_json::json!({
            "transcripts": n, "bytes": bytes, "runs": a.runs,
            "search_ms": {"min": s_times[0], "median": q(&s_times, 0.5), "p90": q(&s_times, 0.9)},
            "rg_ms": {"min": r_times[0], "median": q(&r_times, 0.5), "p90": q(&r_times, 0.9)},
            "ratio_median": ratio, "search_mb_per_s": mbps,
        }));
    }
    let _ = std::fs::remove_dir_all(&home);
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&results)?)?;
    }
    Ok(())
}

/// Reads every transcript once (the page cache warm) and returns their
/// total size.
fn warm(projects: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for f in ccd_claude::transcript::list_all(projects) {
        let mut file = std::fs::File::open(&f.path)?;
        total += std::io::copy(&mut file, &mut std::io::sink())?;
    }
    Ok(total)
}
