#![no_main]
//! `cargo fuzz run transcript_parser`: see fuzz/README.md and `ccd_fuzz_targets::transcript_parser`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccd_fuzz_targets::transcript_parser(data));
