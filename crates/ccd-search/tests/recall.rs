//! Recall (issue 55, item 5): phrases planted in generated transcripts
//! (CJK, emoji, paths, JSON escapes, a half-written last line, a huge
//! single record) and the real CLI's recorded transcripts. Every file
//! `rg -F -l` finds a planted message phrase in is found by the scan (the
//! same files, no more, no fewer); a phrase only in a JSON key, an id,
//! base64 image data or a tool's output is found by `rg` and never by the
//! scan; escaped text matches its decoded form.
//!
//! Every query also runs through the search index ([`Index::search`]),
//! before and after its update and through a save and a load: the same
//! hits as the scan, to the score and snippet.
//!
//! Needs ripgrep (`rg`): skipped with a note when it is missing, failed
//! under `CI=true` (.ci/run installs it).

use ccd_search::incremental::MAX_RECORD_BYTES;
use ccd_search::index::{Candidates, Index, Limits};
use ccd_search::{scan, Filters, Hit, Query, Role, Source};
use ccd_testkit::gen::{sid, TranscriptWriter};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use time::OffsetDateTime;

fn rg_available() -> bool {
    let ok = Command::new("rg").arg("--version").output().is_ok();
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "ripgrep (rg) is missing: .ci/run installs Debian's package `ripgrep`"
        );
        eprintln!("skipped: ripgrep (rg) is not installed");
    }
    ok
}

