//! Top-k with early stop (issue 55 §4): the index verifies candidate
//! sessions best score bound first and stops once no unread session can
//! enter the top `limit`. For many random queries over a generated corpus
//! (titles, prompts, replies, tool calls, summaries, untimed records, ages
//! over a year), with limits 1, 3 and 20 and random role / `--since`
//! filters, its hits equal the exhaustive scan's top `limit` exactly (same
//! sessions, order, scores to the bit, snippets); and a phrase in every
//! transcript is answered reading far fewer files than there are.

use ccd_search::index::{Freshness, Index, IndexSearchStats, Limits};
use ccd_search::{scan, Filters, Hit, Query, Role, ScanStats, Source};
use ccd_testkit::gen::{sid, TranscriptWriter};
use serde_json::json;
use std::path::Path;

mod common;
use common::{now, record, Rng, WORDS};

fn corpus(config: &Path, sessions: u64, seed: u64) -> Vec<Source> {
    let mut r = Rng(seed);
    for n in 0..sessions {
        let s = sid(n);
        let mut w = TranscriptWriter::create(config, &s, &format!("/home/dev/p{}", n % 5));
        for _ in 0..1 + r.below(9) {
            w.line(record(&mut r, &s, None));
        }
    }
    sources(config)
}

fn sources(config: &Path) -> Vec<Source> {
    ccd_claude::transcript::list_all(&config.join("projects"))
        .into_iter()
        .map(|f| Source {
            session_id: f.session_id,
            path: f.path,
        })
        .collect()
}

fn key(h: &Hit) -> String {
    format!(
        "{} {:?} {:?} {} {:?} {} {}",
        h.session_id,
        h.role,
        h.timestamp,
        h.offset,
        h.snippet,
        h.matches,
        h.score.to_bits()
    )
}

fn both(
    index: &Index,
    srcs: &[Source],
    q: &Query,
    f: &Filters,
    limit: usize,
) -> (Vec<String>, Vec<String>, ScanStats, IndexSearchStats) {
    let (mut all, _) = scan(srcs, q, f, now(), usize::MAX);
    all.truncate(limit);
    let (got, stats, istats) = index.search_with(srcs, q, f, now(), limit, Freshness::TrustedAll);
    (
        all.iter().map(key).collect(),
        got.iter().map(key).collect(),
        stats,
        istats,
    )
}

#[test]
fn early_stop_top_k_equals_the_exhaustive_ranking() {
    let d = tempfile::tempdir().unwrap();
    let srcs = corpus(d.path(), 160, 0x5eed_1234_abcd_0001);
    let mut index = Index::new(Limits::default());
    index.update(&srcs);
    let mut r = Rng(0xfeed_0000_0000_0055);
    let mut stopped_early = 0;
    for round in 0..150 {
        let q = match r.below(3) {
            0 => r.pick(WORDS).to_string(),
            1 => format!("{} {}", r.pick(WORDS), r.pick(WORDS)),
            _ => format!("\"{} {}\"", r.pick(WORDS), r.pick(WORDS)),
        };
        let query = Query::terms(&q).unwrap();
        let mut filters = Filters::default();
        if r.below(4) == 0 {
            filters.roles = vec![[Role::User, Role::Assistant, Role::Title][r.below(3) as usize]];
        }
        if r.below(5) == 0 {
            filters.since = Some(now() - time::Duration::days(r.below(200) as i64));
        }
        for limit in [1, 3, 20] {
            let (want, got, _, st) = both(&index, &srcs, &query, &filters, limit);
            assert_eq!(got, want, "round {round}: {q} limit {limit} {filters:?}");
            if st.unverified > 0 {
                stopped_early += 1;
            }
        }
    }
    // The early stop was exercised, not only the exhaustive path.
    assert!(stopped_early > 50, "stopped early {stopped_early} times");
}

#[test]
fn a_phrase_in_every_transcript_reads_few_files() {
    let d = tempfile::tempdir().unwrap();
    let sessions = 300u64;
    let mut r = Rng(7);
    for n in 0..sessions {
        let s = sid(n);
        let mut w = TranscriptWriter::create(d.path(), &s, "/home/dev/p");
        for t in 0..3 {
            w.turn(&format!("task {n}: step {t} of the plan"), 2_000, 50);
        }
        // A few sessions name it in their title, a few are old.
        if n % 37 == 5 {
            w.line(json!({"type":"custom-title","customTitle":"step 0 of the plan","sessionId":s}));
        }
        let _ = r.next();
    }
    let srcs = sources(d.path());
    assert_eq!(srcs.len(), sessions as usize);
    let mut index = Index::new(Limits::default());
    index.update(&srcs);
    let query = Query::terms("\"step 0 of the plan\"").unwrap();
    for limit in [1, 3, 21] {
        let (want, got, stats, st) = both(&index, &srcs, &query, &Filters::default(), limit);
        assert_eq!(got, want, "limit {limit}");
        assert!(
            stats.files < sessions as usize / 4,
            "limit {limit}: {} of {sessions} files read",
            stats.files
        );
        assert_eq!(st.unverified + stats.files, sessions as usize);
    }
}
