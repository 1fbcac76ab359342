//! `ccd usage` beside `ccusage` on the same query over the same generated
//! transcripts, in one run (issue 56's yardstick: ≥ 10× faster).
//!
//! The set is `gen-config`'s (`--transcripts`, `--big` transcripts of
//! `--big-mb` MB each: several GB with the defaults), generated once into
//! `--work` and reused. Both tools run with the page cache warm: every
//! transcript is read once before each round (a build beside the
//! benchmark can push pages out between rounds). The query is the daily totals (`ccd usage --json --by day
//! --utc`, `ccusage claude daily --json --offline` with `TZ=UTC`); a run
//! whose token totals differ from ccusage's fails the benchmark, so a
//! broken count cannot post a fast time. Measured, each `--runs` times:
//! ccd cold (its cache file removed first: every byte read), ccd warm (the
//! cache as the last run left it: nothing changed, nothing read), ccd
//! after appends (one turn appended to 100 transcripts: only those bytes
//! read), and ccusage (it keeps no cache). Beside them, the read floor:
//! every transcript's bytes read into a buffer on as many threads as ccd
//! uses, nothing parsed — what any reader without a cache pays at least
//! (the kernel's copy out of the page cache), which bounds the cold
//! ratio. Printed: min, median and max wall time of each whole process
//! (the floor is in-process) and the ratios of the medians.

use crate::gen_config;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The ccd binary (default: `ccd` beside this benchmark's executable).
    #[arg(long)]
    pub ccd: Option<PathBuf>,
    /// The ccusage binary (default: $CCD_CCUSAGE, from
    /// tests/ccusage/install.sh).
    #[arg(long, env = "CCD_CCUSAGE")]
    pub ccusage: PathBuf,
    /// Where generated config dirs are kept between runs.
    #[arg(long, default_value = "target/bench-data")]
    pub work: PathBuf,
    #[arg(long, default_value_t = 10_000)]
    pub transcripts: u64,
    /// How many transcripts are large.
    #[arg(long, default_value_t = 30)]
    pub big: u64,
    /// Size of each large transcript, in MB.
    #[arg(long, default_value_t = 100)]
    pub big_mb: u64,
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
}

/// Token totals of a daily report: input, output, cache writes, reads.
type Totals = (u64, u64, u64, u64);

