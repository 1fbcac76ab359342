//! The real-CLI recordings the repository carries in
//! `tests/recordings/claude-cli/` (provenance in the README there).

use std::path::PathBuf;

/// The recordings folder: `$CCD_FIXTURES_DIR`, else the repository's
/// `tests/recordings/claude-cli`. Panics (failing the test) when it is
/// missing: a test that needs the recordings must not pass without them.
pub fn claude_cli_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CCD_FIXTURES_DIR") {
        return PathBuf::from(p);
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidate = here.join("../../tests/recordings/claude-cli");
    assert!(
        candidate.is_dir(),
        "CLI recordings not found at {} (set CCD_FIXTURES_DIR)",
        candidate.display()
    );
    candidate
}

/// One recording's bytes.
pub fn read(name: &str) -> Vec<u8> {
    let p = claude_cli_dir().join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}
