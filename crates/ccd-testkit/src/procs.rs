//! Facts about other processes, for tests and benchmarks: does a pid
//! exist, has it ended, every pid, a process's parent and state, command
//! line, environment, working directory, owner and open descriptors.
//!
//! Linux reads `/proc` (what the tests read before this module existed);
//! macOS asks the kernel through `sysinfo` (`proc_pidinfo`, `sysctl`);
//! the stat line, existence and descriptor counts are `ccd_os::process`'s. A process that cannot
//! be read (gone, or another user's) gives the empty answer, as an
//! unreadable `/proc` file did.

use std::path::PathBuf;

/// A process's parent and its state letter as `/proc/<pid>/stat` writes it
/// (`R`, `S`, `T`, `Z`, …; on macOS the nearest letter of its status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub ppid: u32,
    pub state: char,
}

/// Whether a process `pid` exists (a zombie does).
pub fn exists(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }
    #[cfg(not(target_os = "linux"))]
    {
        ccd_os::process::exists(pid)
    }
}

/// Whether `pid` has ended: gone, or a zombie nobody reaped yet.
pub fn gone(pid: u32) -> bool {
    stat(pid).is_none_or(|s| s.state == 'Z')
}

/// The parent and state of `pid` (`None`: gone or unreadable).
pub fn stat(pid: u32) -> Option<Stat> {
    #[cfg(target_os = "linux")]
    {
        let stat = ccd_os::process::read_stat(pid).ok()?;
        let f = ccd_os::process::stat::Fields::parse(&stat)?;
        let state = f.state().map_or('?', char::from);
        Some(Stat {
            ppid: f.ppid()?,
            state,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let sys = mac::one(pid, sysinfo::ProcessRefreshKind::nothing())?;
        let p = sys.process(sysinfo::Pid::from_u32(pid))?;
        Some(mac::stat_of(p))
    }
}

/// Every pid on the machine (this process's included).
pub fn pids() -> Vec<u32> {
    #[cfg(target_os = "linux")]
    {
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        rd.flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        mac::all(sysinfo::ProcessRefreshKind::nothing())
            .map(|sys| sys.processes().keys().map(|p| p.as_u32()).collect())
            .unwrap_or_default()
    }
}

/// The children of `pid` with their state letters.
pub fn children(pid: u32) -> Vec<(u32, char)> {
    pids()
        .into_iter()
        .filter_map(|p| stat(p).filter(|s| s.ppid == pid).map(|s| (p, s.state)))
        .collect()
}

/// The command line of `pid`, its words each ended by a NUL as in
/// `/proc/<pid>/cmdline` (empty: gone or unreadable).
pub fn cmdline(pid: u32) -> Vec<u8> {
    #[cfg(target_os = "linux")]
    {
        std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let kind = sysinfo::ProcessRefreshKind::nothing().with_cmd(sysinfo::UpdateKind::Always);
        mac::one(pid, kind)
            .and_then(|sys| {
                Some(mac::nul_joined(
                    sys.process(sysinfo::Pid::from_u32(pid))?.cmd(),
                ))
            })
            .unwrap_or_default()
    }
}

/// The environment of `pid`, `NAME=value` entries each ended by a NUL as
/// in `/proc/<pid>/environ` (empty: gone or unreadable).
pub fn environ(pid: u32) -> Vec<u8> {
    #[cfg(target_os = "linux")]
    {
        std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let kind = sysinfo::ProcessRefreshKind::nothing().with_environ(sysinfo::UpdateKind::Always);
        mac::one(pid, kind)
            .and_then(|sys| {
                Some(mac::nul_joined(
                    sys.process(sysinfo::Pid::from_u32(pid))?.environ(),
                ))
            })
            .unwrap_or_default()
    }
}

/// Whether `pid`'s environment holds exactly the entry `entry`
/// (`NAME=value`).
pub fn has_env(pid: u32, entry: &str) -> bool {
    environ(pid)
        .split(|&b| b == 0)
        .any(|kv| kv == entry.as_bytes())
}

/// The working directory of `pid` (`None`: gone or unreadable).
pub fn cwd(pid: u32) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let kind = sysinfo::ProcessRefreshKind::nothing().with_cwd(sysinfo::UpdateKind::Always);
        let sys = mac::one(pid, kind)?;
        sys.process(sysinfo::Pid::from_u32(pid))?
            .cwd()
            .map(PathBuf::from)
    }
}

