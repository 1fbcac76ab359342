//! Linux: `/proc/<pid>/stat`, read whole in one read and parsed by
//! [`super::stat`].

use super::stat::Fields;

/// `/proc/<pid>/stat` whole: one read into room for it (procfs reports
/// no size, so `fs::read_to_string` would read in growing pieces).
pub fn read_stat(pid: u32) -> std::io::Result<String> {
    read_small(&format!("/proc/{pid}/stat"))
}

/// `/proc/<pid>/task/<tid>/stat` whole (a thread's own line).
pub fn read_stat_of(pid: u32, tid: u32) -> std::io::Result<String> {
    read_small(&format!("/proc/{pid}/task/{tid}/stat"))
}

fn read_small(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut s = String::with_capacity(1024);
    std::fs::File::open(path)?.read_to_string(&mut s)?;
    Ok(s)
}

pub(super) fn is_stopped(pid: u32) -> bool {
    let Ok(stat) = read_stat(pid) else {
        return false;
    };
    Fields::parse(&stat)
        .and_then(|f| f.state())
        .is_some_and(|s| s == b'T' || s == b't')
}

/// How many descriptors `pid` has open (0: gone or unreadable): the
/// entries of `/proc/<pid>/fd`.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}
