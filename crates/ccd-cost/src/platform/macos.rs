//! macOS (and any other platform `sysinfo` knows): the whole process table
//! read through `sysinfo` at each sample. The platform names no last pid,
//! so every sample is a full one (its cost grows with the processes on
//! the machine); no PSS either, so memory is RSS.

use crate::tree::{ProcStat, Source};
use crate::Error;
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

pub struct Table {
    sys: System,
}

impl Table {
    pub fn new() -> Result<Self, Error> {
        Ok(Self {
            sys: System::new().map_err(|e| Error(e.to_string()))?,
        })
    }
}

impl Source for Table {
    fn last_pid(&mut self) -> Option<u32> {
        None
    }

    /// Reads every process (the sample's one read of the table; `stat`
    /// answers from it).
    fn all_pids(&mut self) -> Vec<u32> {
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing().with_memory().with_cpu(),
        );
        self.sys
            .processes()
            .iter()
            .filter(|(_, p)| p.thread_kind().is_none())
            .map(|(pid, _)| pid.as_u32())
            .collect()
    }

    fn stat(&mut self, pid: u32) -> Option<ProcStat> {
        let p = self.sys.process(Pid::from_u32(pid))?;
        Some(ProcStat {
            ppid: p.parent().map_or(0, |pp| pp.as_u32()),
            start: p.start_time(),
            cpu_ms: p.accumulated_cpu_time(),
            rss_bytes: p.memory(),
        })
    }

    fn is_process(&mut self, pid: u32) -> bool {
        self.sys
            .process(Pid::from_u32(pid))
            .is_some_and(|p| p.thread_kind().is_none())
    }

    fn pss(&mut self, _pid: u32) -> Option<u64> {
        None
    }
}
