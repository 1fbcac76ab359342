//! Memory bounds counted exactly with one counting allocator, not with
//! RSS, so they do not depend on the machine (the allocator is process
//! wide: the tests run one at a time).
//!
//! - The summary read's bound (docs/architecture.md, "The session
//!   index"): whatever a transcript's lines, one read holds at most one
//!   chunk ([`CHUNK`]) and one line ([`MAX_LINE`]) above what it returns;
//!   a longer line is stepped over. (A listing that read an 8 MB last
//!   record held a 16 MiB window and the parse of that record, per
//!   concurrent request.)
//! - The trim's bound (docs/architecture.md, "Trimming a transcript"): the
//!   heap a trim holds grows by at most [`BYTES_A_RECORD`] a record with a
//!   uuid, above its fixed parts (the uuid-matching budget, buffers, the
//!   longest line).

use ccd_claude::transcript::read_summary;
use ccd_claude::transcript::summary::{CHUNK, MAX_LINE, MAX_SCAN};
use ccd_claude::trim::{trim, TrimOptions};
use ccd_testkit::gen::TranscriptWriter;
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// The stated growth a record with a uuid (its parent, 4 bytes; two flag
/// bytes; the growth of the vector of flags).
const BYTES_A_RECORD: usize = 8;
/// The stated fixed part beside the matching budget: readers, writers,
/// labels, the line buffer of these short lines.
const FIXED: usize = 2 << 20;

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// One test at a time (the counters are process-wide: another test's
/// setup would be counted).
static ONE: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

#[allow(unsafe_code)] // reason: a global allocator is an unsafe trait's implementation
                      // SAFETY: every call forwards to the system allocator with the caller's
                      // arguments, so its contract is the system allocator's; the counting
                      // touches only two atomics.
unsafe impl GlobalAlloc for Counting {
    /// # Safety
    ///
    /// `GlobalAlloc::alloc`'s contract (`l` has a non-zero size).
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller keeps `alloc`'s contract.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = NOW.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    /// # Safety
    ///
    /// `GlobalAlloc::dealloc`'s contract (`p` came from this allocator
    /// with the layout `l`).
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller keeps `dealloc`'s contract; `p` came from
        // `System` through this allocator.
        unsafe { System.dealloc(p, l) };
        NOW.fetch_sub(l.size(), Relaxed);
    }
    /// # Safety
    ///
    /// `GlobalAlloc::realloc`'s contract (`p` came from this allocator
    /// with the layout `l`; `new` is non-zero and fits an `isize`).
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: the caller keeps `realloc`'s contract; `p` came from
        // `System` through this allocator.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = NOW.fetch_add(new - l.size(), Relaxed) + new - l.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                NOW.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The bound a read may hold above what it started with: a chunk, a
/// line, and the parse of a line (small: records borrow from the line),
/// with 256 KiB for the rest.
const BOUND: usize = CHUNK + MAX_LINE + MAX_LINE / 2 + (256 << 10);

/// The summary of `path` and the most heap its read held above the start.
fn measured(path: &std::path::Path) -> (ccd_claude::transcript::TranscriptSummary, usize) {
    let base = NOW.load(Relaxed);
    PEAK.store(base, Relaxed);
    let s = read_summary(path).unwrap();
    let held = PEAK.load(Relaxed) - base;
    eprintln!(
        "{}: held {held} bytes, read {}",
        path.display(),
        s.bytes_read
    );
    (s, held)
}

/// A tool result of `bytes` as one user record.
fn huge_result(w: &mut TranscriptWriter, bytes: usize) {
    w.line(json!({"type":"user","message":{"role":"user","content":[
        {"type":"tool_result","tool_use_id":"t1","content":"r".repeat(bytes)}]},
        "timestamp":"2031-01-01T00:00:00Z","cwd":"/w","sessionId":"s"}));
}

