//! The idle cost of held sessions: how often the daemon, each holder and
//! each (fake) claude wake up, and how much CPU they take, while nothing
//! happens — no client attached, no output, no request.
//!
//! Every thread of each process is read twice, a stated window apart:
//! `/proc/<pid>/task/<tid>/status` (`voluntary_ctxt_switches` +
//! `nonvoluntary_ctxt_switches`: each is the thread coming off the CPU, so
//! their sum counts its wakeups), `/proc/<pid>/task/<tid>/stat` (`utime` +
//! `stime`, in clock ticks) and `/proc/<pid>/task/<tid>/schedstat` (time on
//! the CPU in ns, when the kernel keeps it: the ticks are too coarse for an
//! idle thread). Reading `/proc` wakes nobody. A thread that starts within
//! the window counts from zero; one that ends within it is lost, and
//! counted (`threads_ended`). Threads are grouped by name (`comm`), so the
//! report says which ones wake.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// One thread's counters.
#[derive(Debug, Clone)]
struct ThreadCount {
    comm: String,
    switches: u64,
    /// Of which involuntary (preempted while runnable).
    preempted: u64,
    ticks: u64,
    run_ns: Option<u64>,
}

/// Every thread of one process, by tid.
type ProcCount = HashMap<u32, ThreadCount>;

fn read_thread(pid: u32, tid: u32) -> Option<ThreadCount> {
    let base = format!("/proc/{pid}/task/{tid}");
    let status = std::fs::read_to_string(format!("{base}/status")).ok()?;
    let field = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let preempted = field("nonvoluntary_ctxt_switches:");
    let switches = field("voluntary_ctxt_switches:") + preempted;
    let comm = status
        .lines()
        .find_map(|l| l.strip_prefix("Name:"))
        .map(|n| n.trim().to_string())
        .unwrap_or_default();
    let stat = std::fs::read_to_string(format!("{base}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    let run_ns = std::fs::read_to_string(format!("{base}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()));
    Some(ThreadCount {
        comm,
        switches,
        preempted,
        ticks,
        run_ns,
    })
}

/// The CPU time of `pid`'s threads by name now, in ms (the scheduler's
/// ns when the kernel keeps them, else ticks): for a split of a process's
/// CPU by thread between two readings.
pub(crate) fn cpu_ms_by_thread(pid: u32) -> BTreeMap<String, f64> {
    let hz = (super::clock_ticks() as f64).max(1.0);
    let mut out = BTreeMap::new();
    for t in read_process(pid).into_values() {
        let ms = match t.run_ns {
            Some(ns) => ns as f64 / 1e6,
            None => t.ticks as f64 * 1000.0 / hz,
        };
        *out.entry(t.comm).or_insert(0.0) += ms;
    }
    out
}

/// Every thread of `pid` now (empty when the process is gone).
fn read_process(pid: u32) -> ProcCount {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return HashMap::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter_map(|tid| read_thread(pid, tid).map(|c| (tid, c)))
        .collect()
}

/// Wakeups and CPU of the threads of one name, per second of the window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ThreadGroup {
    pub comm: String,
    /// Threads of this name (at the end of the window, summed over the
    /// group's processes).
    pub threads: usize,
    pub wakeups_per_s: f64,
    /// Of those, involuntary switches (preempted while runnable: they
    /// grow with the machine's load, not with the process's own timers).
    pub preempted_per_s: f64,
    /// utime + stime (clock ticks: coarse).
    pub cpu_ms_per_s: f64,
    /// Time on the CPU from schedstat (ns precision), when available.
    pub run_ms_per_s: Option<f64>,
}

/// One process over the window.
#[derive(Debug, Clone, Serialize)]
pub struct ProcIdle {
    pub pid: u32,
    pub wakeups_per_s: f64,
    pub preempted_per_s: f64,
    pub cpu_ms_per_s: f64,
    pub run_ms_per_s: Option<f64>,
    /// By thread name, most wakeups first.
    pub threads: Vec<ThreadGroup>,
    pub threads_ended: usize,
}

