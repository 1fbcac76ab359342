//! macOS: `ps -o lstart=` in UTC and the C locale (not verified on a Mac by
//! this project; the parser is tested on every platform).

use super::lstart::parse_lstart;
use super::{ProcessProbe, ProcessState};
use std::process::Command;

pub(super) struct PsProbe;

impl ProcessProbe for PsProbe {
    fn process(&self, pid: u32) -> ProcessState {
        let out = Command::new("ps")
            .args(["-o", "lstart=", "-o", "stat=", "-p", &pid.to_string()])
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .output();
        match out {
            Err(e) => ProcessState::Unverifiable(format!("ps: {e}")),
            Ok(o) if !o.status.success() => ProcessState::Gone,
            Ok(o) => {
                let text = String::from_utf8_lossy(&o.stdout);
                let text = text.trim();
                // lstart is five fields; stat follows.
                let fields: Vec<&str> = text.split_ascii_whitespace().collect();
                if fields.len() < 6 {
                    return ProcessState::Unverifiable(format!("unexpected ps output {text:?}"));
                }
                if fields[5].starts_with('Z') {
                    return ProcessState::Gone;
                }
                ProcessState::Running {
                    start: fields[..5].join(" "),
                }
            }
        }
    }

    fn pid_domain(&self) -> Option<String> {
        None
    }

    fn same_start(&self, entry_stamp: &str, current: &str) -> Option<bool> {
        Some(parse_lstart(entry_stamp)? == parse_lstart(current)?)
    }
}