#[test]
fn a_huge_last_record_is_stepped_over_within_the_bound() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "s", "/w");
    w.turn("the first prompt", 77, 100);
    huge_result(&mut w, 8 << 20);
    let (s, held) = measured(&w.path);
    assert!(
        held <= BOUND,
        "a summary read held {held} bytes (bound {BOUND})"
    );
    // The assistant record before it still gives the model and context.
    assert_eq!(s.context_tokens, Some(77 + 1100));
    assert_eq!(s.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(s.title.as_deref(), Some("the first prompt"));
    // Its own timestamp (2031) is lost: the file's mtime stands for it.
    let mtime = std::fs::metadata(&w.path).unwrap().modified().unwrap();
    assert_eq!(
        s.last_activity.map(|t| t.unix_timestamp_nanos()),
        Some(time::OffsetDateTime::from(mtime).unix_timestamp_nanos())
    );
}

#[test]
fn a_huge_first_record_and_lines_just_under_the_bound() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "s", "/w");
    huge_result(&mut w, 3 << 20);
    // A reply just under the bound is still read, across chunks.
    w.turn("a prompt after it", 5, MAX_LINE - 2048);
    w.turn("the last prompt", 6, MAX_LINE - 2048);
    let (s, held) = measured(&w.path);
    assert!(held <= BOUND, "held {held} bytes (bound {BOUND})");
    assert_eq!(s.title.as_deref(), Some("a prompt after it"));
    assert_eq!(s.context_tokens, Some(6 + 1100));
    assert!(s.last_activity.is_some_and(|t| t.year() < 2031));
}

#[test]
fn a_walk_stops_at_its_scan_bound() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let mut w = TranscriptWriter::create(tmp.path(), "s", "/w");
    w.turn("the first prompt", 9, 10);
    // Past the scan bound of huge results: the tail gives up on them.
    for _ in 0..(MAX_SCAN as usize / (4 << 20) + 2) {
        huge_result(&mut w, 4 << 20);
    }
    let (s, held) = measured(&w.path);
    assert!(held <= BOUND, "held {held} bytes (bound {BOUND})");
    assert!(
        s.bytes_read <= 2 * MAX_SCAN + 2 * CHUNK as u64,
        "read {} bytes",
        s.bytes_read
    );
    assert_eq!(s.context_tokens, None, "out of reach");
    assert_eq!(s.title.as_deref(), Some("the first prompt"));
}

/// 300,000 small records with uuids in one chain (the shape that costs a
/// trim the most index per byte), and a few a trim drops, so it writes.
#[test]
fn a_trims_heap_grows_by_the_stated_bytes_a_record() {
    let _alone = alone();
    const RECORDS: usize = 300_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let u = |n: usize| format!("00000000-0000-4000-8000-{n:012}");
    writeln!(
        w,
        r#"{{"type":"user","uuid":"{}","parentUuid":null,"message":{{"content":"hi"}}}}"#,
        u(0)
    )
    .unwrap();
    for i in 1..RECORDS {
        if i % 1000 == 0 {
            writeln!(w, r#"{{"type":"api-request","id":{i}}}"#).unwrap();
        }
        writeln!(
            w,
            r#"{{"type":"progress","uuid":"{}","parentUuid":"{}"}}"#,
            u(i),
            u(i - 1)
        )
        .unwrap();
    }
    writeln!(
        w,
        r#"{{"type":"assistant","uuid":"{}","parentUuid":"{}","message":{{"content":[]}}}}"#,
        u(RECORDS),
        u(RECORDS - 1)
    )
    .unwrap();
    drop(w);
    let opts = TrimOptions {
        resolve_budget: 1 << 20,
        ..TrimOptions::default()
    };
    let none = || None;
    let base = NOW.load(Relaxed);
    PEAK.store(base, Relaxed);
    let r = trim(&path, &dir.path().join("backups"), &opts, &none, None).unwrap();
    let peak = PEAK.load(Relaxed) - base;
    assert!(!r.unchanged);
    let bound = BYTES_A_RECORD * (RECORDS + 1) + (1 << 20) + FIXED;
    assert!(
        peak <= bound,
        "a trim of {RECORDS} records held {peak} bytes of heap at its peak; the stated bound is {bound}"
    );
}
