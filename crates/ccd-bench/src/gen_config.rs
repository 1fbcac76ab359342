//! A generated Claude Code config dir: many transcripts across many project
//! folders, a few very large ones, and registry entries (dead pids, plus
//! live ones when asked for).

use ccd_testkit::gen::{registry_entry, sid, write_registry_entry, TranscriptWriter};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Where to write the config dir (must not exist yet).
    #[arg(long)]
    pub dir: PathBuf,
    /// Number of transcripts.
    #[arg(long, default_value_t = 10_000)]
    pub transcripts: u64,
    /// How many of them are large.
    #[arg(long, default_value_t = 3)]
    pub big: u64,
    /// Size of each large transcript, in MB.
    #[arg(long, default_value_t = 100)]
    pub big_mb: u64,
    /// Registry entries (for dead pids, pointing at existing transcripts).
    #[arg(long, default_value_t = 50)]
    pub entries: u64,
    /// Project folders the transcripts are spread over.
    #[arg(long, default_value_t = 250)]
    pub projects: u64,
}

/// `a.dir`, generated once and kept between runs: a `.complete` marker
/// says a generation finished (an unfinished one is made again).
pub fn kept(a: &Args) -> anyhow::Result<PathBuf> {
    if !a.dir.join(".complete").exists() {
        let _ = std::fs::remove_dir_all(&a.dir);
        run(a)?;
        std::fs::write(a.dir.join(".complete"), b"")?;
    }
    Ok(a.dir.clone())
}

pub fn run(a: &Args) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(!a.dir.exists(), "{} already exists", a.dir.display());
    std::fs::create_dir_all(&a.dir)?;
    for n in 0..a.transcripts {
        let cwd = format!("/home/dev/work/project-{}", n % a.projects.max(1));
        let mut w = TranscriptWriter::create(&a.dir, &sid(n), &cwd);
        // 2–9 turns of a few hundred bytes: a few KB to tens of KB each.
        let turns = 2 + n % 8;
        for t in 0..turns {
            w.turn(
                &format!("task {n}: step {t} of the plan"),
                2_000 + t * 1_500,
                300 + (n % 5) as usize * 200,
            );
        }
        if n < a.big {
            grow(&mut w, a.big_mb * 1_000_000);
        }
    }
    for n in 0..a.entries.min(a.transcripts) {
        // Pids above the kernel's default pid_max: never running.
        let pid = 4_000_000 + n as u32;
        write_registry_entry(
            &a.dir,
            &registry_entry(
                pid,
                &sid(n * 7 % a.transcripts),
                "/home/dev/work",
                "12345",
                None,
            ),
        );
    }
    eprintln!(
        "generated {} transcripts ({} of {} MB) and {} registry entries in {}",
        a.transcripts,
        a.big,
        a.big_mb,
        a.entries,
        a.dir.display()
    );
    Ok(a.dir.clone())
}

/// Appends turns with 64 KiB replies until the file reaches `bytes`.
fn grow(w: &mut TranscriptWriter, bytes: u64) {
    let mut i = 0;
    while file_len(&w.path) < bytes {
        w.turn(&format!("long session turn {i}"), 50_000 + i, 64 * 1024);
        i += 1;
    }
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}
