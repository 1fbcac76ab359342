//! In-memory cost of ccd's screen model, part by part, on the same seeded
//! streams `ccd-bench pty` floods with: vt100 alone (the model ccd used
//! before, for comparison), `avt` (asciinema's virtual terminal, another
//! maintained model with its own parser and grid; fed `str` chunks cut at
//! character boundaries outside the timing), the mode scanner alone,
//! `vte`'s parser alone (every action dropped), `vte` driving a bare
//! `alacritty_terminal::Term`, and [`ccd_screen::Screen`] (that terminal
//! and the scanner, plus UTF-8 carry and panic guard) with every character
//! handed to the terminal alone (`Screen vte-only`, the path before
//! `ccd_screen`'s lane) and as it runs.
//! Chunks are cut like PTY reads, so per-call overhead counts too.
//! Times are the thread's CPU time (the machine may be shared), with the
//! wall-clock median beside them.

use std::time::{Duration, Instant};

use alacritty_terminal::event::VoidListener;
use alacritty_terminal::term::test::TermSize;
use alacritty_terminal::term::{Config, Term};
use alacritty_terminal::vte::ansi::{Handler, Processor, StdSyncHandler};

use crate::pty::stream::{generate, Kind};

#[derive(clap::Args)]
pub struct Args {
    /// Megabytes of each stream.
    #[arg(long, default_value_t = 50)]
    mb: usize,
    /// Bytes per call (a PTY read is at most a few KiB to 64 KiB).
    #[arg(long, default_value_t = 4096)]
    chunk: usize,
    /// Runs per part (the best is reported with the median).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[arg(long, default_value_t = 50)]
    rows: u16,
    #[arg(long, default_value_t = 200)]
    cols: u16,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Scrollback lines of the ccd Screen part (the holder keeps none).
    #[arg(long, default_value_t = 0)]
    scrollback: usize,
    /// Run only the parts whose name contains this (repeatable), e.g.
    /// `--part Screen` under `perf record`.
    #[arg(long)]
    part: Vec<String>,
    /// Only this stream.
    #[arg(long, value_enum)]
    stream: Option<Kind>,
}

/// A named part of the model and how to run it over the whole stream once.
type Part<'a> = (&'static str, Box<dyn Fn() + 'a>);

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

/// The `vte` parser with every action dropped: the cost of the state
/// machine and its UTF-8 decoding alone.
struct Nothing;
impl Handler for Nothing {}

/// CPU time of the calling thread (zero if the clock cannot be read).
fn thread_cpu() -> Duration {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// Each run's (CPU, wall) time.
fn time_it(runs: usize, mut f: impl FnMut()) -> Vec<(Duration, Duration)> {
    (0..runs.max(1))
        .map(|_| {
            let (c, s) = (thread_cpu(), Instant::now());
            f();
            (thread_cpu().saturating_sub(c), s.elapsed())
        })
        .collect()
}

fn median(mut t: Vec<Duration>) -> Duration {
    t.sort();
    t[t.len() / 2]
}

/// `data` as text in chunks of about `chunk` bytes, each cut at a
/// character boundary (the streams are valid UTF-8; anything that is not
/// is left out).
fn str_chunks(data: &[u8], chunk: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let mut end = chunk.max(4).min(rest.len());
        while end < rest.len() && rest[end] & 0xc0 == 0x80 {
            end += 1;
        }
        if let Ok(s) = std::str::from_utf8(&rest[..end]) {
            out.push(s);
        }
        rest = &rest[end..];
    }
    out
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    println!(
        "{:<7} {:<15} {:>10} {:>12} {:>12} {:>12}",
        "stream", "part", "best MB/s", "median MB/s", "CPU ms/MB", "wall MB/s"
    );
    println!(
        "{:<23} {:>10} {:>12} {:>12} {:>12}",
        "", "(CPU)", "(CPU)", "(median)", "(median)"
    );
    for kind in [Kind::Tui, Kind::Plain] {
        if a.stream.is_some_and(|s| s != kind) {
            continue;
        }
        let data = generate(kind, a.mb * 1_000_000, a.seed, a.rows, a.cols);
        let mb = data.len() as f64 / 1e6;
        let text_chunks = str_chunks(&data, a.chunk);
        let parts: [Part; 7] = [
            (
                "vt100 (before)",
                Box::new(|| {
                    let mut p = vt100::Parser::new(nz(a.rows), nz(a.cols), 0);
                    for c in data.chunks(a.chunk) {
                        p.process(c);
                    }
                    std::hint::black_box(p.screen().cursor_position());
                }),
            ),
            (
                "avt",
                Box::new(|| {
                    let cols = usize::from(a.cols.max(1));
                    let rows = usize::from(a.rows.max(1));
                    let Ok(mut t) = avt::Terminal::with_scrollback(cols, rows, Some(a.scrollback))
                    else {
                        return;
                    };
                    for c in &text_chunks {
                        t.feed(*c);
                    }
                    std::hint::black_box(t.size());
                }),
            ),
            (
                "mode scanner",
                Box::new(|| {
                    let mut m = ccd_screen::ModeScanner::new();
                    for c in data.chunks(a.chunk) {
                        m.feed(c);
                    }
                    std::hint::black_box(&m);
                }),
            ),
            (
                "vte alone",
                Box::new(|| {
                    let mut p: Processor<StdSyncHandler> = Processor::new();
                    let mut h = Nothing;
                    for c in data.chunks(a.chunk) {
                        p.advance(&mut h, c);
                    }
                    std::hint::black_box(&p);
                }),
            ),
            (
                "vte + Term",
                Box::new(|| {
                    let config = Config {
                        scrolling_history: a.scrollback,
                        ..Config::default()
                    };
                    let size = TermSize::new(usize::from(a.cols), usize::from(a.rows));
                    let mut t = Term::new(config, &size, VoidListener);
                    let mut p: Processor<StdSyncHandler> = Processor::new();
                    for c in data.chunks(a.chunk) {
                        p.advance(&mut t, c);
                    }
                    std::hint::black_box(t.grid().cursor.point);
                }),
            ),
            (
                "Screen vte-only",
                Box::new(|| {
                    let mut s = ccd_screen::Screen::with_scrollback(a.rows, a.cols, a.scrollback);
                    s.set_vte_only(true);
                    for c in data.chunks(a.chunk) {
                        s.process(c);
                    }
                    std::hint::black_box(s.size());
                }),
            ),
            (
                "ccd Screen",
                Box::new(|| {
                    let mut s = ccd_screen::Screen::with_scrollback(a.rows, a.cols, a.scrollback);
                    for c in data.chunks(a.chunk) {
                        s.process(c);
                    }
                    std::hint::black_box(s.size());
                }),
            ),
        ];
        for (name, f) in parts {
            if !a.part.is_empty() && !a.part.iter().any(|p| name.contains(p.as_str())) {
                continue;
            }
            let t = time_it(a.runs, f);
            let cpu: Vec<Duration> = t.iter().map(|x| x.0).collect();
            let best = cpu.iter().min().copied().unwrap_or_default();
            let cpu_median = median(cpu);
            let wall_median = median(t.iter().map(|x| x.1).collect());
            println!(
                "{:<7} {:<15} {:>10.1} {:>12.1} {:>12.2} {:>12.1}",
                kind.name(),
                name,
                mb / best.as_secs_f64(),
                mb / cpu_median.as_secs_f64(),
                cpu_median.as_secs_f64() * 1e3 / mb,
                mb / wall_median.as_secs_f64()
            );
        }
    }
    Ok(())
}