fn diff(pid: u32, before: &ProcCount, after: &ProcCount, secs: f64, hz: f64) -> ProcIdle {
    let mut by: BTreeMap<String, ThreadGroup> = BTreeMap::new();
    let mut all_run = true;
    for (tid, a) in after {
        let b = before.get(tid);
        let g = by.entry(a.comm.clone()).or_insert_with(|| ThreadGroup {
            comm: a.comm.clone(),
            run_ms_per_s: Some(0.0),
            ..Default::default()
        });
        g.threads += 1;
        let sw = a.switches - b.map_or(0, |b| b.switches.min(a.switches));
        let pre = a.preempted - b.map_or(0, |b| b.preempted.min(a.preempted));
        g.preempted_per_s += pre as f64 / secs;
        let ticks = a.ticks - b.map_or(0, |b| b.ticks.min(a.ticks));
        g.wakeups_per_s += sw as f64 / secs;
        g.cpu_ms_per_s += ticks as f64 * 1000.0 / hz / secs;
        match (a.run_ns, b.map_or(Some(0), |b| b.run_ns)) {
            (Some(x), Some(y)) => {
                if let Some(r) = g.run_ms_per_s.as_mut() {
                    *r += x.saturating_sub(y) as f64 / 1e6 / secs;
                }
            }
            _ => {
                g.run_ms_per_s = None;
                all_run = false;
            }
        }
    }
    let threads_ended = before.keys().filter(|t| !after.contains_key(t)).count();
    let mut threads: Vec<ThreadGroup> = by.into_values().collect();
    threads.sort_by(|a, b| b.wakeups_per_s.total_cmp(&a.wakeups_per_s));
    ProcIdle {
        pid,
        wakeups_per_s: threads.iter().map(|t| t.wakeups_per_s).sum(),
        preempted_per_s: threads.iter().map(|t| t.preempted_per_s).sum(),
        cpu_ms_per_s: threads.iter().map(|t| t.cpu_ms_per_s).sum(),
        run_ms_per_s: all_run.then(|| threads.iter().filter_map(|t| t.run_ms_per_s).sum()),
        threads,
        threads_ended,
    }
}

/// Several processes of one kind (the holders, the claudes).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Group {
    pub processes: usize,
    pub wakeups_per_s_median: f64,
    pub wakeups_per_s_max: f64,
    pub wakeups_per_s_total: f64,
    /// Of the total, involuntary switches.
    pub preempted_per_s_total: f64,
    pub cpu_ms_per_s_median: f64,
    pub cpu_ms_per_s_max: f64,
    pub cpu_ms_per_s_total: f64,
    pub run_ms_per_s_median: Option<f64>,
    pub run_ms_per_s_max: Option<f64>,
    pub run_ms_per_s_total: Option<f64>,
    /// By thread name, summed over the processes, most wakeups first.
    pub threads: Vec<ThreadGroup>,
    pub threads_ended: usize,
    /// Processes gone before the window ended (not counted above).
    pub vanished: usize,
}

fn median_max_sum(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[n - 1], v.iter().sum())
}

