//! A client that never reads during a flood does not hold back the session
//! or another client, costs bounded memory, and is resynced later.
//!
//! Alone in its test binary so the RSS figures are this test's.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ccd_holder::{AttachMode, HolderClient, KillSignal, StreamEvent};
use common::{start, wait_screen, Env};

const T: Duration = Duration::from_secs(30);
/// Random bytes before base64 (≈ 11 MB of terminal output; debug builds
/// parse it at a few MB/s).
const FLOOD: usize = 8_000_000;
/// Per-client queue.
const QUEUE: usize = 256 << 10;
/// Growth of this process's RSS allowed during the flood.
const RSS_BOUND_KB: u64 = 16 * 1024;

/// This process's resident set in kB: `/proc/self/status` on Linux.
#[cfg(not(target_os = "linux"))]
fn rss_kb() -> u64 {
    ccd_testkit::procs::rss_kb(std::process::id())
}

#[cfg(target_os = "linux")]
fn rss_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn stuck_client_is_dropped_and_resynced_while_others_keep_up() {
    let env = Env::new();
    let mut cfg = env.sh(&format!(
        "echo armed; read go; head -c {FLOOD} /dev/urandom | base64; echo __END__; read x"
    ));
    cfg.client_queue_bytes = QUEUE;
    let (serve, mut c) = start(cfg);
    wait_screen(&mut c, T, "armed");

    // The stuck client attaches and then reads nothing at all.
    let mut stuck = HolderClient::connect(&env.socket()).unwrap();
    let stuck_id = stuck.attach(AttachMode::Observe).unwrap().client_id;

    let mut fast = HolderClient::connect(&env.socket()).unwrap();
    let fast_id = fast.attach(AttachMode::Interactive).unwrap().client_id;
    let mut expected = match fast.next_event(T).unwrap() {
        StreamEvent::Resync(r) => r.seq,
        other => panic!("{other:?}"),
    };
    let start_seq = expected;

    // Sample RSS during the flood.
    let baseline = rss_kb();
    let peak = Arc::new(AtomicU64::new(baseline));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };

    let started = Instant::now();
    fast.input(b"\r").unwrap();
    let mut received = 0u64;
    let mut fast_resyncs = 0u32;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        match fast.next_event(T).unwrap() {
            StreamEvent::Output(o) => {
                assert_eq!(o.seq, expected, "fast client: output out of order");
                expected = o.end_seq();
                received += o.data.len() as u64;
                tail.extend_from_slice(&o.data);
                if tail.len() > 64 {
                    tail.drain(..tail.len() - 64);
                }
                if tail.windows(7).any(|w| w == b"__END__") {
                    break;
                }
            }
            StreamEvent::Resync(r) => {
                fast_resyncs += 1;
                expected = r.seq;
                if String::from_utf8_lossy(&r.data).contains("__END__") {
                    break;
                }
            }
            other => panic!("{other:?}"),
        }
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let growth = peak.load(Ordering::Relaxed).saturating_sub(baseline);
    eprintln!(
        "flood: {received} bytes to the fast client in {elapsed:?} ({:.1} MB/s), \
         fast resyncs {fast_resyncs}, RSS baseline {baseline} kB, peak growth {growth} kB",
        received as f64 / elapsed.as_secs_f64() / 1e6
    );
    let info = c.info().unwrap();
    // Every byte of the stream reached the fast client in order, or was
    // accounted as dropped and replaced by a resync (a debug-build client
    // decoding JSON can fall behind the PTY).
    let f = info.clients.iter().find(|s| s.id == fast_id).unwrap();
    eprintln!("fast client: {f:?}");
    assert_eq!(u64::from(fast_resyncs), f.resyncs);
    assert_eq!(received + f.bytes_dropped, expected - start_seq);
    assert!(received > 0);

    let s = info.clients.iter().find(|s| s.id == stuck_id).unwrap();
    eprintln!("stuck client: {s:?}");
    assert!(s.bytes_dropped > 0, "the stuck client's queue was dropped");
    assert!(s.queued <= QUEUE, "its queue stayed bounded");
    assert!(
        growth < RSS_BOUND_KB,
        "RSS grew by {growth} kB during the flood (bound {RSS_BOUND_KB} kB)"
    );

    // The stuck client now reads: after whatever was already in its socket,
    // it gets a full redraw (the model where its parse has reached) and then
    // the output from there, which together show the end of the flood.
    let stream_end = c.info().unwrap().output_bytes;
    let mut screen: Option<(ccd_screen::Screen, u64)> = None;
    let end = Instant::now() + T;
    while screen.as_ref().is_none_or(|(_, pos)| *pos < stream_end) {
        assert!(Instant::now() < end, "the stuck client never caught up");
        match stuck.next_event(T).unwrap() {
            StreamEvent::Resync(r) => {
                if r.reason == ccd_protocol::stream::ResyncReason::Overflow {
                    let mut s = ccd_screen::Screen::new(r.size.rows, r.size.cols);
                    s.process(&r.data);
                    screen = Some((s, r.seq));
                }
            }
            StreamEvent::Output(o) => {
                if let Some((s, pos)) = screen.as_mut() {
                    assert_eq!(o.seq, *pos, "a gap after the redraw");
                    s.process(&o.data);
                    *pos += o.data.len() as u64;
                }
            }
            other => panic!("{other:?}"),
        }
    }
    let (s, _) = screen.expect("the stuck client was resynced");
    assert!(s.contents().contains("__END__"), "{}", s.contents());
    let info = c.info().unwrap();
    let s = info.clients.iter().find(|s| s.id == stuck_id).unwrap();
    assert!(s.resyncs >= 1);

    c.kill(KillSignal::Kill, None).unwrap();
    assert!(c.collect(T).unwrap().collected);
    serve.join().unwrap().unwrap();
}
