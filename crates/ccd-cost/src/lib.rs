//! ccd-cost: what a session costs the machine — the memory and the CPU of
//! a process and every process under it (a `claude`, its shells, its MCP
//! servers).
//!
//! One [`CostProbe`] is kept by its owner and sampled now and then. Each
//! [`CostProbe::sample`] reads every process once (through `sysinfo`: its
//! parent, its resident size and its CPU time), walks the tree under each
//! root and sums it:
//! - **memory**: on Linux the proportional set size of each process
//!   (`/proc/<pid>/smaps_rollup`: a page shared by n processes counts 1/n
//!   in each, so a tree's sum is what ending it would free, near enough);
//!   where that file cannot be read (an old kernel, another user's
//!   process), and on macOS, the resident set size, which counts a shared
//!   page once in every process that maps it. [`MemoryKind`] says which.
//! - **CPU**: the CPU time the tree's processes used since the sample
//!   before, over the wall time between them, in % of one core (200 = two
//!   cores busy). A process that started since then counts all its time.
//!   The first sample, or one taken less than [`MIN_INTERVAL`] after the
//!   one before, has no CPU figure of its own: the figure of the sample
//!   before is kept.
//!
//! The probe does blocking reads of `/proc` (or kernel calls on macOS):
//! call it from a blocking thread. It holds no lock and spawns nothing.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// Why a probe cannot be made (the platform's process table is unreadable).
pub use sysinfo::Error;

/// Samples closer together than this give no CPU figure of their own.
pub const MIN_INTERVAL: Duration = Duration::from_millis(500);

/// How the memory of a tree was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Proportional set size (Linux): shared pages split between sharers.
    Pss,
    /// Resident set size: shared pages counted in every process.
    Rss,
}

/// What one process tree costs, as of one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeCost {
    /// The tree's memory, in bytes.
    pub memory_bytes: u64,
    pub memory_kind: MemoryKind,
    /// CPU over the last interval, in % of one core; `None` until two
    /// samples far enough apart.
    pub cpu_percent: Option<f64>,
    /// The interval `cpu_percent` covers.
    pub cpu_interval: Option<Duration>,
    /// Processes in the tree, the root included.
    pub processes: u32,
}

/// Samples process trees. Keep one and sample it repeatedly: CPU figures
/// come from the difference between samples.
pub struct CostProbe {
    sys: System,
    /// CPU time (ms) of every process at the last sample that measured
    /// CPU, and when it was taken.
    last: Option<(Instant, HashMap<u32, u64>)>,
    /// The CPU figure each root had at the last sample that measured it.
    last_cpu: HashMap<u32, (f64, Duration)>,
}

impl CostProbe {
    /// A probe with nothing read yet; fails only where the platform has no
    /// process table `sysinfo` can read.
    pub fn new() -> Result<Self, Error> {
        Ok(Self {
            sys: System::new()?,
            last: None,
            last_cpu: HashMap::new(),
        })
    }

    /// Reads every process once and returns the cost of the tree under each
    /// of `roots` that exists. Nothing is read when `roots` is empty.
    pub fn sample(&mut self, roots: &[u32]) -> HashMap<u32, TreeCost> {
        let mut out = HashMap::new();
        if roots.is_empty() {
            return out;
        }
        let now = Instant::now();
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing().with_memory().with_cpu(),
        );
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut cpu_now: HashMap<u32, u64> = HashMap::with_capacity(self.sys.processes().len());
        for (pid, p) in self.sys.processes() {
            // Threads are not processes (sysinfo lists them on Linux only
            // when asked for tasks, which this probe never is).
            if p.thread_kind().is_some() {
                continue;
            }
            if let Some(parent) = p.parent() {
                children
                    .entry(parent.as_u32())
                    .or_default()
                    .push(pid.as_u32());
            }
            cpu_now.insert(pid.as_u32(), p.accumulated_cpu_time());
        }
        let measures_cpu = match &self.last {
            Some((at, _)) => now.duration_since(*at) >= MIN_INTERVAL,
            None => true,
        };
        let interval = self.last.as_ref().map(|(at, _)| now.duration_since(*at));
        for &root in roots {
            if !cpu_now.contains_key(&root) {
                continue;
            }
            let tree = tree_of(root, &children);
            let memory = memory_of(&tree, &self.sys);
            let cpu = match (measures_cpu, &self.last, interval) {
                (true, Some((_, before)), Some(interval)) => {
                    let used: u64 = tree
                        .iter()
                        .map(|pid| {
                            let now = cpu_now.get(pid).copied().unwrap_or(0);
                            match before.get(pid) {
                                Some(&b) if b <= now => now - b,
                                // New since the last sample (or a reused
                                // pid): all of its time is in the interval.
                                _ => now,
                            }
                        })
                        .sum();
                    let pct = used as f64 * 100.0 / interval.as_millis().max(1) as f64;
                    self.last_cpu.insert(root, (pct, interval));
                    Some((pct, interval))
                }
                (true, _, _) => None,
                (false, _, _) => self.last_cpu.get(&root).copied(),
            };
            out.insert(
                root,
                TreeCost {
                    memory_bytes: memory.0,
                    memory_kind: memory.1,
                    cpu_percent: cpu.map(|c| c.0),
                    cpu_interval: cpu.map(|c| c.1),
                    processes: tree.len() as u32,
                },
            );
        }
        if measures_cpu {
            // A root this sample did not ask about keeps its figure while
            // its process is there (another caller may sample fewer roots).
            self.last_cpu.retain(|root, _| cpu_now.contains_key(root));
            self.last = Some((now, cpu_now));
        }
        out
    }
}

