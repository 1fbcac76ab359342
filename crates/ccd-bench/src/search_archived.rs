//! Searching archived conversations (issue 55 with issue 56's archives):
//! what one search pays for `N` archives, in this process.
//!
//! For each count (`--archives`), `N` transcripts shaped as `gen-config`
//! makes them (2–9 turns, a few KB to tens of KB) are archived by the
//! code `ccd archive` and the daemon's archive task run
//! (`ccd_claude::archive::archive`: zstd, a manifest), once, into
//! `--work` (kept between runs). Then, `--runs` times each, two phrases:
//! one said in one conversation (`task K: step 3 of the plan`) and one
//! said in every conversation (`step 0 of the plan`), top 20:
//!
//! - `scan`: `ccd_search::archived::search`, every archive decompressed
//!   and read (what a search paid before the index covered archives, and
//!   still pays without an index);
//! - `index`: the same search through an index that covers the archives
//!   (`Index::update_archives` then `archived::search_indexed`: what a
//!   search pays, the update's one `stat` included), and the same after
//!   the archive folder changed (listed again, each archive's identity
//!   checked, none read).
//!
//! Both answers are checked equal (sessions, snippets, scores) before a
//! figure is printed. Also printed: the first indexing of the archives.

use ccd_search::archived::Searched;
use ccd_search::index::{Index, Limits};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// How many archived conversations, one set each.
    #[arg(long, value_delimiter = ',', default_value = "300,1000")]
    pub archives: Vec<u64>,
    /// Where the generated archives are kept between runs.
    #[arg(long, default_value = "target/bench-data")]
    pub work: PathBuf,
    #[arg(long, default_value_t = 21)]
    pub runs: usize,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    for &n in &a.archives {
        let dir = kept(
            &std::path::absolute(a.work.join(format!("search-archived-{n}")))?,
            n,
        )?;
        let root = dir.join("archive");
        let now = time::OffsetDateTime::now_utc();
        // The first indexing, then the listing left as a daemon's is: no
        // longer recent (the folder's mtime a minute back).
        let t0 = Instant::now();
        let mut ix = Index::new(Limits::default());
        let st = ix.update_archives(&root);
        let build = t0.elapsed().as_secs_f64();
        anyhow::ensure!(
            st.files_read as u64 == n,
            "indexed {} archives",
            st.files_read
        );
        let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::open(&root)?.set_modified(minute_ago)?;
        ix.update_archives(&root);
        println!(
            "{n} archives ({:.1} MB decompressed): first indexing {:.0} ms, {} posting entries",
            st.bytes as f64 / 1e6,
            build * 1e3,
            ix.postings_len()
        );
        for (name, phrase) in [
            (
                "one conversation",
                format!("\"task {}: step 3 of the plan\"", n / 2 + 7),
            ),
            ("every conversation", "\"step 0 of the plan\"".to_string()),
        ] {
            let req = request(&phrase)?;
            let (mut scan_ms, mut index_ms, mut relist_ms) = (Vec::new(), Vec::new(), Vec::new());
            let mut read = (0, 0);
            for _ in 0..a.runs.max(1) {
                let t0 = Instant::now();
                let want = ccd_search::archived::search(&root, &req, now);
                scan_ms.push(t0.elapsed().as_secs_f64() * 1e3);
                anyhow::ensure!(!want.hits.is_empty(), "{phrase}: no archived hit");
                // What a search pays with the index: the update (one stat
                // of the folder) and the search.
                let t0 = Instant::now();
                let st = ix.update_archives(&root);
                let got = ccd_search::archived::search_indexed(&ix, &root, &req, now);
                index_ms.push(t0.elapsed().as_secs_f64() * 1e3);
                anyhow::ensure!(st.listings == 0, "the archive folder was listed again");
                let got = got.ok_or_else(|| anyhow::anyhow!("not answered by the index"))?;
                anyhow::ensure!(
                    same(&got, &want),
                    "{phrase}: the index's hits differ from the scan's"
                );
                // After an archive came or went: the folder listed again.
                std::fs::File::open(&root)?.set_modified(
                    std::time::SystemTime::now() - std::time::Duration::from_secs(30),
                )?;
                let t0 = Instant::now();
                let st = ix.update_archives(&root);
                let got = ccd_search::archived::search_indexed(&ix, &root, &req, now);
                relist_ms.push(t0.elapsed().as_secs_f64() * 1e3);
                anyhow::ensure!(
                    st.listings == 1 && st.files_read == 0,
                    "relisting read archives"
                );
                anyhow::ensure!(
                    got.is_some_and(|g| same(&g, &want)),
                    "{phrase}: relisted hits differ"
                );
                std::fs::File::open(&root)?.set_modified(minute_ago)?;
                ix.update_archives(&root);
                read = (
                    want.stats.files,
                    ccd_search::archived::search_indexed(&ix, &root, &req, now)
                        .map_or(0, |g| g.stats.files),
                );
            }
            let q = |v: &mut Vec<f64>, f| {
                v.sort_by(f64::total_cmp);
                crate::stats::nearest_rank(v, f)
            };
            println!(
                "{n} archives, {name}: scan (every archive decompressed) median {:.2} ms (p90 {:.2}; {} read); index median {:.3} ms (p90 {:.3}; {} read); index after a listing change {:.2} ms",
                q(&mut scan_ms, 0.5),
                q(&mut scan_ms, 0.9),
                read.0,
                q(&mut index_ms, 0.5),
                q(&mut index_ms, 0.9),
                read.1,
                q(&mut relist_ms, 0.5),
            );
        }
    }
    Ok(())
}

/// The same rows (sessions, snippets, scores to the bit) and count.
fn same(a: &Searched, b: &Searched) -> bool {
    a.searched == b.searched
        && serde_json::to_value(&a.hits).ok() == serde_json::to_value(&b.hits).ok()
}

/// A search for `phrase`, top 20, every conversation.
fn request(phrase: &str) -> anyhow::Result<ccd_search::service::Request> {
    Ok(ccd_search::service::Request::parse(
        &ccd_protocol::methods::session::SearchParams {
            query: phrase.to_string(),
            regex: false,
            cwd: None,
            since: None,
            scope: ccd_protocol::methods::session::SearchScope::All,
            roles: vec![],
            limit: 20,
        },
    )?)
}

/// `dir` with `n` archived conversations in `dir/archive`, made once (a
/// `.complete` marker says a generation finished).
fn kept(dir: &Path, n: u64) -> anyhow::Result<PathBuf> {
    if dir.join(".complete").exists() {
        return Ok(dir.to_path_buf());
    }
    let _ = std::fs::remove_dir_all(dir);
    let config = dir.join("config");
    let root = dir.join("archive");
    let cfg = ccd_claude::ClaudeConfigDir::new(&config);
    for i in 0..n {
        let sid = ccd_testkit::gen::sid(i);
        let cwd = format!("/home/dev/work/project-{}", i % 250);
        let mut w = ccd_testkit::gen::TranscriptWriter::create(&config, &sid, &cwd);
        // gen-config's shape: 2–9 turns of a few hundred bytes.
        for t in 0..2 + i % 8 {
            w.turn(
                &format!("task {i}: step {t} of the plan"),
                2_000 + t * 1_500,
                300 + (i % 5) as usize * 200,
            );
        }
        drop(w);
        ccd_claude::archive::archive(&cfg, &root, &sid, &|| None, false, &|_| {})?;
    }
    std::fs::write(dir.join(".complete"), b"")?;
    eprintln!("archived {n} generated conversations in {}", root.display());
    Ok(dir.to_path_buf())
}