pub fn run(a: &Args) -> anyhow::Result<()> {
    let ccd = crate::beside_me(a.ccd.as_deref(), "ccd")?;
    anyhow::ensure!(
        ccd.exists(),
        "{} not found: cargo build --release -p ccd",
        ccd.display()
    );
    let dir = gen_config::kept(&gen_config::Args {
        dir: std::path::absolute(
            a.work
                .join(format!("usage-{}-{}x{}", a.transcripts, a.big, a.big_mb)),
        )?,
        transcripts: a.transcripts,
        big: a.big,
        big_mb: a.big_mb,
        entries: 50,
        projects: 250,
    })?;
    let home = std::env::temp_dir().join(format!("ccd-bench-usage-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;
    let state = home.join("state");
    let cache = state.join("usage-cache.bin");
    let bytes = warm(&dir.join("projects"))?;
    eprintln!(
        "{} transcripts, {:.2} GB, page cache warm",
        a.transcripts,
        bytes as f64 / 1e9
    );

    let ccd_run = || -> anyhow::Result<(Duration, Totals)> {
        let t0 = Instant::now();
        let out = Command::new(&ccd)
            .args([
                "usage",
                "--json",
                "--by",
                "day",
                "--utc",
                "--claude-config-dir",
            ])
            .arg(&dir)
            .env("HOME", &home)
            .env("CCD_STATE_DIR", &state)
            .env("CCD_CONFIG", home.join("none.toml"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CCD_HOST")
            .stderr(Stdio::inherit())
            .output()?;
        let took = t0.elapsed();
        anyhow::ensure!(out.status.success(), "ccd usage failed");
        let v: Value = serde_json::from_slice(&out.stdout)?;
        let t = &v["total"]["tokens"];
        let n = |k: &str| t[k].as_u64().unwrap_or(u64::MAX);
        Ok((
            took,
            (
                n("input"),
                n("output"),
                n("cache_creation"),
                n("cache_read"),
            ),
        ))
    };
    let ccusage_run = || -> anyhow::Result<(Duration, Totals)> {
        let t0 = Instant::now();
        let out = Command::new(&a.ccusage)
            .args(["claude", "daily", "--json", "--offline"])
            .env("CLAUDE_CONFIG_DIR", &dir)
            .env("HOME", &home)
            .env("TZ", "UTC")
            .env("NO_COLOR", "1")
            .stderr(Stdio::inherit())
            .output()?;
        let took = t0.elapsed();
        anyhow::ensure!(out.status.success(), "ccusage failed");
        let v: Value = serde_json::from_slice(&out.stdout)?;
        let t = &v["totals"];
        let n = |k: &str| t[k].as_u64().unwrap_or(u64::MAX);
        Ok((
            took,
            (
                n("inputTokens"),
                n("outputTokens"),
                n("cacheCreationTokens"),
                n("cacheReadTokens"),
            ),
        ))
    };

    let (_, mut expect) = ccusage_run()?;
    let mut times: [Vec<Duration>; 5] = Default::default();
    let mut appended = 0u64;
    let files = jsonl_files(&dir.join("projects"))?;
    for i in 0..a.runs {
        warm(&dir.join("projects"))?;
        times[4].push(read_floor(&files)?);
        let _ = std::fs::remove_file(&cache);
        anyhow::ensure!(!cache.exists(), "{} could not be removed", cache.display());
        let (t, got) = ccd_run()?;
        anyhow::ensure!(got == expect, "cold: ccd {got:?} vs ccusage {expect:?}");
        times[0].push(t);
        let (t, got) = ccd_run()?;
        anyhow::ensure!(got == expect, "warm: ccd {got:?} vs ccusage {expect:?}");
        times[1].push(t);
        // One turn appended to 100 transcripts.
        appended += append_turns(&dir, a.transcripts, i)?;
        let (t, got) = ccd_run()?;
        let (tc, theirs) = ccusage_run()?;
        anyhow::ensure!(
            got == theirs,
            "after appends: ccd {got:?} vs ccusage {theirs:?}"
        );
        expect = theirs;
        times[2].push(t);
        times[3].push(tc);
    }
    for t in &mut times {
        t.sort();
    }
    let med = |t: &[Duration]| t[t.len() / 2];
    let names = [
        "ccd usage, cold (no cache)",
        "ccd usage, warm (cache)",
        "ccd usage, after appends",
        "ccusage",
        "read floor (no parsing)",
    ];
    println!("{:<28} {:>10} {:>10} {:>10}", "", "min", "median", "max");
    for (name, t) in names.iter().zip(&times) {
        println!(
            "{:<28} {:>9.3}s {:>9.3}s {:>9.3}s",
            name,
            t[0].as_secs_f64(),
            med(t).as_secs_f64(),
            t[t.len() - 1].as_secs_f64()
        );
    }
    let theirs = med(&times[3]).as_secs_f64();
    for (i, name) in ["cold", "warm", "after appends"].iter().enumerate() {
        println!(
            "ccusage / ccd {name}: {:.1}x",
            theirs / med(&times[i]).as_secs_f64()
        );
    }
    println!(
        "ccusage / read floor: {:.1}x (the most a cold run could reach here); ccd cold / read floor: {:.2}",
        theirs / med(&times[4]).as_secs_f64(),
        med(&times[0]).as_secs_f64() / med(&times[4]).as_secs_f64()
    );
    println!(
        "{} transcript files, {:.2} GB; {} runs; {} bytes appended in all; cache {} bytes; token totals equal to ccusage's in every run",
        files.len(),
        bytes as f64 / 1e9,
        a.runs,
        appended,
        std::fs::metadata(&cache).map(|m| m.len()).unwrap_or(0)
    );
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}

/// Appends one turn to 100 of the transcripts (compact, as the CLI
/// writes); the bytes written.
fn append_turns(dir: &Path, transcripts: u64, round: usize) -> anyhow::Result<u64> {
    use std::io::Write;
    let mut n = 0;
    for k in 0..100u64 {
        let i = (k * 97 + round as u64 * 13) % transcripts.max(1);
        let sid = ccd_testkit::gen::sid(i);
        let Some(path) = find(dir, &sid) else {
            continue;
        };
        let line = serde_json::json!({"type":"assistant","timestamp":"2026-11-30T12:00:00.000Z",
            "requestId":format!("req_b_{round}_{k}"),
            "message":{"id":format!("msg_b_{round}_{k}"),"model":"claude-opus-5-5","role":"assistant",
              "content":[{"type":"text","text":"more"}],
              "usage":{"input_tokens":1000,"output_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":500}},
            "sessionId":sid})
        .to_string()
            + "\n";
        let mut f = std::fs::OpenOptions::new().append(true).open(&path)?;
        f.write_all(line.as_bytes())?;
        n += line.len() as u64;
    }
    Ok(n)
}

fn find(dir: &Path, sid: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir.join("projects")).ok()?.flatten() {
        let p = e.path().join(format!("{sid}.jsonl"));
        if p.exists() {
            return Some(p);
        }
    }
    None
}

/// Every `*.jsonl` under `dir`.
fn jsonl_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let p = e.path();
            if e.file_type()?.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// The time to read every one of `files` into a 1 MiB buffer (as ccd's
/// reader does) on as many threads as ccd reads with, nothing parsed.
fn read_floor(files: &[PathBuf]) -> anyhow::Result<Duration> {
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> std::io::Result<()> {
                    let mut buf = vec![0u8; 1 << 20];
                    while let Some(p) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let mut f = std::fs::File::open(p)?;
                        while f.read(&mut buf)? > 0 {}
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a reading thread panicked"))??;
        }
        Ok(())
    })?;
    Ok(t0.elapsed())
}

/// Reads every file under `dir` once; the bytes read.
fn warm(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let p = e.path();
            if e.file_type()?.is_dir() {
                stack.push(p);
            } else {
                let mut f = std::fs::File::open(&p)?;
                total += std::io::copy(&mut f, &mut std::io::sink())?;
            }
        }
    }
    Ok(total)
}
