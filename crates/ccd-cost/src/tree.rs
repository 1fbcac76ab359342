//! The process trees a probe follows, without IO: which processes are
//! under each root, kept from one sample to the next so that a sample
//! reads the trees it reports on and the processes started since the
//! sample before, not every process on the machine.
//!
//! The platform's process table is behind [`Source`]. A [`Tracker`]
//! updates its trees in one of two ways:
//! - **incremental** (where the platform names the last pid it handed
//!   out, Linux's `ns_last_pid`): every known member is read again (gone,
//!   or its pid reused, it leaves), then every pid handed out since the
//!   last sample is read once, and a process among them whose parent is a
//!   member joins (a thread's id is skipped: pids and thread ids share one
//!   space). Members no root reaches any more (reparented away when their
//!   parent ended) leave. The cost is the trees' size plus the pids handed
//!   out in between, whatever runs beside them.
//! - **full**: every process on the machine is read and the trees are
//!   built from their parents. Done at the first sample, where the
//!   platform does not name its last pid, when a root the tracker does not
//!   follow yet is asked for (its children may predate the last sample),
//!   when more than [`MAX_PROBE`] pids were handed out since the last
//!   sample or the pid counter wrapped, and at least every
//!   [`FULL_SCAN_EVERY`] (a counter that went all the way round between
//!   two samples cannot be told apart from one that moved a little).
//!
//! Memory: a process's PSS is read (the expensive read: the kernel walks
//! its page tables) when first seen, again once its resident size moved
//! by more than an eighth since that read, after a followed root started
//! or ended (a session's executable and libraries are shared with the
//! others: their share in each moves when sessions come and go), and at
//! least every [`PSS_MAX_AGE`]; in between, the PSS read plus the resident
//! size's change since (pages a process gains are mostly its own).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// At most this many pids handed out since the last sample are read one
/// by one; more, and the sample reads the whole table instead.
pub const MAX_PROBE: u32 = 4096;

/// The trees are rebuilt from the whole table at least this often.
pub const FULL_SCAN_EVERY: Duration = Duration::from_secs(600);

/// A root is followed for this long after it was last asked for (while
/// its process lives); then it and its tree are forgotten.
pub const TRACK_FOR: Duration = Duration::from_secs(600);

/// A process's PSS is read again at least this often.
pub const PSS_MAX_AGE: Duration = Duration::from_secs(300);

/// What a sample reads of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    /// When it started, in the platform's unit: with the pid, it names one
    /// process (a reused pid has another start).
    pub start: u64,
    /// CPU time used so far (user + system), in ms.
    pub cpu_ms: u64,
    /// Resident set size, in bytes.
    pub rss_bytes: u64,
}

/// The platform's process table.
pub trait Source {
    /// The last pid the system handed out; `None` where the platform does
    /// not say (then every sample reads the whole table).
    fn last_pid(&mut self) -> Option<u32>;
    /// Every process on the machine now (not threads).
    fn all_pids(&mut self) -> Vec<u32>;
    /// One process (or thread id) now; `None` when there is none.
    fn stat(&mut self, pid: u32) -> Option<ProcStat>;
    /// Whether `pid` is a process, not a thread of another one.
    fn is_process(&mut self, pid: u32) -> bool;
    /// The process's proportional set size in bytes; `None` when it
    /// cannot be read.
    fn pss(&mut self, pid: u32) -> Option<u64>;
}

/// The last PSS read of one process.
#[derive(Debug, Clone, Copy)]
struct PssRead {
    bytes: Option<u64>,
    rss_at: u64,
    at: Instant,
}

#[derive(Debug, Clone)]
struct Member {
    stat: ProcStat,
    pss: Option<PssRead>,
}

/// How a [`Tracker::update`] went (for tests and traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    Incremental { probed: u32 },
    Full { processes: usize },
}

/// The trees under the roots asked for lately, and what was last read of
/// each of their processes.
#[derive(Debug, Default)]
pub struct Tracker {
    members: HashMap<u32, Member>,
    children: HashMap<u32, Vec<u32>>,
    /// Each followed root and when it was last asked for.
    roots: HashMap<u32, Instant>,
    last_pid: Option<u32>,
    last_full: Option<Instant>,
    /// When the live followed roots last changed (a PSS read before is
    /// stale).
    roots_moved: Option<Instant>,
}

