//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/*`) through
//! every target as an ordinary test, so CI keeps every seed and every
//! minimized crash passing without a fuzzer. Each file also runs truncated
//! at a few points (a fuzzer's favourite mutation).
//!
//! A missing or empty corpus folder FAILS: the corpus is part of the test.

use std::path::{Path, PathBuf};

use ccd_fuzz_targets::TARGETS;

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

fn files(target: &str) -> Vec<PathBuf> {
    let dir = corpus_root().join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus folder {} is missing: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("read the corpus folder").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "corpus folder {} is empty",
        dir.display()
    );
    files
}

/// The lengths each file is also replayed at.
fn cuts(len: usize) -> Vec<usize> {
    let mut cuts = vec![0, 1, 2, 3, 7, len / 3, len / 2, len.saturating_sub(1)];
    cuts.retain(|&c| c < len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn replay(target: &str) {
    let run = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, run)| *run)
        .unwrap_or_else(|| panic!("no target {target}"));
    for path in files(target) {
        let data = std::fs::read(&path).expect("read a corpus file");
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        // A failing property panics with its own message; say which file.
        eprintln!("{target}: {name} ({} bytes)", data.len());
        run(&data);
        for cut in cuts(data.len()) {
            run(&data[..cut]);
        }
    }
}

#[test]
fn every_target_has_a_corpus_folder() {
    let root = corpus_root();
    for (name, _) in TARGETS {
        assert!(
            root.join(name).is_dir(),
            "fuzz/corpus/{name} is missing (every target needs seeds)"
        );
        let source = root.join("../fuzz_targets").join(format!("{name}.rs"));
        assert!(
            source.is_file(),
            "{} is missing (every target needs a cargo-fuzz entry point)",
            source.display()
        );
    }
}

#[test]
fn protocol_decoder_corpus() {
    replay("protocol_decoder");
}

#[test]
fn registry_parser_corpus() {
    replay("registry_parser");
}

#[test]
fn transcript_parser_corpus() {
    replay("transcript_parser");
    ccd_fuzz_targets::remove_temp_dir();
}

#[test]
fn screen_corpus() {
    replay("screen");
}

#[test]
fn display_sanitizer_corpus() {
    replay("display_sanitizer");
}
