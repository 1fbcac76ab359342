#![no_main]
//! `cargo fuzz run registry_parser`: see fuzz/README.md and `ccd_fuzz_targets::registry_parser`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccd_fuzz_targets::registry_parser(data));