/// The real user id of `pid` (`None`: gone or unreadable).
pub fn uid(pid: u32) -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|u| u.parse::<u32>().ok())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let kind = sysinfo::ProcessRefreshKind::nothing().with_user(sysinfo::UpdateKind::Always);
        let sys = mac::one(pid, kind)?;
        let uid = sys.process(sysinfo::Pid::from_u32(pid))?.user_id()?;
        Some(**uid)
    }
}

/// The private memory of `pid` in kB: on Linux its anonymous resident
/// pages (`RssAnon`: heap, stacks, buffers), without the pages of its
/// binary and libraries, which are shared with every process running the
/// same file and grow with the binary, not with what the process holds;
/// elsewhere the resident set ([`rss_kb`]). 0: gone or unreadable.
pub fn private_kb(pid: u32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        status_kb(pid, "RssAnon:")
    }
    #[cfg(not(target_os = "linux"))]
    {
        rss_kb(pid)
    }
}

/// A `kB` field of `/proc/<pid>/status` (0: gone or unreadable).
#[cfg(target_os = "linux")]
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The resident set of `pid` in kB (`VmRSS`; 0: gone or unreadable).
pub fn rss_kb(pid: u32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        status_kb(pid, "VmRSS:")
    }
    #[cfg(not(target_os = "linux"))]
    {
        let kind = sysinfo::ProcessRefreshKind::nothing().with_memory();
        mac::one(pid, kind)
            .and_then(|sys| Some(sys.process(sysinfo::Pid::from_u32(pid))?.memory() / 1024))
            .unwrap_or(0)
    }
}

/// How many descriptors `pid` has open (0: gone or unreadable):
/// `ccd_os::process::fd_count`.
pub fn fd_count(pid: u32) -> usize {
    ccd_os::process::fd_count(pid)
}

#[cfg(not(target_os = "linux"))]
mod mac {
    //! The macOS side: `sysinfo` for the process table.

    use super::Stat;
    use sysinfo::{Pid, Process, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

    /// One process, read with `kind`.
    pub(super) fn one(pid: u32, kind: ProcessRefreshKind) -> Option<System> {
        let mut sys = System::new().ok()?;
        sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[Pid::from_u32(pid)]), true, kind);
        Some(sys)
    }

    /// Every process, read with `kind`.
    pub(super) fn all(kind: ProcessRefreshKind) -> Option<System> {
        let mut sys = System::new().ok()?;
        sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
        Some(sys)
    }

    pub(super) fn stat_of(p: &Process) -> Stat {
        let state = match p.status() {
            ProcessStatus::Run => 'R',
            ProcessStatus::Stop => 'T',
            ProcessStatus::Zombie => 'Z',
            ProcessStatus::Idle => 'I',
            _ => 'S',
        };
        Stat {
            ppid: p.parent().map_or(0, |p| p.as_u32()),
            state,
        }
    }

    pub(super) fn nul_joined(words: &[std::ffi::OsString]) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let mut out = Vec::new();
        for w in words {
            out.extend_from_slice(w.as_bytes());
            out.push(0);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_a_child_are_seen_and_a_reaped_child_is_gone() {
        let me = std::process::id();
        assert!(exists(me));
        assert!(pids().contains(&me));
        assert!(fd_count(me) >= 3, "stdin, stdout, stderr at least");
        assert!(rss_kb(me) > 0);
        assert_eq!(cwd(me), std::env::current_dir().ok());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("CCD_PROCS_TEST", "marker")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        assert!(exists(pid) && !gone(pid));
        // Until the child has exec'd, /proc shows the parent's command
        // line and environment (seen under load).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !cmdline(pid).starts_with(b"sleep") && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(stat(pid).map(|s| s.ppid), Some(me));
        assert!(children(me).iter().any(|&(p, _)| p == pid));
        assert!(cmdline(pid).starts_with(b"sleep\x0030\x00"));
        assert!(has_env(pid, "CCD_PROCS_TEST=marker"));
        assert!(!has_env(pid, "CCD_PROCS_TEST=other"));
        assert_eq!(uid(pid), Some(nix::unistd::getuid().as_raw()));
        child.kill().expect("kill");
        child.wait().expect("wait");
        assert!(!exists(pid) && gone(pid));
        assert!(cmdline(pid).is_empty() && environ(pid).is_empty());
    }

    #[test]
    fn an_unreaped_child_is_a_zombie_and_gone() {
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !gone(pid) {
            assert!(std::time::Instant::now() < deadline, "child never ended");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(exists(pid), "a zombie still has its pid");
        assert_eq!(stat(pid).map(|s| s.state), Some('Z'));
        child.wait().expect("wait");
    }
}
