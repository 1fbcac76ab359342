//! `ccd search` beside `rg -F -l` over the same generated transcripts, page
//! cache warm, in one run (issue 55's yardstick: the index must make the
//! first ≥ 20× faster than the second).
//!
//! For each size (`--scales`: multiples of `--transcripts`, each generated
//! once into `--work` by `gen-config` and reused) every transcript is read
//! once to warm the page cache. The first `ccd search`, as a user runs it
//! with a fresh state dir, builds and saves the search index it keeps
//! (timed: the first build, whole process); then `ccd search` (the kept
//! index, warm), `ccd search --no-index` (the scan) and `rg -F -l`
//! alternate `--runs` times. All look for one phrase that occurs in one
//! session (`task N: step 3 of the plan`); a run whose files differ from
//! rg's fails the benchmark, so a broken search cannot post a fast time.
//! Printed: min, median and p90 wall time of each whole process, the
//! ratios of the medians, and the kept index file's size.
//!
//! Then the daemon (unless `--no-daemon`): one of its own, fresh state
//! dir and socket, over the same transcripts: how long after its start its
//! index opens (built from no file: the first build's MB/s), then the
//! whole `ccd search` process answered through it (the files checked
//! against rg's) alternating with `rg -F -l`, the ratio; `sessions.search`
//! alone, and the one that takes in a MB just appended to a transcript;
//! the daemon's RSS with the index open.
//!
//! Then the index (ccd-search's `index`, in this process): the first build over the same transcripts (MB/s), its
//! file's size against theirs, a save and a load, the same phrase through
//! the index and through the scan (`--runs` each, hits checked equal to
//! rg's files), one appended MB of new turns taken in by an update, and
//! the process's peak RSS after it all.

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
    /// Skip the index's measurements.
    #[arg(long)]
    pub no_index: bool,
    /// Skip the daemon's measurements.
    #[arg(long)]
    pub no_daemon: bool,
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
        let search = |extra: &[&str]| -> anyhow::Result<(Duration, BTreeSet<PathBuf>)> {
            let t0 = Instant::now();
            let out = Command::new(&ccd)
                .arg("search")
                .arg(format!("\"{phrase}\""))
                .args(extra)
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
        // A fresh state dir: this first search builds the index it keeps.
        let state = home.join("state");
        let _ = std::fs::remove_dir_all(&state);
        let (first, got) = search(&[])?;
        anyhow::ensure!(got == want, "ccd search found {got:?}, rg -F -l {want:?}");
        let idx_file = state.join("ccd").join("search.idx");
        let idx_bytes = std::fs::metadata(&idx_file)
            .map_err(|e| anyhow::anyhow!("{}: {e} (ccd search kept no index)", idx_file.display()))?
            .len();
        let (_, got) = search(&["--no-index"])?;
        anyhow::ensure!(
            got == want,
            "ccd search --no-index found {got:?}, rg -F -l {want:?}"
        );
        let (mut s_times, mut n_times, mut r_times) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..a.runs {
            s_times.push(search(&[])?.0.as_secs_f64() * 1e3);
            n_times.push(search(&["--no-index"])?.0.as_secs_f64() * 1e3);
            r_times.push(rg()?.0.as_secs_f64() * 1e3);
        }
        s_times.sort_by(f64::total_cmp);
        n_times.sort_by(f64::total_cmp);
        r_times.sort_by(f64::total_cmp);
        let q = |v: &[f64], f| crate::stats::nearest_rank(v, f);
        let mb = bytes as f64 / 1e6;
        println!(
            "{n} transcripts, {mb:.0} MB: first ccd search (builds the kept index) {:.2} s ({:.0} MB/s), index file {:.1} MB",
            first.as_secs_f64(),
            mb / first.as_secs_f64(),
            idx_bytes as f64 / 1e6
        );
        for (name, t) in [
            ("ccd search (kept index)", &s_times),
            ("ccd search --no-index", &n_times),
            ("rg -F -l", &r_times),
        ] {
            println!(
                "{n} transcripts, {mb:.0} MB, {name}: min {:.1} ms, median {:.1} ms, p90 {:.1} ms ({} runs)",
                t[0],
                q(t, 0.5),
                q(t, 0.9),
                a.runs
            );
        }
        let ratio = q(&s_times, 0.5) / q(&r_times, 0.5);
        let scan_ratio = q(&n_times, 0.5) / q(&r_times, 0.5);
        let mbps = mb / (q(&s_times, 0.5) / 1e3);
        println!(
            "{n} transcripts: ccd search / rg = {ratio:.2}, rg / ccd search = {:.2}, ccd search --no-index / rg = {scan_ratio:.2} (medians)",
            1.0 / ratio
        );
        let index = if a.no_index {
            serde_json::Value::Null
        } else {
            index_figures(
                &projects,
                &home,
                bytes,
                &phrase,
                &want,
                a.runs,
                q(&r_times, 0.5),
            )?
        };
        let daemon = if a.no_daemon {
            serde_json::Value::Null
        } else {
            daemon_figures(&ccd, &dir, &home, bytes, &phrase, &want, a.runs, &rg)?
        };
        results.push(serde_json::json!({
            "daemon": daemon,
            "transcripts": n, "bytes": bytes, "runs": a.runs,
            "search_ms": {"min": s_times[0], "median": q(&s_times, 0.5), "p90": q(&s_times, 0.9)},
            "rg_ms": {"min": r_times[0], "median": q(&r_times, 0.5), "p90": q(&r_times, 0.9)},
            "no_index_ms": {"min": n_times[0], "median": q(&n_times, 0.5), "p90": q(&n_times, 0.9)},
            "first_search_s": first.as_secs_f64(), "kept_index_bytes": idx_bytes,
            "ratio_median": ratio, "scan_ratio_median": scan_ratio, "search_mb_per_s": mbps,
            "index": index,
        }));
    }
    let _ = std::fs::remove_dir_all(&home);
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_vec_pretty(&results)?)?;
    }
    Ok(())
}

