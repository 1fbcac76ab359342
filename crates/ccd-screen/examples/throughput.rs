//! Rough throughput of `Screen::process` and of the mode scanner alone on a
//! recording repeated to ~20 MB.
//!
//! `cargo run --release -p ccd-screen --example throughput -- FILE.bin`

use std::time::Instant;

use ccd_screen::{ModeScanner, Screen};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: throughput FILE.bin");
        std::process::exit(2);
    };
    let one = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let data: Vec<u8> = one.iter().copied().cycle().take(20 << 20).collect();
    let mb = data.len() as f64 / 1e6;

    let t = Instant::now();
    let mut scanner = ModeScanner::new();
    for chunk in data.chunks(4096) {
        scanner.feed(chunk);
    }
    let s = t.elapsed().as_secs_f64();
    println!("scanner only: {:.0} MB/s", mb / s);

    let t = Instant::now();
    let mut parser = vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap_or(std::num::NonZeroU16::MIN),
        std::num::NonZeroU16::new(120).unwrap_or(std::num::NonZeroU16::MIN),
        200,
    );
    for chunk in data.chunks(4096) {
        parser.process(chunk);
    }
    let s = t.elapsed().as_secs_f64();
    println!("vt100 alone: {:.0} MB/s", mb / s);

    let t = Instant::now();
    let mut screen = Screen::new(40, 120);
    for chunk in data.chunks(4096) {
        screen.process(chunk);
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "Screen::process (alacritty_terminal + scanner): {:.0} MB/s",
        mb / s
    );

    let t = Instant::now();
    let n = 1000;
    let mut bytes = 0;
    for _ in 0..n {
        bytes += screen.redraw().len();
    }
    println!(
        "redraw 40x120: {:.1} us, {} bytes",
        t.elapsed().as_secs_f64() * 1e6 / f64::from(n),
        bytes / n as usize
    );
}
