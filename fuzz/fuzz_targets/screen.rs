#![no_main]
//! `cargo fuzz run screen`: see fuzz/README.md and `ccd_fuzz_targets::screen`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccd_fuzz_targets::screen(data));