/// `root` and every process under it (each once, whatever the table says).
fn tree_of(root: u32, children: &HashMap<u32, Vec<u32>>) -> Vec<u32> {
    let mut seen = HashSet::from([root]);
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        if let Some(kids) = children.get(&tree[i]) {
            for &k in kids {
                if seen.insert(k) {
                    tree.push(k);
                }
            }
        }
        i += 1;
    }
    tree
}

/// The tree's memory: PSS summed where every process gives it, else RSS.
fn memory_of(tree: &[u32], sys: &System) -> (u64, MemoryKind) {
    let pss: Option<u64> = tree.iter().map(|&pid| platform::pss(pid)).sum();
    match pss {
        Some(bytes) => (bytes, MemoryKind::Pss),
        None => (
            tree.iter()
                .filter_map(|&pid| sys.process(Pid::from_u32(pid)))
                .map(|p| p.memory())
                .sum(),
            MemoryKind::Rss,
        ),
    }
}

#[cfg(target_os = "linux")]
mod platform {
    /// The process's proportional set size, from `smaps_rollup` (Linux ≥
    /// 4.14); `None` when it cannot be read (gone, another user's, older
    /// kernel).
    pub fn pss(pid: u32) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
        parse_pss_kb(&text).map(|kb| kb * 1024)
    }

    /// The `Pss:` line of an smaps_rollup, in kB.
    pub fn parse_pss_kb(text: &str) -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix("Pss:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse().ok())
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    /// No proportional figure on this platform: RSS is used.
    pub fn pss(_pid: u32) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_tree_counts_its_children() {
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep");
        let me = std::process::id();
        let mut probe = CostProbe::new().expect("a probe");
        let costs = probe.sample(&[me, child.id()]);
        let mine = &costs[&me];
        let its = &costs[&child.id()];
        assert!(
            mine.processes >= 2,
            "the child is under this test: {mine:?}"
        );
        assert_eq!(its.processes, 1);
        assert!(mine.memory_bytes > its.memory_bytes, "{mine:?} vs {its:?}");
        assert!(its.memory_bytes > 0);
        #[cfg(target_os = "linux")]
        assert_eq!(mine.memory_kind, MemoryKind::Pss);
        assert_eq!(mine.cpu_percent, None, "one sample has no interval");
        child.kill().expect("kill");
        child.wait().expect("reaped");
        let after = probe.sample(&[me, child.id()]);
        assert!(!after.contains_key(&child.id()), "a gone root has no cost");
    }

    #[test]
    fn no_roots_reads_nothing() {
        let mut probe = CostProbe::new().expect("a probe");
        assert!(probe.sample(&[]).is_empty());
        assert!(probe.sys.processes().is_empty());
    }

    #[test]
    fn memory_a_process_touches_is_counted() {
        // A child that holds 64 MiB it has written to.
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import sys,time; b=bytearray(64<<20); b[::4096]=b'x'*len(b[::4096]); print('ready',flush=True); time.sleep(30)",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready");
        assert_eq!(line.trim(), "ready");
        let cost = CostProbe::new().expect("a probe").sample(&[child.id()]);
        let bytes = cost[&child.id()].memory_bytes;
        child.kill().expect("kill");
        child.wait().expect("reaped");
        assert!(bytes >= 64 << 20, "64 MiB touched, {bytes} counted");
    }

    #[test]
    fn cpu_is_the_time_used_over_the_interval() {
        let me = std::process::id();
        let mut probe = CostProbe::new().expect("a probe");
        probe.sample(&[me]);
        // Busy for 600 ms on this thread.
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(600) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let cost = probe.sample(&[me]);
        let cpu = cost[&me].cpu_percent.expect("a CPU figure");
        assert!(cpu > 10.0, "a busy thread for the whole interval: {cpu}%");
        assert!(cost[&me].cpu_interval.expect("interval") >= MIN_INTERVAL);
        // Too soon for a new figure: the last one is kept.
        let again = probe.sample(&[me]);
        assert_eq!(again[&me].cpu_percent, Some(cpu));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn pss_is_read_from_its_line() {
        let text = "55d0-7ffd ---p 00000000 00:00 0  [rollup]\nRss:   1000 kB\nPss:   812 kB\nPss_Dirty: 4 kB\n";
        assert_eq!(platform::parse_pss_kb(text), Some(812));
        assert_eq!(platform::parse_pss_kb("Rss: 1 kB\n"), None);
    }
}