fn group(procs: &[ProcIdle], vanished: usize) -> Group {
    let (wm, wx, wt) = median_max_sum(procs.iter().map(|p| p.wakeups_per_s).collect());
    let (cm, cx, ct) = median_max_sum(procs.iter().map(|p| p.cpu_ms_per_s).collect());
    let runs: Option<Vec<f64>> = procs.iter().map(|p| p.run_ms_per_s).collect();
    let run = runs.filter(|r| !r.is_empty()).map(median_max_sum);
    let mut by: BTreeMap<String, ThreadGroup> = BTreeMap::new();
    for t in procs.iter().flat_map(|p| &p.threads) {
        let g = by.entry(t.comm.clone()).or_insert_with(|| ThreadGroup {
            comm: t.comm.clone(),
            run_ms_per_s: Some(0.0),
            ..Default::default()
        });
        g.threads += t.threads;
        g.wakeups_per_s += t.wakeups_per_s;
        g.preempted_per_s += t.preempted_per_s;
        g.cpu_ms_per_s += t.cpu_ms_per_s;
        g.run_ms_per_s = g.run_ms_per_s.zip(t.run_ms_per_s).map(|(a, b)| a + b);
    }
    let mut threads: Vec<ThreadGroup> = by.into_values().collect();
    threads.sort_by(|a, b| b.wakeups_per_s.total_cmp(&a.wakeups_per_s));
    Group {
        processes: procs.len(),
        wakeups_per_s_median: wm,
        wakeups_per_s_max: wx,
        wakeups_per_s_total: wt,
        preempted_per_s_total: procs.iter().map(|p| p.preempted_per_s).sum(),
        cpu_ms_per_s_median: cm,
        cpu_ms_per_s_max: cx,
        cpu_ms_per_s_total: ct,
        run_ms_per_s_median: run.map(|r| r.0),
        run_ms_per_s_max: run.map(|r| r.1),
        run_ms_per_s_total: run.map(|r| r.2),
        threads,
        threads_ended: procs.iter().map(|p| p.threads_ended).sum(),
        vanished,
    }
}

/// The idle figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Idle {
    pub sessions: usize,
    /// How long the sessions were left alone after the last one started,
    /// before the window.
    pub settle_secs: f64,
    /// The sampled window (measured).
    pub window_secs: f64,
    pub daemon: ProcIdle,
    pub holders: Group,
    /// The fake claude under each holder, for reference (it polls its
    /// terminal with a 1 s timeout).
    pub claude: Group,
}

/// Samples `daemon`, `holders` and `claudes` over `window`.
pub fn measure(
    daemon: u32,
    holders: &[u32],
    claudes: &[u32],
    settle: Duration,
    window: Duration,
) -> Idle {
    let hz = (super::clock_ticks() as f64).max(1.0);
    let read_all =
        |pids: &[u32]| -> Vec<ProcCount> { pids.iter().map(|p| read_process(*p)).collect() };
    let t0 = Instant::now();
    let d0 = read_process(daemon);
    let h0 = read_all(holders);
    let c0 = read_all(claudes);
    std::thread::sleep(window);
    let d1 = read_process(daemon);
    let h1 = read_all(holders);
    let c1 = read_all(claudes);
    let secs = t0.elapsed().as_secs_f64();
    let procs =
        |pids: &[u32], before: &[ProcCount], after: &[ProcCount]| -> (Vec<ProcIdle>, usize) {
            let mut out = Vec::new();
            let mut vanished = 0;
            for ((pid, b), a) in pids.iter().zip(before).zip(after) {
                if a.is_empty() {
                    vanished += 1;
                } else {
                    out.push(diff(*pid, b, a, secs, hz));
                }
            }
            (out, vanished)
        };
    let (hp, hv) = procs(holders, &h0, &h1);
    let (cp, cv) = procs(claudes, &c0, &c1);
    Idle {
        sessions: holders.len(),
        settle_secs: settle.as_secs_f64(),
        window_secs: secs,
        daemon: diff(daemon, &d0, &d1, secs, hz),
        holders: group(&hp, hv),
        claude: group(&cp, cv),
    }
}

