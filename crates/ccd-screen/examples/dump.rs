//! Print what the screen model makes of a recording.
//!
//! `cargo run -p ccd-screen --example dump -- FILE.bin [END_OFFSET] [ROWS COLS]`

use ccd_screen::{classify_screen, Screen};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: dump FILE.bin [END_OFFSET] [ROWS COLS]");
        std::process::exit(2);
    };
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let end = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(data.len())
        .min(data.len());
    let rows = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(40);
    let cols = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(120);
    let mut screen = Screen::new(rows, cols);
    screen.process(&data[..end]);
    for (i, r) in screen.rows_text().iter().enumerate() {
        if !r.trim().is_empty() {
            println!("{i:3}|{}", r.trim_end());
        }
    }
    println!(
        "cursor: {:?}  title: {:?}",
        screen.cursor_position(),
        screen.title()
    );
    println!(
        "modes: {}",
        serde_json::to_string(&screen.modes()).unwrap_or_default()
    );
    println!(
        "state: {}",
        serde_json::to_string_pretty(&classify_screen(&screen)).unwrap_or_default()
    );
}