/// The files `rg -F -l phrase` finds under `dir`.
fn rg_files(dir: &Path, phrase: &str) -> BTreeSet<PathBuf> {
    let out = Command::new("rg")
        .args(["-F", "-l", "--no-messages", "--", phrase])
        .arg(dir)
        .output()
        .expect("rg runs");
    String::from_utf8(out.stdout)
        .expect("utf-8 paths")
        .lines()
        .map(PathBuf::from)
        .collect()
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

/// The index the recall test keeps up to date between its queries.
static INDEX: Mutex<Option<Index>> = Mutex::new(None);

/// Everything a hit says (the score to the bit).
fn key(h: &Hit) -> String {
    format!(
        "{} {} {:?} {:?} {:?} {} {:?} {} {}",
        h.session_id,
        h.path.display(),
        h.role,
        h.timestamp,
        h.cwd,
        h.offset,
        h.snippet,
        h.matches,
        h.score.to_bits()
    )
}

/// The files the scan finds; the index (before and after its update, and
/// once through a save and a load) finds the very same hits.
fn found(srcs: &[Source], q: &Query) -> BTreeSet<PathBuf> {
    let now = OffsetDateTime::now_utc();
    let (hits, _) = scan(srcs, q, &Filters::default(), now, usize::MAX);
    let want: Vec<String> = hits.iter().map(key).collect();
    let mut guard = INDEX.lock().unwrap();
    let fresh = guard.is_none();
    let index = guard.get_or_insert_with(|| Index::new(Limits::default()));
    let (before, _, _) = index.search(srcs, q, &Filters::default(), now, usize::MAX);
    assert_eq!(
        before.iter().map(key).collect::<Vec<_>>(),
        want,
        "{q:?} (index before its update)"
    );
    index.update(srcs);
    if fresh {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("search.idx");
        index.save(&p).unwrap();
        *index = Index::load(&p, Limits::default()).unwrap();
    }
    let (after, _, st) = index.search(srcs, q, &Filters::default(), now, usize::MAX);
    assert_eq!(
        after.iter().map(key).collect::<Vec<_>>(),
        want,
        "{q:?} (index)"
    );
    if matches!(index.candidates(q), Candidates::Records(_)) {
        assert_eq!(st.scanned, 0, "{q:?}: answered by the index");
    }
    hits.into_iter().map(|h| h.path).collect()
}

fn literal(p: &str) -> Query {
    Query::regex(&format!("(?-i){}", regex::escape(p))).expect("literal")
}

/// Phrases planted where they are searchable, each in one record.
const POSITIVE: &[&str] = &[
    "認証バグを直した",
    "🦀🔥deploy-crab",
    "/srv/app/src/auth/token_refresh.rs",
    "cargo test -p billing --lib refund_rounding",
    "assistantonlyphrase",
    "titleonlyphrase",
    "summaryonlyphrase",
    "compactsummaryphrase",
    "bigrecordtailphrase",
];

/// Phrases planted only outside message text.
const NEGATIVE: &[&str] = &[
    "keyonlyphrase",
    "idonlyphrase",
    "QmFzZTY0b25seXBocmFzZQ",
    "toolresultonlyphrase",
    "metaonlyphrase",
    "thinkingonlyphrase",
];

fn plant(config: &Path) -> (PathBuf, PathBuf) {
    // Background: generated sessions like ccd-bench gen-config's.
    for n in 0..40u64 {
        let mut w = TranscriptWriter::create(config, &sid(n), &format!("/home/dev/p{}", n % 4));
        for t in 0..3 {
            w.turn(&format!("task {n}: step {t} of the plan"), 2_000, 50);
        }
    }
    let mut w = TranscriptWriter::create(config, &sid(1000), "/home/dev/planted");
    w.turn("warm up", 1000, 10);
    let at = "2026-11-20T10:00:00.000Z";
    w.line(json!({"type":"user","timestamp":at,"uuid":"idonlyphrase-1","message":{"role":"user","content":"昨日は認証バグを直した"},"keyonlyphrase":true}));
    w.line(json!({"type":"user","timestamp":at,"message":{"role":"user","content":[{"type":"text","text":"ship it 🦀🔥deploy-crab now"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoQmFzZTY0b25seXBocmFzZQ=="}}]}}));
    w.line(json!({"type":"assistant","timestamp":at,"message":{"role":"assistant","content":[
        {"type":"thinking","thinking":"thinkingonlyphrase","signature":"c2lnbmF0dXJl"},
        {"type":"text","text":"Here is assistantonlyphrase."},
        {"type":"tool_use","id":"toolu_idonlyphrase","name":"Read","input":{"file_path":"/srv/app/src/auth/token_refresh.rs"}},
        {"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"cargo test -p billing --lib refund_rounding","keyonlyphrase2":1}}]}}));
    w.line(json!({"type":"user","timestamp":at,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"toolresultonlyphrase"}]}}));
    w.line(json!({"type":"user","isMeta":true,"timestamp":at,"message":{"role":"user","content":"metaonlyphrase"}}));
    w.line(json!({"type":"ai-title","aiTitle":"titleonlyphrase"}));
    w.line(json!({"type":"summary","summary":"summaryonlyphrase","leafUuid":"x"}));
    w.line(json!({"type":"user","isCompactSummary":true,"timestamp":at,"message":{"role":"user","content":"compactsummaryphrase"}}));
    // JSON escapes as the file spells them: \" \n \u00e9 \\.
    w.raw(
        br#"{"type":"user","timestamp":"2026-11-20T10:00:00.000Z","message":{"role":"user","content":"say \"escquoted\" word\nline two caf\u00e9 C:\\escpath\\x"}}"#,
    );
    w.raw(b"\n");
    // A huge single record (5 MB) under the bound: searched whole.
    let big = format!("{}bigrecordtailphrase", "lorem ipsum ".repeat(420_000));
    w.line(json!({"type":"assistant","timestamp":at,"message":{"role":"assistant","content":[{"type":"text","text":big}]}}));
    // A half-written last line.
    w.raw(br#"{"type":"user","timestamp":"2026-11-20T10:00:00.000Z","message":{"role":"user","content":"halfwrittenphrase"#);
    let planted = w.path.clone();
    // A record over the bound in another session: skipped, counted.
    let mut o = TranscriptWriter::create(config, &sid(1001), "/home/dev/oversized");
    o.turn("before the oversized record", 1000, 10);
    let huge = format!("{}oversizedphrase", "z".repeat(MAX_RECORD_BYTES));
    o.line(json!({"type":"user","message":{"role":"user","content":huge}}));
    o.turn("after the oversized record", 1000, 10);
    (planted, o.path.clone())
}

#[test]
fn scan_finds_what_rg_finds_in_messages_and_nothing_else() {
    if !rg_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("claude");
    let (planted, oversized) = plant(&config);
    // The real CLI's transcripts, as sessions of their own.
    let rec = ccd_testkit::fixtures::claude_cli_dir();
    let real_dir = config.join("projects").join("-recorded");
    std::fs::create_dir_all(&real_dir).unwrap();
    let mut real = Vec::new();
    for e in std::fs::read_dir(&rec).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("transcript-") && name.ends_with(".jsonl") {
            let to = real_dir.join(format!("{}.jsonl", sid(5000 + real.len() as u64)));
            std::fs::copy(e.path(), &to).unwrap();
            real.push(to);
        }
    }
    assert!(real.len() >= 5, "recorded transcripts: {}", real.len());
    let srcs = sources(&config);
    let projects = config.join("projects");

    for p in POSITIVE {
        let by_rg = rg_files(&projects, p);
        assert!(!by_rg.is_empty(), "{p}: planted");
        assert_eq!(found(&srcs, &literal(p)), by_rg, "{p}");
        // And as the words a person types (case folded).
        assert_eq!(
            found(&srcs, &Query::terms(&p.to_uppercase()).unwrap()),
            by_rg,
            "{p} (terms)"
        );
    }
    for n in [0, 7, 39] {
        let p = format!("task {n}: step 2 of the plan");
        let by_rg = rg_files(&projects, &p);
        assert_eq!(by_rg.len(), 1);
        assert_eq!(found(&srcs, &literal(&p)), by_rg, "{p}");
    }
    for p in NEGATIVE {
        assert!(!rg_files(&projects, p).is_empty(), "{p}: planted");
        assert!(
            found(&srcs, &literal(p)).is_empty(),
            "{p} must not be found"
        );
    }
    // Escapes match the decoded text.
    let only_planted: BTreeSet<PathBuf> = [planted.clone()].into();
    for q in [
        Query::regex(r#"say "escquoted" word\nline two"#).unwrap(),
        Query::terms("café").unwrap(),
        Query::terms(r"C:\escpath\x").unwrap(),
    ] {
        assert_eq!(found(&srcs, &q), only_planted, "{q:?}");
    }
    assert!(found(&srcs, &literal(r"\u00e9")).is_empty());
    assert!(found(&srcs, &literal(r#"\"escquoted\""#)).is_empty());

    // The half-written last line: not found until it is complete.
    assert_eq!(rg_files(&projects, "halfwrittenphrase").len(), 1);
    let half = Query::terms("halfwrittenphrase").unwrap();
    assert!(found(&srcs, &half).is_empty());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&planted)
        .unwrap();
    std::io::Write::write_all(&mut f, b"\"}}\n").unwrap();
    assert_eq!(found(&srcs, &half), only_planted);

    // Over the bound: skipped and counted, the rest of the file searched.
    let (hits, stats) = scan(
        &srcs,
        &Query::terms("oversizedphrase").unwrap(),
        &Filters::default(),
        OffsetDateTime::now_utc(),
        10,
    );
    assert!(hits.is_empty());
    assert_eq!(stats.oversized, 1);
    assert_eq!(
        found(&srcs, &Query::terms("after the oversized record").unwrap()),
        [oversized].into()
    );

    // Every prompt and reply of the recorded transcripts is found, by a
    // reading of the records independent of the extractor.
    let mut checked = 0;
    for path in &real {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let kind = v["type"].as_str().unwrap_or("");
            if kind != "user" && kind != "assistant" || v["isMeta"] == true {
                continue;
            }
            let content = &v["message"]["content"];
            let mut texts = Vec::new();
            if let Some(s) = content.as_str() {
                texts.push(s.to_string());
            }
            for b in content.as_array().into_iter().flatten() {
                if b["type"] == "text" {
                    texts.extend(b["text"].as_str().map(String::from));
                }
            }
            for t in texts {
                let piece: String = t.chars().take(40).collect();
                if piece.trim().is_empty() {
                    continue;
                }
                let hits = found(&srcs, &literal(&piece));
                assert!(hits.contains(path), "{piece:?} in {}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "recorded messages checked: {checked}");
}

#[test]
fn roles_of_planted_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("claude");
    plant(&config);
    let srcs = sources(&config);
    let role_of = |p: &str| {
        let (hits, _) = scan(
            &srcs,
            &Query::terms(p).unwrap(),
            &Filters::default(),
            OffsetDateTime::now_utc(),
            10,
        );
        assert_eq!(hits.len(), 1, "{p}");
        hits[0].role
    };
    assert_eq!(role_of("認証バグ"), Role::User);
    assert_eq!(role_of("assistantonlyphrase"), Role::Assistant);
    assert_eq!(role_of("token_refresh.rs"), Role::Tool);
    assert_eq!(role_of("titleonlyphrase"), Role::Title);
    assert_eq!(role_of("summaryonlyphrase"), Role::Summary);
    assert_eq!(role_of("compactsummaryphrase"), Role::Summary);
}
