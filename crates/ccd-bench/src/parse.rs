//! In-memory cost of ccd's screen model, part by part, on the same seeded
//! streams `ccd-bench pty` floods with: vt100 alone (the model ccd used
//! before, for comparison), the mode scanner alone, and
//! [`ccd_screen::Screen`] (`alacritty_terminal` and the scanner, plus UTF-8
//! carry and panic guard).
//! Chunks are cut like PTY reads, so per-call overhead counts too.

use std::time::{Duration, Instant};

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
}

/// A named part of the model and how to run it over the whole stream once.
type Part<'a> = (&'static str, Box<dyn Fn() + 'a>);

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

fn time_it(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut t: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    (t[0], t[t.len() / 2])
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    println!(
        "{:<7} {:<15} {:>10} {:>12}",
        "stream", "part", "best MB/s", "median MB/s"
    );
    for kind in [Kind::Tui, Kind::Plain] {
        let data = generate(kind, a.mb * 1_000_000, a.seed, a.rows, a.cols);
        let mb = data.len() as f64 / 1e6;
        let parts: [Part; 3] = [
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
            let (best, median) = time_it(a.runs, f);
            println!(
                "{:<7} {:<15} {:>10.1} {:>12.1}",
                kind.name(),
                name,
                mb / best.as_secs_f64(),
                mb / median.as_secs_f64()
            );
        }
    }
    Ok(())
}
