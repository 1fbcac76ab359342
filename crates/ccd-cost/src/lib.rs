//! ccd-cost: what a session costs the machine — the memory and the CPU of
//! a process and every process under it (a `claude`, its shells, its MCP
//! servers).
//!
//! One [`CostProbe`] is kept by its owner and sampled now and then. Each
//! [`CostProbe::sample`] brings the trees under its roots up to date
//! ([`tree`]: on Linux it reads each tree's processes and the pids handed
//! out since the sample before, not every process on the machine; on
//! macOS it reads every process through `sysinfo`) and sums each tree:
//! - **memory**: on Linux the proportional set size of each process
//!   (`/proc/<pid>/smaps_rollup`: a page shared by n processes counts 1/n
//!   in each, so a tree's sum is what ending it would free, near enough),
//!   read when a process is first seen, again when its resident size moved
//!   by more than an eighth, and at least every [`tree::PSS_MAX_AGE`], the
//!   resident size's change since the read added in between; where that
//!   file cannot be read (an old kernel, another user's process), and on
//!   macOS, the resident set size, which counts a shared page once in
//!   every process that maps it. [`MemoryKind`] says which.
//! - **CPU**: the CPU time the tree's processes used since the sample
//!   before, over the wall time between them, in % of one core (200 = two
//!   cores busy). A process that started since then counts all its time.
//!   The first sample, or one taken less than [`MIN_INTERVAL`] after the
//!   one before, has no CPU figure of its own: the figure of the sample
//!   before is kept.
//!
//! What a sample reads on Linux: `/proc/sys/kernel/ns_last_pid`, then
//! `/proc/<pid>/stat` of each tree's processes (parent, start time, CPU
//! time, resident size) and of each pid handed out since the sample
//! before, `/proc/<pid>/status` of a new child (a process, not a thread?),
//! and `smaps_rollup` as above.
//!
//! The probe does blocking reads of `/proc` (or kernel calls on macOS):
//! call it from a blocking thread. It holds no lock and spawns nothing.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

pub mod tree;

mod platform;

use std::collections::HashMap;
use std::time::{Duration, Instant};
use tree::{Source, Tracker};

/// Why a probe cannot be made (the platform's process table is unreadable).
#[derive(Debug, thiserror::Error)]
#[error("the process table cannot be read: {0}")]
pub struct Error(String);

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

/// When CPU was last measured, and each followed process's start and CPU
/// time (ms) then.
type CpuTimes = (Instant, HashMap<u32, (u64, u64)>);

/// Samples process trees. Keep one and sample it repeatedly: CPU figures
/// come from the difference between samples, and the trees are followed
/// from one sample to the next.
pub struct CostProbe {
    source: platform::Table,
    tracker: Tracker,
    /// Start and CPU time (ms) of every followed process at the last
    /// sample that measured CPU, and when it was taken.
    last: Option<CpuTimes>,
    /// The CPU figure each root had at the last sample that measured it.
    last_cpu: HashMap<u32, (f64, Duration)>,
}

impl CostProbe {
    /// A probe with nothing read yet; fails only where the platform has no
    /// process table this crate can read.
    pub fn new() -> Result<Self, Error> {
        Ok(Self {
            source: platform::Table::new()?,
            tracker: Tracker::default(),
            last: None,
            last_cpu: HashMap::new(),
        })
    }

    /// Returns the cost of the tree under each of `roots` that exists.
    /// Nothing is read when `roots` is empty.
    pub fn sample(&mut self, roots: &[u32]) -> HashMap<u32, TreeCost> {
        sample_with(
            &mut self.source,
            &mut self.tracker,
            &mut self.last,
            &mut self.last_cpu,
            roots,
        )
    }
}

fn sample_with(
    source: &mut impl Source,
    tracker: &mut Tracker,
    last: &mut Option<CpuTimes>,
    last_cpu: &mut HashMap<u32, (f64, Duration)>,
    roots: &[u32],
) -> HashMap<u32, TreeCost> {
    let mut out = HashMap::new();
    if roots.is_empty() {
        return out;
    }
    let now = Instant::now();
    let how = tracker.update(source, roots, now);
    tracing::trace!(?how, roots = roots.len(), "process trees read");
    let measures_cpu = match last {
        Some((at, _)) => now.duration_since(*at) >= MIN_INTERVAL,
        None => true,
    };
    let interval = last.as_ref().map(|(at, _)| now.duration_since(*at));
    for &root in roots {
        let Some(tree) = tracker.tree(root) else {
            continue;
        };
        let memory = match tracker.pss_of(source, &tree, now) {
            Some(bytes) => (bytes, MemoryKind::Pss),
            None => (tracker.rss_of(&tree), MemoryKind::Rss),
        };
        let cpu = match (measures_cpu, &*last, interval) {
            // A root followed since the last sample only (its processes'
            // times then are unknown) has its first figure next time.
            (true, Some((_, before)), Some(interval)) if before.contains_key(&root) => {
                let used: u64 = tree
                    .iter()
                    .filter_map(|pid| tracker.stat(*pid).map(|s| (pid, s)))
                    .map(|(pid, s)| match before.get(pid) {
                        Some(&(start, b)) if start == s.start && b <= s.cpu_ms => s.cpu_ms - b,
                        // New since the last sample (or a reused pid):
                        // all of its time is in the interval.
                        _ => s.cpu_ms,
                    })
                    .sum();
                let pct = used as f64 * 100.0 / interval.as_millis().max(1) as f64;
                last_cpu.insert(root, (pct, interval));
                Some((pct, interval))
            }
            (true, _, _) => None,
            (false, _, _) => last_cpu.get(&root).copied(),
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
        // A root this sample did not ask about keeps its figure while it
        // is followed (another caller may sample fewer roots).
        last_cpu.retain(|root, _| tracker.follows(*root));
        *last = Some((now, tracker.cpu_times()));
    }
    out
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
        // The child's tree (itself alone): this test binary's own tree
        // also holds other tests' short-lived children, and one that ends
        // between the tree's read and its PSS read makes that tree fall
        // back to RSS, as designed.
        #[cfg(target_os = "linux")]
        assert_eq!(its.memory_kind, MemoryKind::Pss);
        assert_eq!(mine.cpu_percent, None, "one sample has no interval");
        child.kill().expect("kill");
        child.wait().expect("reaped");
        let after = probe.sample(&[me, child.id()]);
        assert!(!after.contains_key(&child.id()), "a gone root has no cost");
    }

    #[test]
    fn a_child_started_after_a_sample_joins_the_tree_and_leaves_when_it_ends() {
        let me = std::process::id();
        let mut probe = CostProbe::new().expect("a probe");
        probe.sample(&[me]);
        let mut child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep");
        let kid = child.id();
        probe.sample(&[me]);
        let tree = probe.tracker.tree(me).expect("followed");
        assert!(tree.contains(&kid), "{kid} not in {tree:?}");
        child.kill().expect("kill");
        child.wait().expect("reaped");
        probe.sample(&[me]);
        let tree = probe.tracker.tree(me).expect("followed");
        assert!(!tree.contains(&kid), "{kid} still in {tree:?}");
    }

    #[test]
    fn no_roots_reads_nothing() {
        let mut probe = CostProbe::new().expect("a probe");
        assert!(probe.sample(&[]).is_empty());
        assert!(!probe.tracker.follows(std::process::id()));
        assert!(probe.last.is_none());
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
}
