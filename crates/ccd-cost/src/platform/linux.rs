//! Linux: the process table read from `/proc`, one small file per process
//! asked about (see the crate header for which).

use crate::tree::{ProcStat, Source};
use crate::Error;
use std::io::Read;

/// Where the kernel says which pid it handed out last (this process's pid
/// namespace).
const NS_LAST_PID: &str = "/proc/sys/kernel/ns_last_pid";

/// The read size: more than any `stat`, `status` or `smaps_rollup` needs.
const READ_CHUNK: usize = 4096;

pub struct Table {
    /// `sysconf(_SC_CLK_TCK)`: the unit of `stat`'s CPU times.
    ticks_per_s: u64,
    page_bytes: u64,
    buf: String,
}

impl Table {
    pub fn new() -> Result<Self, Error> {
        use nix::unistd::{sysconf, SysconfVar};
        let conf = |v: SysconfVar| {
            sysconf(v)
                .ok()
                .flatten()
                .and_then(|n| u64::try_from(n).ok())
                .filter(|&n| n > 0)
        };
        let ticks_per_s = conf(SysconfVar::CLK_TCK).unwrap_or(100);
        let page_bytes = conf(SysconfVar::PAGE_SIZE).unwrap_or(4096);
        let mut t = Self {
            ticks_per_s,
            page_bytes,
            buf: String::new(),
        };
        if t.stat(std::process::id()).is_none() {
            return Err(Error("/proc/self/stat is not readable".into()));
        }
        Ok(t)
    }

    /// Reads a small `/proc` file into the buffer; false when it cannot.
    /// One `read` takes the whole of such a file when the buffer is
    /// larger (the kernel renders it at once): open, read, close, with no
    /// size probe and no read for the end unless the buffer filled.
    fn read(&mut self, path: &str) -> bool {
        let Ok(mut f) = std::fs::File::open(path) else {
            return false;
        };
        let mut bytes = std::mem::take(&mut self.buf).into_bytes();
        bytes.clear();
        bytes.resize(READ_CHUNK, 0);
        let mut len = 0;
        let ok = loop {
            match f.read(&mut bytes[len..]) {
                Ok(0) => break true,
                Ok(n) => {
                    len += n;
                    if len < bytes.len() {
                        break true;
                    }
                    bytes.resize(len + READ_CHUNK, 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        bytes.truncate(len);
        self.buf = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        ok
    }
}

impl Source for Table {
    fn last_pid(&mut self) -> Option<u32> {
        if !self.read(NS_LAST_PID) {
            return None;
        }
        self.buf.trim().parse().ok()
    }

    fn all_pids(&mut self) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    fn stat(&mut self, pid: u32) -> Option<ProcStat> {
        if !self.read(&format!("/proc/{pid}/stat")) {
            return None;
        }
        parse_stat(&self.buf, self.ticks_per_s, self.page_bytes)
    }

    fn is_process(&mut self, pid: u32) -> bool {
        self.read(&format!("/proc/{pid}/status"))
            && parse_tgid(&self.buf).is_some_and(|tgid| tgid == pid)
    }

    fn pss(&mut self, pid: u32) -> Option<u64> {
        if !self.read(&format!("/proc/{pid}/smaps_rollup")) {
            return None;
        }
        parse_pss_kb(&self.buf).map(|kb| kb * 1024)
    }
}

/// The figures of a `/proc/<pid>/stat` line: parent (field 4), user and
/// system time (14, 15, in clock ticks), start time (22, ticks since
/// boot), resident pages (24), read by `ccd_os::process::stat` (which
/// counts the fields after the command name's last `)`).
pub fn parse_stat(text: &str, ticks_per_s: u64, page_bytes: u64) -> Option<ProcStat> {
    let f = ccd_os::process::stat::Fields::parse(text)?;
    Some(ProcStat {
        ppid: f.ppid()?,
        start: f.start_ticks()?,
        cpu_ms: f.cpu_ticks()?.saturating_mul(1000) / ticks_per_s.max(1),
        rss_bytes: f.rss_pages()?.saturating_mul(page_bytes),
    })
}

/// The `Tgid:` of a `/proc/<pid>/status`.
fn parse_tgid(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The `Pss:` line of an smaps_rollup, in kB.
pub fn parse_pss_kb(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pss_is_read_from_its_line() {
        let text = "55d0-7ffd ---p 00000000 00:00 0  [rollup]\nRss:   1000 kB\nPss:   812 kB\nPss_Dirty: 4 kB\n";
        assert_eq!(parse_pss_kb(text), Some(812));
        assert_eq!(parse_pss_kb("Rss: 1 kB\n"), None);
    }

    #[test]
    fn a_stat_line_is_read_past_an_odd_name() {
        let line = "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 3 0 123456 99999999 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
        let s = parse_stat(line, 100, 4096).expect("parsed");
        assert_eq!(
            s,
            ProcStat {
                ppid: 17,
                start: 123456,
                cpu_ms: 3000,
                rss_bytes: 2560 * 4096,
            }
        );
        assert_eq!(parse_stat("4242 (x) S 1 2", 100, 4096), None);
    }

    #[test]
    fn this_process_reads_as_itself_and_a_thread_is_not_a_process() {
        let mut t = Table::new().expect("a table");
        let me = std::process::id();
        let s = t.stat(me).expect("this process");
        assert_eq!(s.ppid, nix::unistd::getppid().as_raw() as u32);
        assert!(s.rss_bytes > 0);
        assert!(t.is_process(me));
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32)
                .expect("sent");
            let _ = done.recv();
        });
        let tid = rx.recv().expect("a tid");
        assert!(t.stat(tid).is_some(), "a thread id reads too");
        assert!(!t.is_process(tid));
        drop(done_tx);
        h.join().expect("joined");
        assert!(t.last_pid().is_some_and(|l| l > 0));
        assert!(t.all_pids().contains(&me));
        assert!(t.pss(me).is_some_and(|b| b > 0));
    }
}
