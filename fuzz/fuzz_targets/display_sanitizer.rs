#![no_main]
//! `cargo fuzz run display_sanitizer`: see fuzz/README.md and `ccd_fuzz_targets::display_sanitizer`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccd_fuzz_targets::display_sanitizer(data));
