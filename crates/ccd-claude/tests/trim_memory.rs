//! The trim's memory bound (docs/architecture.md, "Trimming a
//! transcript"): the heap a trim holds grows by at most
//! [`BYTES_A_RECORD`] a record with a uuid, above its fixed parts (the
//! uuid-matching budget, buffers, the longest line). Counted exactly with
//! a counting allocator, not with RSS, so it does not depend on the
//! machine.

use ccd_claude::trim::{trim, TrimOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The stated growth a record with a uuid (its parent, 4 bytes; two flag
/// bytes; the growth of the vector of flags).
const BYTES_A_RECORD: usize = 8;
/// The stated fixed part beside the matching budget: readers, writers,
/// labels, the line buffer of these short lines.
const FIXED: usize = 2 << 20;

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

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

/// 300,000 small records with uuids in one chain (the shape that costs a
/// trim the most index per byte), and a few a trim drops, so it writes.
#[test]
fn a_trims_heap_grows_by_the_stated_bytes_a_record() {
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