/// The daemon's figures (see the module header): a daemon of its own
/// (fresh state dir and socket) over `dir`; the time it takes to open its
/// index (the first build, from no index file), then the whole `ccd
/// search` process answered through it alternating with `rg -F -l`; one
/// appended MB's cost in the search that takes it in; the daemon's RSS.
#[allow(clippy::too_many_arguments)]
fn daemon_figures(
    ccd: &Path,
    dir: &Path,
    home: &Path,
    bytes: u64,
    phrase: &str,
    want: &BTreeSet<PathBuf>,
    runs: usize,
    rg: &dyn Fn() -> anyhow::Result<(Duration, BTreeSet<PathBuf>)>,
) -> anyhow::Result<serde_json::Value> {
    use ccd_protocol::methods::session::{SearchParams, SessionsSearch};
    let state = home.join("dstate");
    let sock = home.join("dsock");
    let _ = std::fs::remove_dir_all(&state);
    let env = |c: &mut Command| {
        c.env("HOME", home)
            .env("CCD_STATE_DIR", &state)
            .env("CCD_SOCKET_DIR", &sock)
            .env("CCD_LOG", "warn")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CCD_HOST");
    };
    let mut cmd = Command::new(ccd);
    cmd.args(["daemon", "--claude-config-dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    env(&mut cmd);
    let t0 = Instant::now();
    let mut daemon = cmd.spawn()?;
    struct Stop<'a>(&'a mut std::process::Child);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let pid = daemon.id();
    let _stop = Stop(&mut daemon);
    let sdir = ccd_client::SocketDir::new(&sock);
    let mut c = loop {
        match ccd_client::Client::connect(&sdir, "ccd-bench/search") {
            Ok(c) => break c,
            Err(_) if t0.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(e.into()),
        }
    };
    let quoted = format!("\"{phrase}\"");
    // The index opens in the background: searches scan until then.
    let opened = loop {
        let r = c.call::<SessionsSearch>(&SearchParams::new(&quoted))?;
        if r.indexed {
            break t0.elapsed();
        }
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(600),
            "the daemon's index did not open"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let search = || -> anyhow::Result<(Duration, BTreeSet<PathBuf>)> {
        let mut cmd = Command::new(ccd);
        cmd.args(["search", &quoted, "--json"])
            .stderr(Stdio::inherit());
        env(&mut cmd);
        let t0 = Instant::now();
        let out = cmd.output()?;
        let took = t0.elapsed();
        anyhow::ensure!(out.status.success(), "ccd search failed");
        let v: Vec<ccd_protocol::search::SearchHit> = serde_json::from_slice(&out.stdout)?;
        Ok((took, v.into_iter().map(|h| PathBuf::from(h.path)).collect()))
    };
    let (_, got) = search()?;
    anyhow::ensure!(
        &got == want,
        "ccd search (daemon) found {got:?}, rg -F -l {want:?}"
    );
    let (mut d_times, mut r_times) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        d_times.push(search()?.0.as_secs_f64() * 1e3);
        r_times.push(rg()?.0.as_secs_f64() * 1e3);
    }
    d_times.sort_by(f64::total_cmp);
    r_times.sort_by(f64::total_cmp);
    let q = |v: &[f64], f| crate::stats::nearest_rank(v, f);
    // The request alone (no process start), then one with a MB appended
    // to a transcript: the difference is the update's.
    let mut calls = Vec::new();
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        c.call::<SessionsSearch>(&SearchParams::new(&quoted))?;
        calls.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    calls.sort_by(f64::total_cmp);
    let target = ccd_claude::transcript::list_all(&dir.join("projects"))
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no transcript"))?;
    let mut appended = Vec::new();
    let mut turn = 0;
    while appended.len() < 1 << 20 {
        let words: String = (0..100)
            .map(|w| format!("daemonword{} ", turn * 131 + w * 7))
            .collect();
        let line = serde_json::json!({"type":"user","timestamp":"2026-12-01T00:00:00Z","message":{"role":"user","content":words}});
        appended.extend_from_slice(line.to_string().as_bytes());
        appended.push(b'\n');
        turn += 1;
    }
    std::io::Write::write_all(
        &mut std::fs::OpenOptions::new()
            .append(true)
            .open(&target.path)?,
        &appended,
    )?;
    let t0 = Instant::now();
    let r = c.call::<SessionsSearch>(&SearchParams::new("daemonword7"))?;
    let append_ms = t0.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        r.hits.iter().any(|h| h.session_id == target.session_id),
        "the appended MB was not found"
    );
    let rss_mb = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0);
    let idx = std::fs::metadata(state.join("search.idx")).map_or(0, |m| m.len());
    let mb = bytes as f64 / 1e6;
    let ratio = q(&r_times, 0.5) / q(&d_times, 0.5);
    println!(
        "daemon: index open (first build, from no file) {:.2} s after start ({:.0} MB/s), index file {:.1} MB ({:.2}% of {mb:.0} MB); RSS with the index open {rss_mb:.0} MB",
        opened.as_secs_f64(),
        mb / opened.as_secs_f64(),
        idx as f64 / 1e6,
        100.0 * idx as f64 / bytes as f64,
    );
    println!(
        "daemon: ccd search (whole process) min {:.1} ms, median {:.1} ms, p90 {:.1} ms; rg -F -l median {:.1} ms: rg / ccd search = {ratio:.1}x ({runs} runs); sessions.search alone median {:.2} ms; with {:.2} MB just appended {append_ms:.1} ms",
        d_times[0],
        q(&d_times, 0.5),
        q(&d_times, 0.9),
        q(&r_times, 0.5),
        q(&calls, 0.5),
        appended.len() as f64 / 1e6,
    );
    Ok(serde_json::json!({
        "open_s": opened.as_secs_f64(), "index_file_bytes": idx, "rss_mb": rss_mb,
        "search_ms": {"min": d_times[0], "median": q(&d_times, 0.5), "p90": q(&d_times, 0.9)},
        "rg_ms": {"median": q(&r_times, 0.5)}, "rg_over_search": ratio,
        "call_ms": q(&calls, 0.5), "append_bytes": appended.len(), "append_call_ms": append_ms,
    }))
}

