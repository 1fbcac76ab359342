#![no_main]
//! `cargo fuzz run protocol_decoder`: see fuzz/README.md and `ccd_fuzz_targets::protocol_decoder`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ccd_fuzz_targets::protocol_decoder(data));