impl Tracker {
    /// Brings the trees up to date for a sample of `asked` at `now`.
    pub fn update(&mut self, src: &mut impl Source, asked: &[u32], now: Instant) -> Update {
        let live_before = self.live_roots();
        let mut new_roots = Vec::new();
        for &r in asked {
            if self.roots.insert(r, now).is_none() && !self.members.contains_key(&r) {
                new_roots.push(r);
            }
        }
        self.roots
            .retain(|_, at| now.saturating_duration_since(*at) < TRACK_FOR);
        let last = src.last_pid();
        let range = match (self.last_pid, last) {
            (Some(before), Some(now)) if now >= before && now - before <= MAX_PROBE => {
                Some((before, now))
            }
            _ => None,
        };
        let due = self
            .last_full
            .is_none_or(|t| now.saturating_duration_since(t) >= FULL_SCAN_EVERY);
        // A new root that exists may have children from before the last
        // sample: only the whole table shows them.
        let full = due || range.is_none() || new_roots.into_iter().any(|r| src.stat(r).is_some());
        let how = match range {
            Some((before, last)) if !full => {
                self.incremental(src, before, last);
                Update::Incremental {
                    probed: last - before,
                }
            }
            _ => {
                self.last_full = Some(now);
                Update::Full {
                    processes: self.full(src),
                }
            }
        };
        self.last_pid = last;
        self.prune();
        if self.live_roots() != live_before {
            self.roots_moved = Some(now);
        }
        how
    }

    /// The followed roots that are live processes, in order.
    fn live_roots(&self) -> Vec<u32> {
        let mut live: Vec<u32> = self
            .roots
            .keys()
            .copied()
            .filter(|r| self.members.contains_key(r))
            .collect();
        live.sort_unstable();
        live
    }

    /// Reads the whole table and rebuilds the trees from it.
    fn full(&mut self, src: &mut impl Source) -> usize {
        let table: HashMap<u32, ProcStat> = src
            .all_pids()
            .into_iter()
            .filter_map(|p| src.stat(p).map(|s| (p, s)))
            .collect();
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&pid, s) in &table {
            children.entry(s.ppid).or_default().push(pid);
        }
        let mut keep = HashSet::new();
        for &root in self.roots.keys() {
            if table.contains_key(&root) {
                keep.extend(walk(root, &children));
            }
        }
        let mut members = HashMap::with_capacity(keep.len());
        for pid in keep {
            let stat = table[&pid];
            // The PSS read stays if the pid still names the same process.
            let pss = self
                .members
                .get(&pid)
                .filter(|m| m.stat.start == stat.start)
                .and_then(|m| m.pss);
            members.insert(pid, Member { stat, pss });
        }
        self.members = members;
        table.len()
    }

    /// Reads the members again and the pids in `(before, last]`.
    fn incremental(&mut self, src: &mut impl Source, before: u32, last: u32) {
        self.members.retain(|&pid, m| match src.stat(pid) {
            Some(s) if s.start == m.stat.start => {
                m.stat = s;
                true
            }
            _ => false,
        });
        let mut fresh: BTreeMap<u32, ProcStat> = (before.saturating_add(1)..=last)
            .filter(|p| !self.members.contains_key(p))
            .filter_map(|p| src.stat(p).map(|s| (p, s)))
            .collect();
        // A child's parent may itself be fresh: join until nothing moves.
        loop {
            let joining: Vec<u32> = fresh
                .iter()
                .filter(|(_, s)| self.members.contains_key(&s.ppid))
                .map(|(&p, _)| p)
                .collect();
            if joining.is_empty() {
                break;
            }
            for pid in joining {
                if let Some(stat) = fresh.remove(&pid) {
                    if src.is_process(pid) {
                        self.members.insert(pid, Member { stat, pss: None });
                    }
                }
            }
        }
    }

    /// Drops the members no followed root reaches, and the roots that are
    /// gone; rebuilds the child lists.
    fn prune(&mut self) {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&pid, m) in &self.members {
            if m.stat.ppid != pid {
                children.entry(m.stat.ppid).or_default().push(pid);
            }
        }
        self.roots.retain(|r, _| self.members.contains_key(r));
        let mut reached = HashSet::new();
        for &root in self.roots.keys() {
            reached.extend(walk(root, &children));
        }
        self.members.retain(|p, _| reached.contains(p));
        for kids in children.values_mut() {
            kids.retain(|k| reached.contains(k));
        }
        children.retain(|p, kids| reached.contains(p) && !kids.is_empty());
        self.children = children;
    }

    /// `root` and every process under it, each once; `None` when the root
    /// is not a live process followed by this tracker.
    pub fn tree(&self, root: u32) -> Option<Vec<u32>> {
        self.members
            .contains_key(&root)
            .then(|| walk(root, &self.children))
    }

    /// What was last read of a member.
    pub fn stat(&self, pid: u32) -> Option<&ProcStat> {
        self.members.get(&pid).map(|m| &m.stat)
    }

    /// Every member with its start and CPU time (for the next CPU figure).
    pub fn cpu_times(&self) -> HashMap<u32, (u64, u64)> {
        self.members
            .iter()
            .map(|(&p, m)| (p, (m.stat.start, m.stat.cpu_ms)))
            .collect()
    }

    /// The members' PSS summed (read again where stale, see the module
    /// header); `None` when one of them has none.
    pub fn pss_of(&mut self, src: &mut impl Source, tree: &[u32], now: Instant) -> Option<u64> {
        let mut sum = 0u64;
        for &pid in tree {
            let m = self.members.get_mut(&pid)?;
            let rss = m.stat.rss_bytes;
            let stale = m.pss.is_none_or(|r| {
                now.saturating_duration_since(r.at) >= PSS_MAX_AGE
                    || self.roots_moved.is_some_and(|t| r.at < t)
                    || rss.abs_diff(r.rss_at) > r.rss_at / 8
            });
            if stale {
                // Nothing resident, no share of anything (a zombie has no
                // memory map to read).
                let bytes = if rss == 0 { Some(0) } else { src.pss(pid) };
                m.pss = Some(PssRead {
                    bytes,
                    rss_at: rss,
                    at: now,
                });
            }
            let r = m.pss?;
            let moved = rss as i128 - r.rss_at as i128;
            sum += (r.bytes? as i128 + moved).max(0) as u64;
        }
        Some(sum)
    }

    /// The members' RSS summed.
    pub fn rss_of(&self, tree: &[u32]) -> u64 {
        tree.iter()
            .filter_map(|p| self.members.get(p))
            .map(|m| m.stat.rss_bytes)
            .sum()
    }

    /// Whether `pid` is a followed root.
    pub fn follows(&self, pid: u32) -> bool {
        self.roots.contains_key(&pid)
    }
}

