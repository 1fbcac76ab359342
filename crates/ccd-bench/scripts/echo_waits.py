#!/usr/bin/env python3
"""What the slow keystroke echoes of a `ccd-bench pty` run waited for.

Record the scheduler while the bench runs, with the bench's echo trace on
the same clock:

    perf record -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_waking \\
        -a -m 64M -o sched.data -- \\
        ccd-bench pty --only echo --skip raw,tmux,dtach --echo-rounds 1 \\
        --echo-trace echo.trace
    perf script -i sched.data -F comm,tid,cpu,time,event,trace > sched.txt
    crates/ccd-bench/scripts/echo_waits.py sched.txt echo.trace --case 2

For attach samples, run `--only attach --attach-trace attach.trace` the
same way and pick a contender with `--label ccd-attach` (or `cat`, `tmux`)
instead of `--case`.

`--case` picks the run of samples, in the order they were taken (one run of
`--echo-rounds 1` with ccd alone: 0 API idle, 1 attach idle, 2 attach beside
a flood, 3 API beside a flood). For each sample slower than `--over` ms it
prints every thread that waited more than 0.25 ms between being woken and
running, on which CPU, and what ran there before it; then the totals, by
what ran before and by who waited. perf's own overhead shows up too
("perf"): compare shapes, not absolute figures.
"""
import argparse
import bisect
import collections
import re

LINE = re.compile(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)$')
WAKING = re.compile(r'comm=(.*) pid=(\d+) prio=\d+ target_cpu=(\d+)')
SWITCH = re.compile(r'prev_comm=(.*) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) '
                    r'==> next_comm=(.*) next_pid=(\d+)')
WARMUP = 20


def family(comm):
    """A thread name without its instance number (kworker/u8:5 -> kworker/u8)."""
    return re.sub(r'[/:]\d.*', '', comm)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('sched', help='perf script output (comm,tid,cpu,time,event,trace)')
    ap.add_argument('trace', help="the bench's --echo-trace file")
    ap.add_argument('--case', type=int, default=2)
    ap.add_argument('--label', help="an --attach-trace's contender (ccd-attach, cat, tmux)")
    ap.add_argument('--samples', type=int, default=1000, help='--samples of the run')
    ap.add_argument('--over', type=float, default=2.0, help='slow: above this many ms')
    ap.add_argument('--show', type=int, default=10, help='slow samples printed in full')
    a = ap.parse_args()

    rows = [l.split() for l in open(a.trace)]
    if a.label:
        case = [(float(r[0]), float(r[1])) for r in rows if r[2:] == [a.label]]
        if not case:
            raise SystemExit(f'no {a.label} samples in {a.trace} ({len(rows)} lines)')
    else:
        per_case = a.samples + WARMUP
        samples = [(float(r[0]), float(r[1])) for r in rows]
        case = samples[a.case * per_case + WARMUP:(a.case + 1) * per_case]
        if not case:
            raise SystemExit(f'no case {a.case} in {a.trace} ({len(samples)} lines)')
    lat = sorted(s[1] for s in case)
    print(f'{a.label or "case %d" % a.case}: {len(lat)} samples, p50 {lat[len(lat) // 2]:.3f} ms, '
          f'p99 {lat[int(len(lat) * 0.99)]:.3f} ms, max {lat[-1]:.3f} ms')

    lo, hi = case[0][0] - 0.01, case[-1][0] + 0.1
    events = []
    for line in open(a.sched):
        m = LINE.match(line)
        if not m:
            continue
        t = float(m.group(4))
        if t < lo:
            continue
        if t > hi:
            break
        events.append((t, int(m.group(3)), m.group(1).strip(), m.group(5), m.group(6)))
    times = [e[0] for e in events]

    by_before = collections.Counter()
    by_waiter = collections.Counter()
    shown = 0
    slow = [s for s in case if s[1] > a.over]
    print(f'{len(slow)} samples over {a.over} ms')
    for t0, ms in slow:
        i = bisect.bisect_left(times, t0)
        j = bisect.bisect_right(times, t0 + ms / 1000)
        woken = {}
        waits = []
        for t, cpu, comm, kind, rest in events[i:j]:
            if kind == 'sched_waking':
                m = WAKING.search(rest)
                if m:
                    woken[int(m.group(2))] = (t, int(m.group(3)), m.group(1), comm)
                continue
            m = SWITCH.search(rest)
            if not m:
                continue
            nxt = int(m.group(5))
            if nxt not in woken:
                continue
            tw, target, name, waker = woken.pop(nxt)
            wait = (t - tw) * 1000
            if wait > 0.25:
                waits.append(f'  {name:<16} waited {wait:.2f} ms (woken by {waker} onto cpu{target}, '
                             f'ran on cpu{cpu} after {m.group(1)})')
                by_before[(family(m.group(1)), 'same cpu' if target == cpu else 'moved')] += wait
                by_waiter[family(name)] += wait
        if shown < a.show:
            shown += 1
            print(f'--- {ms:.3f} ms at {t0:.6f}')
            print('\n'.join(waits) if waits else '  (no single wait over 0.25 ms)')
    print('ms waited, by what ran before on that cpu:')
    for (comm, where), ms in by_before.most_common(12):
        print(f'  {comm:<20} {where:<9} {ms:8.1f}')
    print('ms waited, by who waited:')
    for comm, ms in by_waiter.most_common(12):
        print(f'  {comm:<20} {ms:8.1f}')


if __name__ == '__main__':
    main()