/// The index's figures over `projects` (see the module header).
fn index_figures(
    projects: &Path,
    home: &Path,
    bytes: u64,
    phrase: &str,
    want: &BTreeSet<PathBuf>,
    runs: usize,
    rg_median_ms: f64,
) -> anyhow::Result<serde_json::Value> {
    use ccd_search::index::{Index, Limits};
    use ccd_search::{Filters, Query, Source};
    let mut srcs: Vec<Source> = ccd_claude::transcript::list_all(projects)
        .into_iter()
        .map(|f| Source {
            session_id: f.session_id,
            path: f.path,
        })
        .collect();
    // A transcript of this benchmark's own, grown by a MB later.
    let grown = home.join("grown.jsonl");
    std::fs::write(&grown, b"")?;
    srcs.push(Source {
        session_id: "grown".into(),
        path: grown.clone(),
    });
    let mb = bytes as f64 / 1e6;
    let t0 = Instant::now();
    let mut index = Index::new(Limits::default());
    let st = index.update(&srcs);
    let build = t0.elapsed().as_secs_f64();
    anyhow::ensure!(
        st.left_out == 0,
        "files left out of the index: {}",
        st.left_out
    );
    let path = home.join("search.idx");
    let t0 = Instant::now();
    index.save(&path)?;
    let save = t0.elapsed().as_secs_f64();
    let size = std::fs::metadata(&path)?.len();
    let t0 = Instant::now();
    let mut index = Index::load(&path, Limits::default())?;
    let load = t0.elapsed().as_secs_f64();
    let query = Query::terms(&format!("\"{phrase}\""))?;
    let now = time::OffsetDateTime::now_utc();
    let filters = Filters::default();
    let (mut i_times, mut s_times) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        let (hits, _, ist) = index.search(&srcs, &query, &filters, now, 20);
        i_times.push(t0.elapsed().as_secs_f64() * 1e3);
        let got: BTreeSet<PathBuf> = hits.into_iter().map(|h| h.path).collect();
        anyhow::ensure!(&got == want, "index found {got:?}, rg -F -l {want:?}");
        anyhow::ensure!(
            ist.scanned == 0,
            "index search scanned {} files",
            ist.scanned
        );
        let t0 = Instant::now();
        let (hits, _) = ccd_search::scan(&srcs, &query, &filters, now, 20);
        s_times.push(t0.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(hits.len() == want.len(), "scan found {}", hits.len());
    }
    i_times.sort_by(f64::total_cmp);
    s_times.sort_by(f64::total_cmp);
    let q = |v: &[f64], f| crate::stats::nearest_rank(v, f);
    // One MB of new turns, then an update.
    let mut appended = Vec::new();
    let mut turn = 0;
    while appended.len() < 1 << 20 {
        let words: String = (0..100)
            .map(|w| format!("grownword{} ", turn * 131 + w * 7))
            .collect();
        let line = serde_json::json!({"type":"user","timestamp":"2026-12-01T00:00:00Z","message":{"role":"user","content":words}});
        appended.extend_from_slice(line.to_string().as_bytes());
        appended.push(b'\n');
        turn += 1;
    }
    std::io::Write::write_all(
        &mut std::fs::OpenOptions::new().append(true).open(&grown)?,
        &appended,
    )?;
    let t0 = Instant::now();
    let st = index.update(&srcs);
    let append = t0.elapsed().as_secs_f64();
    anyhow::ensure!(
        st.files_read == 1,
        "the update read {} files",
        st.files_read
    );
    let rss_mb = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss() as f64 / 1024.0)
        .unwrap_or(f64::NAN);
    println!(
        "index: build {build:.2} s ({:.0} MB/s), {:.1} MB on disk ({:.1}% of {mb:.0} MB), save {save:.2} s, load {load:.2} s, {} posting entries",
        mb / build,
        size as f64 / 1e6,
        100.0 * size as f64 / bytes as f64,
        index.postings_len()
    );
    println!(
        "index: query median {:.2} ms (min {:.2}, p90 {:.2}); in-process scan median {:.1} ms; rg -F -l {rg_median_ms:.1} ms; an appended {:.2} MB taken in in {:.1} ms; peak RSS {rss_mb:.0} MB",
        q(&i_times, 0.5),
        i_times[0],
        q(&i_times, 0.9),
        q(&s_times, 0.5),
        appended.len() as f64 / 1e6,
        append * 1e3,
    );
    Ok(serde_json::json!({
        "build_s": build, "build_mb_per_s": mb / build, "file_bytes": size,
        "save_s": save, "load_s": load, "postings": index.postings_len(),
        "query_ms": {"min": i_times[0], "median": q(&i_times, 0.5), "p90": q(&i_times, 0.9)},
        "scan_in_process_ms": q(&s_times, 0.5),
        "append_bytes": appended.len(), "append_ms": append * 1e3,
        "peak_rss_mb": rss_mb,
    }))
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