/// `root` and every process under it in `children`, each once.
fn walk(root: u32, children: &HashMap<u32, Vec<u32>>) -> Vec<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A process table in memory, counting what a sample reads.
    #[derive(Default)]
    struct Fake {
        procs: BTreeMap<u32, ProcStat>,
        /// Thread ids: (tid, its process).
        threads: HashMap<u32, u32>,
        last: u32,
        names_last: bool,
        stats: u32,
        scans: u32,
        pss_reads: u32,
    }

    impl Fake {
        fn new() -> Self {
            Self {
                names_last: true,
                last: 300,
                ..Default::default()
            }
        }
        /// A new process under `ppid` (the next pid, as Linux hands them out).
        fn spawn(&mut self, ppid: u32) -> u32 {
            self.last += 1;
            self.procs.insert(
                self.last,
                ProcStat {
                    ppid,
                    start: self.last as u64,
                    cpu_ms: 0,
                    rss_bytes: 1 << 20,
                },
            );
            self.last
        }
        fn thread(&mut self, of: u32) -> u32 {
            self.last += 1;
            self.threads.insert(self.last, of);
            self.last
        }
        fn end(&mut self, pid: u32) {
            self.procs.remove(&pid);
            // Its children go to init.
            for s in self.procs.values_mut() {
                if s.ppid == pid {
                    s.ppid = 1;
                }
            }
        }
        fn reset_counts(&mut self) {
            (self.stats, self.scans, self.pss_reads) = (0, 0, 0);
        }
    }

    impl Source for Fake {
        fn last_pid(&mut self) -> Option<u32> {
            self.names_last.then_some(self.last)
        }
        fn all_pids(&mut self) -> Vec<u32> {
            self.scans += 1;
            self.procs.keys().copied().collect()
        }
        fn stat(&mut self, pid: u32) -> Option<ProcStat> {
            self.stats += 1;
            if let Some(&of) = self.threads.get(&pid) {
                // A thread reads as its process does.
                return self.procs.get(&of).copied();
            }
            self.procs.get(&pid).copied()
        }
        fn is_process(&mut self, pid: u32) -> bool {
            self.procs.contains_key(&pid)
        }
        fn pss(&mut self, pid: u32) -> Option<u64> {
            self.pss_reads += 1;
            self.procs.get(&pid).map(|s| s.rss_bytes / 2)
        }
    }

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort_unstable();
        v
    }

    #[test]
    fn a_sample_reads_the_trees_not_the_machine() {
        let mut f = Fake::new();
        let holder = f.spawn(1);
        let root = f.spawn(holder);
        let shell = f.spawn(root);
        let t0 = Instant::now();
        let mut t = Tracker::default();
        assert!(matches!(t.update(&mut f, &[root], t0), Update::Full { .. }));
        assert_eq!(sorted(t.tree(root).unwrap()), [root, shell]);

        // 5,000 unrelated processes start, and one more child of the root.
        for _ in 0..5000 {
            f.spawn(1);
        }
        let mcp = f.spawn(root);
        // More pids than a sample probes: the whole table once.
        let at = t0 + Duration::from_secs(5);
        assert!(matches!(t.update(&mut f, &[root], at), Update::Full { .. }));
        assert_eq!(sorted(t.tree(root).unwrap()), [root, shell, mcp]);

        // Then only the tree and what started since is read.
        let grandchild = f.spawn(mcp);
        for _ in 0..10 {
            f.spawn(1);
        }
        f.reset_counts();
        let at = at + Duration::from_secs(5);
        assert_eq!(
            t.update(&mut f, &[root], at),
            Update::Incremental { probed: 11 }
        );
        assert_eq!(f.scans, 0, "no scan of the machine");
        assert!(f.stats <= 3 + 11, "{} reads for a tree of 4", f.stats);
        assert_eq!(
            sorted(t.tree(root).unwrap()),
            [root, shell, mcp, grandchild]
        );

        // Nothing new: the tree's reads only.
        f.reset_counts();
        t.update(&mut f, &[root], at + Duration::from_secs(5));
        assert_eq!((f.stats, f.scans), (4, 0));
    }

    #[test]
    fn children_of_children_started_between_samples_join_and_threads_do_not() {
        let mut f = Fake::new();
        let root = f.spawn(1);
        let t0 = Instant::now();
        let mut t = Tracker::default();
        t.update(&mut f, &[root], t0);
        let a = f.spawn(root);
        // A pid handed out now and taken below by a grandchild, so that
        // the grandchild's pid is lower than its parent's (after a wrap,
        // or with pids reserved in between).
        f.last += 1;
        let low = f.last;
        let b = f.spawn(a);
        let tid = f.thread(a);
        let c = f.spawn(b);
        f.procs.insert(
            low,
            ProcStat {
                ppid: c,
                start: low as u64,
                cpu_ms: 0,
                rss_bytes: 0,
            },
        );
        let d = f.spawn(low);
        let r = t.update(&mut f, &[root], t0 + Duration::from_secs(5));
        assert!(matches!(r, Update::Incremental { .. }));
        let tree = sorted(t.tree(root).unwrap());
        assert!(tree.contains(&b) && tree.contains(&c) && tree.contains(&low) && tree.contains(&d));
        assert!(!tree.contains(&tid), "a thread is not a process: {tree:?}");
        assert_eq!(tree.len(), 6, "{tree:?}");
    }

    #[test]
    fn a_process_that_ends_takes_its_orphans_out_and_a_reused_pid_is_not_a_member() {
        let mut f = Fake::new();
        let root = f.spawn(1);
        let mid = f.spawn(root);
        let leaf = f.spawn(mid);
        let t0 = Instant::now();
        let mut t = Tracker::default();
        t.update(&mut f, &[root], t0);
        assert_eq!(t.tree(root).unwrap().len(), 3);
        f.end(mid);
        t.update(&mut f, &[root], t0 + Duration::from_secs(5));
        assert_eq!(t.tree(root).unwrap(), [root], "the orphan went to init");
        // `leaf`'s pid now names another process, unrelated.
        f.procs.insert(
            leaf,
            ProcStat {
                ppid: 1,
                start: 99_999,
                cpu_ms: 0,
                rss_bytes: 1,
            },
        );
        t.update(&mut f, &[root], t0 + Duration::from_secs(10));
        assert_eq!(t.tree(root).unwrap(), [root]);
        // The root ends: no tree, and the root is no longer followed.
        f.end(root);
        t.update(&mut f, &[root], t0 + Duration::from_secs(15));
        assert_eq!(t.tree(root), None);
        assert!(!t.follows(root));
    }

    #[test]
    fn a_new_root_a_wrap_or_a_platform_without_a_last_pid_reads_the_table() {
        let mut f = Fake::new();
        let a = f.spawn(1);
        let b = f.spawn(1);
        let b_kid = f.spawn(b);
        let t0 = Instant::now();
        let mut t = Tracker::default();
        t.update(&mut f, &[a], t0);
        let at = t0 + Duration::from_secs(5);
        assert!(matches!(
            t.update(&mut f, &[a], at),
            Update::Incremental { .. }
        ));
        // `b` was never asked for: its child predates the last sample.
        let at = at + Duration::from_secs(5);
        assert!(matches!(t.update(&mut f, &[a, b], at), Update::Full { .. }));
        assert_eq!(sorted(t.tree(b).unwrap()), [b, b_kid]);
        // A pid that is no process costs no scan.
        let at = at + Duration::from_secs(5);
        assert!(matches!(
            t.update(&mut f, &[a, b, 7_000_000], at),
            Update::Incremental { .. }
        ));
        // The counter wrapped.
        f.last = 200;
        let at = at + Duration::from_secs(5);
        assert!(matches!(t.update(&mut f, &[a, b], at), Update::Full { .. }));
        // Past the full-scan period.
        let at = at + FULL_SCAN_EVERY;
        assert!(matches!(t.update(&mut f, &[a, b], at), Update::Full { .. }));
        // No last pid: the table every time.
        f.names_last = false;
        let at = at + Duration::from_secs(5);
        assert!(matches!(t.update(&mut f, &[a, b], at), Update::Full { .. }));
        assert!(matches!(t.update(&mut f, &[a, b], at), Update::Full { .. }));
    }

    #[test]
    fn a_root_not_asked_for_is_forgotten_after_a_while() {
        let mut f = Fake::new();
        let a = f.spawn(1);
        let b = f.spawn(1);
        let t0 = Instant::now();
        let mut t = Tracker::default();
        t.update(&mut f, &[a, b], t0);
        t.update(&mut f, &[a], t0 + TRACK_FOR / 2);
        assert!(t.follows(b), "asked for lately");
        t.update(&mut f, &[a], t0 + TRACK_FOR);
        assert!(!t.follows(b));
        assert_eq!(t.tree(b), None);
        f.reset_counts();
        t.update(&mut f, &[a], t0 + TRACK_FOR + Duration::from_secs(5));
        assert_eq!(f.stats, 1, "only `a` is read");
    }

    #[test]
    fn pss_is_read_again_when_stale_or_moved_and_estimated_in_between() {
        let mut f = Fake::new();
        let root = f.spawn(1);
        let t0 = Instant::now();
        let mut t = Tracker::default();
        t.update(&mut f, &[root], t0);
        let tree = t.tree(root).unwrap();
        assert_eq!(t.pss_of(&mut f, &tree, t0), Some(512 << 10));
        assert_eq!(f.pss_reads, 1);
        // Unchanged: not read again.
        let at = t0 + Duration::from_secs(5);
        t.update(&mut f, &[root], at);
        assert_eq!(t.pss_of(&mut f, &tree, at), Some(512 << 10));
        assert_eq!(f.pss_reads, 1);
        // A little more resident: estimated (the new pages counted whole).
        f.procs.get_mut(&root).unwrap().rss_bytes += 64 << 10;
        t.update(&mut f, &[root], at);
        assert_eq!(t.pss_of(&mut f, &tree, at), Some((512 + 64) << 10));
        assert_eq!(f.pss_reads, 1);
        // More than an eighth more: read again.
        f.procs.get_mut(&root).unwrap().rss_bytes = 2 << 20;
        t.update(&mut f, &[root], at);
        assert_eq!(t.pss_of(&mut f, &tree, at), Some(1 << 20));
        assert_eq!(f.pss_reads, 2);
        // Too old: read again.
        let at = at + PSS_MAX_AGE;
        t.update(&mut f, &[root], at);
        t.pss_of(&mut f, &tree, at);
        assert_eq!(f.pss_reads, 3);
        // Another root starts, and one ends: every PSS is read again.
        let other = f.spawn(1);
        let at = at + Duration::from_secs(5);
        t.update(&mut f, &[root, other], at);
        t.pss_of(&mut f, &tree, at);
        assert_eq!(f.pss_reads, 4);
        let at = at + Duration::from_secs(5);
        t.update(&mut f, &[root, other], at);
        t.pss_of(&mut f, &tree, at);
        assert_eq!(f.pss_reads, 4, "nothing moved");
        f.end(other);
        let at = at + Duration::from_secs(5);
        t.update(&mut f, &[root, other], at);
        t.pss_of(&mut f, &tree, at);
        assert_eq!(f.pss_reads, 5);
        // Nothing resident: no read.
        f.procs.get_mut(&root).unwrap().rss_bytes = 0;
        t.update(&mut f, &[root], at);
        assert_eq!(t.pss_of(&mut f, &tree, at), Some(0));
        assert_eq!(f.pss_reads, 5);
    }
}