impl Idle {
    /// The text report's section.
    pub fn write(&self, o: &mut String) {
        use std::fmt::Write;
        let run = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.3}"));
        let _ = writeln!(
            o,
            "idle cost, {} held fake-claude sessions ({:.1} s window, {:.0} s after the last start)",
            self.sessions, self.window_secs, self.settle_secs
        );
        let d = &self.daemon;
        let _ = writeln!(
            o,
            "  daemon      {:>8.2} wakeups/s ({:.2} of them preempted), CPU {:.2} ms/s (utime+stime), {} ms/s on CPU (schedstat)",
            d.wakeups_per_s,
            d.preempted_per_s,
            d.cpu_ms_per_s,
            run(d.run_ms_per_s)
        );
        threads(o, &d.threads, 1);
        for (label, g) in [("holder", &self.holders), ("fake claude", &self.claude)] {
            let _ = writeln!(
                o,
                "  {label:<11} {:>8.2} wakeups/s median, {:.2} max, {:.1} for all {} ({:.1} preempted); CPU {:.2} ms/s median, {:.2} max; on CPU {} ms/s median, {} max, {} all",
                g.wakeups_per_s_median,
                g.wakeups_per_s_max,
                g.wakeups_per_s_total,
                g.processes,
                g.preempted_per_s_total,
                g.cpu_ms_per_s_median,
                g.cpu_ms_per_s_max,
                run(g.run_ms_per_s_median),
                run(g.run_ms_per_s_max),
                run(g.run_ms_per_s_total),
            );
            threads(o, &g.threads, g.processes.max(1));
            if g.vanished > 0 || g.threads_ended > 0 {
                let _ = writeln!(
                    o,
                    "    ({} processes gone, {} threads ended within the window: not counted)",
                    g.vanished, g.threads_ended
                );
            }
        }
    }
}

/// One line per thread name: wakeups/s and on-CPU ms/s per process.
fn threads(o: &mut String, ts: &[ThreadGroup], per: usize) {
    use std::fmt::Write;
    let per = per as f64;
    for t in ts {
        let _ = writeln!(
            o,
            "    {:<18} x{:<4} {:>8.3} wakeups/s ({:.3} preempted), {:>7.3} ms/s on CPU{}",
            t.comm,
            t.threads as f64 / per,
            t.wakeups_per_s / per,
            t.preempted_per_s / per,
            t.run_ms_per_s.unwrap_or(t.cpu_ms_per_s) / per,
            if per > 1.0 { " (per process)" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(comm: &str, switches: u64, ticks: u64, run_ns: u64) -> ThreadCount {
        ThreadCount {
            comm: comm.into(),
            switches,
            preempted: switches / 2,
            ticks,
            run_ns: Some(run_ns),
        }
    }

    #[test]
    fn threads_are_grouped_by_name_and_a_new_one_counts_from_zero() {
        let before: ProcCount = [
            (1, t("a", 10, 5, 1_000_000)),
            (2, t("b", 0, 0, 0)),
            (9, t("gone", 3, 0, 0)),
        ]
        .into();
        let after: ProcCount = [
            (1, t("a", 30, 5, 3_000_000)),
            (2, t("b", 4, 0, 0)),
            (3, t("a", 6, 100, 2_000_000)),
        ]
        .into();
        let p = diff(7, &before, &after, 2.0, 100.0);
        assert_eq!(p.threads_ended, 1);
        assert_eq!(p.threads[0].comm, "a");
        assert_eq!(p.threads[0].threads, 2);
        assert_eq!(p.threads[0].wakeups_per_s, 13.0);
        assert_eq!(p.threads[0].cpu_ms_per_s, 500.0);
        assert_eq!(p.threads[0].run_ms_per_s, Some(2.0));
        assert_eq!(p.wakeups_per_s, 15.0);
        assert_eq!(p.threads[0].preempted_per_s, 6.5);
        assert_eq!(p.preempted_per_s, 7.5);
    }

    #[test]
    fn this_process_is_read() {
        let me = read_process(std::process::id());
        assert!(!me.is_empty());
        assert!(me.values().all(|t| !t.comm.is_empty()));
    }

    #[test]
    fn medians_of_even_and_odd_counts() {
        assert_eq!(median_max_sum(vec![3.0, 1.0, 2.0]), (2.0, 3.0, 6.0));
        assert_eq!(median_max_sum(vec![4.0, 1.0, 2.0, 3.0]), (2.5, 4.0, 10.0));
        assert_eq!(median_max_sum(vec![]), (0.0, 0.0, 0.0));
    }
}
