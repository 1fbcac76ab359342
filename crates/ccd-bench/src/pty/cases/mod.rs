//! The measurements, per contender: [`flood`] throughput, [`echo`]
//! latency, [`attach`] time to the first frame, and the idle sessions of
//! [`held`] (memory, idle cost); the helpers they share are here.

mod attach;
mod echo;
mod flood;
mod held;

pub use attach::attach_times;
pub use echo::echoes;
pub use flood::floods;
use held::status_kb;
pub use held::{idle, memory, Held};

use super::api::{Api, Note};
use super::ccd::{ppid, Ccd};
use super::report::{Attach, Echo, Flood, Memory, Paired};
use super::stream::Kind;
use super::term::{
    echo_loop, echo_pty, flood_through, touch, until_screen, wait_file, Latency, PtyFlood, PtyProc,
    ATTACH_TRACE, COLS, ROWS,
};
use super::tmux::{Dtach, Tmux};
use super::{parse, Ctx, Reference, Run};
use serde_json::json;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn limit(bytes: usize) -> Duration {
    Duration::from_secs(30) + Duration::from_secs_f64(bytes as f64 / 2e6)
}

/// CPU time (user + system) of `pid` so far, in ms (/proc/<pid>/stat).
fn cpu_ms(pid: Option<u32>) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    let hz = super::clock_ticks() as f64;
    Some(ticks * 1000.0 / hz.max(1.0))
}

/// (server, client) CPU ms per MB of `bytes` between two readings.
fn cpu_per_mb(
    before: [Option<f64>; 2],
    after: [Option<f64>; 2],
    bytes: usize,
) -> Option<(f64, f64)> {
    let mb = bytes as f64 / 1e6;
    Some(((after[0]? - before[0]?) / mb, (after[1]? - before[1]?) / mb))
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        bytes as f64 / 1e6 / d.as_secs_f64()
    }
}

fn pty_result(c: &str, r: &Reference, fl: PtyFlood, passthrough: bool) -> Flood {
    let received = fl.data.len() - fl.preamble;
    Flood {
        contender: c.into(),
        kind: r.kind,
        expected_bytes: r.bytes as u64,
        received_bytes: received as u64,
        seconds: fl.elapsed.as_secs_f64(),
        mb_per_s: mbps(r.bytes, fl.elapsed),
        rounds_mb_per_s: Vec::new(),
        ratio_to_raw: None,
        bytes_lost: passthrough.then_some(r.bytes as i64 - received as i64),
        resyncs: None,
        resync_bytes: None,
        screen_matches: parse(&fl.data) == r.screen,
        timed_out: fl.timed_out,
        cpu_ms_per_mb: None,
        server_threads_ms_per_mb: None,
        server_peak_rss_kb: None,
        paired_to_dtach: None,
        error: None,
    }
}
