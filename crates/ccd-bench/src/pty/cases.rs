//! The measurements, per contender.

use super::api::{Api, Note};
use super::ccd::{ppid, Ccd};
use super::report::{Attach, Echo, Flood, Memory};
use super::stream::Kind;
use super::term::{
    echo_loop, echo_pty, flood_through, touch, until_screen, wait_file, Latency, PtyFlood, PtyProc,
    ATTACH_TRACE, COLS, ROWS,
};
use super::tmux::{Dtach, Tmux};
use super::{parse, Ctx, Reference, Run};
use serde_json::json;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn limit(bytes: usize) -> Duration {
    Duration::from_secs(30) + Duration::from_secs_f64(bytes as f64 / 2e6)
}

/// CPU time (user + system) of `pid` so far, in ms (/proc/<pid>/stat).
fn cpu_ms(pid: Option<u32>) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    let hz = super::clock_ticks() as f64;
    Some(ticks * 1000.0 / hz.max(1.0))
}

/// (server, client) CPU ms per MB of `bytes` between two readings.
fn cpu_per_mb(
    before: [Option<f64>; 2],
    after: [Option<f64>; 2],
    bytes: usize,
) -> Option<(f64, f64)> {
    let mb = bytes as f64 / 1e6;
    Some(((after[0]? - before[0]?) / mb, (after[1]? - before[1]?) / mb))
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        bytes as f64 / 1e6 / d.as_secs_f64()
    }
}

fn pty_result(c: &str, r: &Reference, fl: PtyFlood, passthrough: bool) -> Flood {
    let received = fl.data.len() - fl.preamble;
    Flood {
        contender: c.into(),
        kind: r.kind,
        expected_bytes: r.bytes as u64,
        received_bytes: received as u64,
        seconds: fl.elapsed.as_secs_f64(),
        mb_per_s: mbps(r.bytes, fl.elapsed),
        rounds_mb_per_s: Vec::new(),
        ratio_to_raw: None,
        bytes_lost: passthrough.then_some(r.bytes as i64 - received as i64),
        resyncs: None,
        resync_bytes: None,
        screen_matches: parse(&fl.data) == r.screen,
        timed_out: fl.timed_out,
        cpu_ms_per_mb: None,
        server_peak_rss_kb: None,
        error: None,
    }
}

/// Every contender, `rounds` times, interleaved (round 1 of each, then
/// round 2 …) so that machine noise spreads over all of them.
pub fn floods(cx: &Ctx, r: &Reference, rounds: usize) -> Vec<Flood> {
    let mut all: Vec<(&str, Vec<Flood>)> = Vec::new();
    let mut cases: Vec<(&str, &dyn Fn() -> anyhow::Result<Flood>)> = Vec::new();
    let raw = || flood_raw(cx, r);
    let tmux = || flood_tmux(cx, r);
    let dtach = || flood_dtach(cx, r);
    let api = || flood_ccd_api(cx, r);
    let attach = || flood_ccd_attach(cx, r);
    cases.push(("raw", &raw));
    if cx.tmux.is_some() {
        cases.push(("tmux", &tmux));
    }
    if cx.dtach.is_some() {
        cases.push(("dtach", &dtach));
    }
    cases.push(("ccd-api", &api));
    cases.push(("ccd-attach", &attach));
    cases.retain(|(c, _)| cx.wants(c));
    for round in 1..=rounds {
        for (c, f) in &cases {
            eprint!(
                "flood {} {} MB → {c} (round {round}/{rounds})… ",
                r.kind.name(),
                r.bytes / 1_000_000
            );
            let res = f().unwrap_or_else(|e| Flood::failed(c, r.kind, &e));
            eprintln!(
                "{:.1} MB/s, screen {}{}{}",
                res.mb_per_s,
                if res.screen_matches { "ok" } else { "DIFFERS" },
                res.bytes_lost
                    .filter(|l| *l != 0)
                    .map(|l| format!(", {l} bytes lost"))
                    .unwrap_or_default(),
                res.error
                    .as_deref()
                    .map(|e| format!(", error: {e}"))
                    .unwrap_or_default()
            );
            match all.iter_mut().find(|(n, _)| n == c) {
                Some((_, v)) => v.push(res),
                None => all.push((c, vec![res])),
            }
        }
    }
    all.into_iter().map(|(_, v)| merge(v)).collect()
}

/// One row from several rounds: the median run, with the worst losses and
/// every round's throughput.
fn merge(runs: Vec<Flood>) -> Flood {
    let ok: Vec<&Flood> = runs.iter().filter(|f| f.error.is_none()).collect();
    if ok.is_empty() {
        return runs.into_iter().next().expect("one round at least");
    }
    let mut sorted = ok.clone();
    sorted.sort_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s));
    let mut m = sorted[sorted.len() / 2].clone();
    m.rounds_mb_per_s = ok.iter().map(|f| f.mb_per_s).collect();
    m.bytes_lost = ok
        .iter()
        .filter_map(|f| f.bytes_lost)
        .max_by_key(|l| l.abs());
    m.resyncs = ok.iter().map(|f| f.resyncs).sum();
    m.resync_bytes = ok.iter().map(|f| f.resync_bytes).sum();
    m.screen_matches = ok.iter().all(|f| f.screen_matches);
    let mut cpu: Vec<(f64, f64)> = ok.iter().filter_map(|f| f.cpu_ms_per_mb).collect();
    cpu.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
    m.cpu_ms_per_mb = cpu.get(cpu.len() / 2).copied();
    m.server_peak_rss_kb = ok.iter().filter_map(|f| f.server_peak_rss_kb).max();
    m.timed_out = ok.iter().any(|f| f.timed_out);
    if ok.len() < runs.len() {
        m.error = runs
            .iter()
            .find_map(|f| f.error.clone())
            .map(|e| format!("some rounds failed: {e}"));
    }
    m
}

fn flood_raw(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
    let dir = cx.dir("raw")?;
    let env = cx.env(&dir)?;
    let run = Run::new(&dir);
    let p = PtyProc::spawn(&cx.bench, &run.emit_args(r.kind, r.target, cx.seed), &env)?;
    let fl = flood_through(&p, &run.ready, &run.go, &run.done, limit(r.bytes))?;
    touch(&run.stop)?;
    Ok(pty_result("raw", r, fl, true))
}

fn flood_tmux(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
    let dir = cx.dir("tmux")?;
    let run = Run::new(&dir);
    let mut t = Tmux::new(cx.tmux.as_deref().unwrap(), &dir, cx.env(&dir)?);
    t.new_session(
        "flood",
        &cx.bench,
        &run.emit_args(r.kind, r.target, cx.seed),
    )?;
    let client = t.attach_pty("flood")?;
    t.wait_clients("flood", 1)?;
    let fl = flood_through(&client, &run.ready, &run.go, &run.done, limit(r.bytes))?;
    touch(&run.stop)?;
    drop(client);
    t.kill_server();
    Ok(pty_result("tmux", r, fl, false))
}

fn flood_dtach(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
    let dir = cx.dir("dtach")?;
    let run = Run::new(&dir);
    let mut d = Dtach::new(cx.dtach.as_deref().unwrap(), cx.env(&dir)?);
    let sock = dir.join("dtach.sock");
    d.new_session(&sock, &cx.bench, &run.emit_args(r.kind, r.target, cx.seed))?;
    let client = d.attach_pty(&sock)?;
    std::thread::sleep(Duration::from_millis(300)); // dtach says nothing on attach
    let pids = [d.master_pid(&sock), Some(client.pid)];
    let cpu0 = pids.map(cpu_ms);
    let fl = flood_through(&client, &run.ready, &run.go, &run.done, limit(r.bytes))?;
    let cpu = cpu_per_mb(cpu0, pids.map(cpu_ms), r.bytes);
    let peak = pids[0].map(|p| status_kb(p, "VmHWM:"));
    touch(&run.stop)?;
    drop(client);
    d.kill_session(&sock);
    let mut f = pty_result("dtach", r, fl, true);
    f.cpu_ms_per_mb = cpu;
    f.server_peak_rss_kb = peak;
    Ok(f)
}

fn flood_ccd_attach(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
    let dir = cx.dir("ccd-attach")?;
    let run = Run::new(&dir);
    let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, false)?;
    let res = (|| {
        let (sid, _) = c.new_session(&run.emit_args(r.kind, r.target, cx.seed), false)?;
        wait_file(&run.ready, Duration::from_secs(60))?;
        let client = c.attach_pty(&sid)?;
        c.wait_attached(&sid, 1)?;
        let pids = [c.holder_pid(&sid), Some(client.pid)];
        let cpu0 = pids.map(cpu_ms);
        let fl = flood_through(&client, &run.ready, &run.go, &run.done, limit(r.bytes))?;
        // The holder's own count for this client (still attached), and its
        // screen (the model caught up: its parse counted in its CPU).
        let drops = c.drops(&sid);
        let cpu = cpu_per_mb(cpu0, pids.map(cpu_ms), r.bytes);
        let peak = pids[0].map(|p| status_kb(p, "VmHWM:"));
        touch(&run.stop)?;
        drop(client);
        let mut f = pty_result("ccd-attach", r, fl, true);
        f.cpu_ms_per_mb = cpu;
        f.server_peak_rss_kb = peak;
        if let Some((dropped, resyncs)) = drops {
            f.bytes_lost = Some(dropped as i64);
            f.resyncs = Some(resyncs);
        }
        Ok(f)
    })();
    c.stop();
    res
}

fn flood_ccd_api(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
    let dir = cx.dir("ccd-api")?;
    let run = Run::new(&dir);
    let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, false)?;
    let res = (|| {
        let (sid, _) = c.new_session(&run.emit_args(r.kind, r.target, cx.seed), false)?;
        wait_file(&run.ready, Duration::from_secs(60))?;
        let mut api = c.api()?;
        let (seq0, data) = Ccd::api_attach(&mut api, &sid)?;
        // What a terminal would be given, in order; parsed afterwards (as
        // for the PTY clients) so the parse does not slow the client.
        let mut shown = Vec::with_capacity(r.bytes + (1 << 20));
        shown.extend_from_slice(&data);
        let end = seq0 + r.bytes as u64;
        let mut expected = seq0;
        let (mut got, mut resyncs, mut resync_bytes) = (0u64, 0u64, 0u64);
        let mut last = None;
        let t0 = Instant::now();
        touch(&run.go)?;
        let deadline = t0 + limit(r.bytes);
        let mut timed_out = false;
        while expected < end {
            if Instant::now() > deadline {
                timed_out = true;
                break;
            }
            match api.next_note(Duration::from_millis(200))? {
                Some(Note::Output { seq, data }) => {
                    if seq == expected {
                        shown.extend_from_slice(&data);
                        expected += data.len() as u64;
                        got += data.len() as u64;
                        last = Some(Instant::now());
                    }
                    // seq > expected: dropped; the resync that follows says where.
                }
                Some(Note::Resync { seq, data, .. }) => {
                    resyncs += 1;
                    resync_bytes += data.len() as u64;
                    shown.extend_from_slice(&data);
                    expected = seq;
                    last = Some(Instant::now());
                }
                Some(Note::Exited) => break,
                Some(Note::Other) => {}
                None => {
                    if run.done.exists()
                        && last.is_some_and(|l| l.elapsed() > Duration::from_secs(2))
                    {
                        break;
                    }
                }
            }
        }
        touch(&run.stop)?;
        api.close();
        let elapsed = last.map(|l| l - t0).unwrap_or_default();
        Ok(Flood {
            contender: "ccd-api".into(),
            kind: r.kind,
            expected_bytes: r.bytes as u64,
            received_bytes: got,
            seconds: elapsed.as_secs_f64(),
            mb_per_s: mbps(r.bytes, elapsed),
            rounds_mb_per_s: Vec::new(),
            ratio_to_raw: None,
            bytes_lost: Some(r.bytes as i64 - got as i64),
            resyncs: Some(resyncs),
            resync_bytes: Some(resync_bytes),
            screen_matches: parse(&shown) == r.screen,
            timed_out,
            cpu_ms_per_mb: None,
            server_peak_rss_kb: None,
            error: None,
        })
    })();
    c.stop();
    res
}

/// Keystroke echo through every contender, idle and beside a sibling
/// flood, in `cx.echo_rounds` rounds of `samples / rounds` each, the
/// contenders' order reversed every other round and the rounds' samples
/// pooled: a machine that drifts during the run (a noisy VM does) weighs
/// on every contender alike.
pub fn echoes(cx: &Ctx) -> Vec<Echo> {
    let rounds = cx.echo_rounds.max(1);
    let n = cx.samples.div_ceil(rounds);
    let mut runs = Vec::new();
    for r in 0..rounds {
        if rounds > 1 {
            eprintln!("echo round {}/{rounds}…", r + 1);
        }
        runs.extend(echo_round(cx, n, r % 2 == 1));
    }
    pool_echoes(runs)
}

/// One contender's rounds as one row: every sample pooled, the first error
/// kept.
fn pool_echoes(runs: Vec<Echo>) -> Vec<Echo> {
    let mut names: Vec<String> = Vec::new();
    for e in &runs {
        if !names.contains(&e.contender) {
            names.push(e.contender.clone());
        }
    }
    names
        .into_iter()
        .map(|c| {
            let mine: Vec<&Echo> = runs.iter().filter(|e| e.contender == c).collect();
            let pooled = |f: fn(&Echo) -> Option<&Latency>| {
                let parts: Vec<&Latency> = mine.iter().filter_map(|e| f(e)).collect();
                (!parts.is_empty()).then(|| Latency::pooled(parts))
            };
            Echo {
                idle: pooled(|e| e.idle.as_ref()),
                sibling_flood: pooled(|e| e.sibling_flood.as_ref()),
                error: mine.iter().find_map(|e| e.error.clone()),
                contender: c,
            }
        })
        .collect()
}

/// A PTY contender's echo row from `f` (idle, then beside a flood).
fn pty_echo(cx: &Ctx, c: &str, f: &dyn Fn() -> anyhow::Result<(Latency, Latency)>) -> Vec<Echo> {
    if !cx.wants(c) {
        return Vec::new();
    }
    eprintln!("echo → {c}…");
    vec![match f() {
        Ok((idle, flood)) => Echo {
            contender: c.into(),
            idle: Some(idle),
            sibling_flood: Some(flood),
            error: None,
        },
        Err(e) => Echo {
            contender: c.into(),
            idle: None,
            sibling_flood: None,
            error: Some(format!("{e:#}")),
        },
    }]
}

/// Every contender once, `n` samples each, in order or reversed.
fn echo_round(cx: &Ctx, n: usize, reverse: bool) -> Vec<Echo> {
    let mut cases: Vec<Box<dyn Fn() -> Vec<Echo> + '_>> = Vec::new();
    cases.push(Box::new(move || {
        pty_echo(cx, "raw", &|| {
            let dir = cx.dir("echo-raw")?;
            let env = cx.env(&dir)?;
            let run = Run::new(&dir);
            let mut e = PtyProc::spawn(&cx.bench, &run.echo_args(), &env)?;
            wait_file(&run.ready, Duration::from_secs(10))?;
            let idle = echo_pty(&mut e, n)?;
            let frun = Run::new(&cx.dir("echo-raw-flood")?);
            let f = PtyProc::spawn(&cx.bench, &frun.sibling_args(cx.seed), &env)?;
            let _drain = f.collector(false); // drains until dropped
            std::thread::sleep(Duration::from_millis(500));
            let flood = echo_pty(&mut e, n);
            touch(&frun.stop)?;
            Ok((idle, flood?))
        })
    }));
    if let Some(bin) = &cx.tmux {
        cases.push(Box::new(move || {
            pty_echo(cx, "tmux", &|| {
                let dir = cx.dir("echo-tmux")?;
                let run = Run::new(&dir);
                let frun = Run::new(&cx.dir("echo-tmux-flood")?);
                let mut t = Tmux::new(bin, &dir, cx.env(&dir)?);
                t.new_session("echo", &cx.bench, &run.echo_args())?;
                let mut client = t.attach_pty("echo")?;
                t.wait_clients("echo", 1)?;
                wait_file(&run.ready, Duration::from_secs(10))?;
                std::thread::sleep(Duration::from_millis(200));
                let idle = echo_pty(&mut client, n)?;
                t.new_session("flood", &cx.bench, &frun.sibling_args(cx.seed))?;
                let fc = t.attach_pty("flood")?;
                let _drain = fc.collector(false); // drains until dropped
                t.wait_clients("flood", 1)?;
                std::thread::sleep(Duration::from_millis(500));
                let flood = echo_pty(&mut client, n);
                touch(&frun.stop)?;
                t.kill_server();
                Ok((idle, flood?))
            })
        }));
    }
    if let Some(bin) = &cx.dtach {
        cases.push(Box::new(move || {
            pty_echo(cx, "dtach", &|| {
                let dir = cx.dir("echo-dtach")?;
                let run = Run::new(&dir);
                let frun = Run::new(&cx.dir("echo-dtach-flood")?);
                let mut d = Dtach::new(bin, cx.env(&dir)?);
                let (s1, s2) = (dir.join("echo.sock"), dir.join("flood.sock"));
                d.new_session(&s1, &cx.bench, &run.echo_args())?;
                let mut client = d.attach_pty(&s1)?;
                wait_file(&run.ready, Duration::from_secs(10))?;
                std::thread::sleep(Duration::from_millis(300));
                let idle = echo_pty(&mut client, n)?;
                d.new_session(&s2, &cx.bench, &frun.sibling_args(cx.seed))?;
                let fc = d.attach_pty(&s2)?;
                let _drain = fc.collector(false); // drains until dropped
                std::thread::sleep(Duration::from_millis(500));
                let flood = echo_pty(&mut client, n);
                touch(&frun.stop)?;
                d.kill_session(&s1);
                d.kill_session(&s2);
                Ok((idle, flood?))
            })
        }));
    }
    cases.push(Box::new(move || {
        if !(cx.wants("ccd-api") || cx.wants("ccd-attach")) {
            return Vec::new();
        }
        eprintln!("echo → ccd (API and ccd attach)…");
        match echo_ccd(cx, n) {
            Ok(v) => v,
            Err(e) => vec![Echo {
                contender: "ccd-api".into(),
                idle: None,
                sibling_flood: None,
                error: Some(format!("{e:#}")),
            }],
        }
    }));
    if reverse {
        cases.reverse();
    }
    cases.iter().flat_map(|f| f()).collect()
}

fn echo_api(api: Api, sid: &str, n: usize) -> anyhow::Result<(Latency, Api)> {
    let api = RefCell::new(api);
    let mut send = |b: u8| {
        api.borrow_mut().notify(
            "session.input",
            json!({"session": sid, "data": ccd_protocol::b64::encode(&[b])}),
        )
    };
    let mut recv = |buf: &mut Vec<u8>, t: Duration| -> bool {
        match api.borrow_mut().next_note(t) {
            Ok(Some(Note::Output { data, .. })) | Ok(Some(Note::Resync { data, .. })) => {
                buf.extend_from_slice(&data);
                true
            }
            Ok(Some(Note::Exited)) | Err(_) => false,
            Ok(_) => true,
        }
    };
    let l = echo_loop(n, &mut send, &mut recv)?;
    Ok((l, api.into_inner()))
}

fn echo_ccd(cx: &Ctx, n: usize) -> anyhow::Result<Vec<Echo>> {
    let dir = cx.dir("echo-ccd")?;
    let run = Run::new(&dir);
    let frun = Run::new(&cx.dir("echo-ccd-flood")?);
    let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, false)?;
    let stop = Arc::new(AtomicBool::new(false));
    let res = (|| -> anyhow::Result<Vec<Echo>> {
        let (sid, _) = c.new_session(&run.echo_args(), false)?;
        wait_file(&run.ready, Duration::from_secs(10))?;
        let wait_detached = |c: &Ccd| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.attached(&sid) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        // Idle: the API client, then `ccd attach`.
        let mut api = c.api()?;
        Ccd::api_attach(&mut api, &sid)?;
        let (api_idle, api) = echo_api(api, &sid, n)?;
        api.close();
        wait_detached(&c);
        let mut client = c.attach_pty(&sid)?;
        c.wait_attached(&sid, 1)?;
        std::thread::sleep(Duration::from_millis(300));
        let attach_idle = echo_pty(&mut client, n)?;
        // A sibling session flooding. Each client kind echoes while the
        // flood is drained by a client of its own kind, as for tmux and
        // dtach: `ccd attach` under a PTY for `ccd attach`, then an API
        // client for the API.
        let (fsid, _) = c.new_session(&frun.sibling_args(cx.seed), false)?;
        let mut fc = c.attach_pty(&fsid)?;
        let pty_drain = fc.collector(false); // drains until dropped
        c.wait_attached(&fsid, 1)?;
        std::thread::sleep(Duration::from_millis(500));
        let attach_flood = echo_pty(&mut client, n);
        drop(client);
        drop(pty_drain);
        fc.kill(Duration::from_secs(2));
        wait_detached(&c);
        let mut fapi = c.api()?;
        Ccd::api_attach(&mut fapi, &fsid)?;
        let st = stop.clone();
        let drain = std::thread::spawn(move || {
            let mut bytes = 0u64;
            while !st.load(Ordering::Relaxed) {
                match fapi.next_note(Duration::from_millis(100)) {
                    Ok(Some(Note::Output { data, .. })) => bytes += data.len() as u64,
                    Ok(Some(Note::Exited)) | Err(_) => break,
                    _ => {}
                }
            }
            fapi.close();
            bytes
        });
        std::thread::sleep(Duration::from_millis(500));
        let api_flood = (|| {
            let mut api = c.api()?;
            Ccd::api_attach(&mut api, &sid)?;
            let (l, api) = echo_api(api, &sid, n)?;
            api.close();
            Ok::<_, anyhow::Error>(l)
        })();
        stop.store(true, Ordering::Relaxed);
        touch(&frun.stop)?;
        let drained = drain.join().unwrap_or(0);
        eprintln!(
            "  (sibling flood: {:.0} MB drained by the API client)",
            drained as f64 / 1e6
        );
        let mk = |c: &str, idle: Latency, flood: anyhow::Result<Latency>| Echo {
            contender: c.into(),
            idle: Some(idle),
            sibling_flood: flood.as_ref().ok().cloned(),
            error: flood.err().map(|e| format!("{e:#}")),
        };
        Ok(vec![
            mk("ccd-api", api_idle, api_flood),
            mk("ccd-attach", attach_idle, attach_flood),
        ])
    })();
    stop.store(true, Ordering::Relaxed);
    c.stop();
    res
}

/// Attach → first full frame: `ccd attach`, `cat` of the same frame (the
/// harness's floor) and `tmux attach`, one sample of each in turn, the
/// order reversed each round, so a machine that drifts during the part
/// weighs on each alike; enough samples that p99 is not the one slowest.
pub fn attach_times(cx: &Ctx) -> Attach {
    let mut a = Attach::default();
    let r = super::reference(Kind::Tui, 300_000, cx.seed + 7);
    let runs = cx.attach_samples;
    eprintln!("attach → first frame (ccd attach, cat of its frame, tmux attach, in turns)…");
    if let Err(e) = attach_in_turns(cx, &r, runs, &mut a) {
        a.errors.push(format!("ccd: {e:#}"));
    }
    a
}

/// A tmux server holding one session that drew the attach reference.
fn tmux_for_attach(cx: &Ctx, bin: &std::path::Path, r: &Reference) -> anyhow::Result<Tmux> {
    let dir = cx.dir("attach-tmux")?;
    let run = Run::new(&dir);
    let mut t = Tmux::new(bin, &dir, cx.env(&dir)?);
    t.new_session("m", &cx.bench, &run.marker_args(r.target, cx.seed + 7))?;
    if let Err(e) = wait_file(&run.done, Duration::from_secs(30)) {
        t.kill_server();
        return Err(e);
    }
    std::thread::sleep(Duration::from_millis(300));
    Ok(t)
}

/// One attach sample: from `start` (a process under a PTY) to the screen
/// being `want`.
fn attach_sample(
    label: &str,
    start: impl FnOnce() -> anyhow::Result<PtyProc>,
    want: &str,
    d: &mut Vec<Duration>,
    misses: &mut usize,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let mut p = start()?;
    let mut s = ccd_screen::Screen::new(ROWS, COLS);
    match until_screen(&p, &mut s, want, Duration::from_secs(5)) {
        Some(t1) => {
            d.push(t1 - t0);
            ATTACH_TRACE.record(t0, t1 - t0, Some(label));
        }
        None => *misses += 1,
    }
    p.kill(Duration::from_millis(500));
    std::thread::sleep(Duration::from_millis(100));
    Ok(())
}

fn attach_in_turns(cx: &Ctx, r: &Reference, runs: usize, a: &mut Attach) -> anyhow::Result<()> {
    let dir = cx.dir("attach-ccd")?;
    let run = Run::new(&dir);
    let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, false)?;
    let mut tmux = None;
    let res = (|| -> anyhow::Result<()> {
        let (sid, _) = c.new_session(&run.marker_args(r.target, cx.seed + 7), false)?;
        wait_file(&run.done, Duration::from_secs(30))?;
        std::thread::sleep(Duration::from_millis(300));
        // The API: request → reply → first resync.
        let mut api = c.api()?;
        let (mut reply, mut resync) = (Vec::new(), Vec::new());
        let api_runs = runs + runs / 2;
        for i in 0..api_runs {
            let t0 = Instant::now();
            let id = api.send(
                "session.attach",
                json!({"session": sid, "size": {"cols": COLS, "rows": ROWS}}),
            )?;
            api.wait_reply(id, Duration::from_secs(10))?;
            reply.push(t0.elapsed());
            let deadline = t0 + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Some(Note::Resync { data, .. }) =
                    api.next_note(Duration::from_millis(200))?
                {
                    resync.push(t0.elapsed());
                    if i == 0 {
                        a.api_screen_matches = parse(&data) == r.screen;
                        std::fs::write(dir.join("frame.bin"), &data)?;
                    }
                    break;
                }
            }
            api.call("session.detach", json!({"session": sid}))?;
        }
        api.close();
        a.api_reply = Some(Latency::from(reply, 0));
        let misses = api_runs - resync.len();
        a.api_resync = Some(Latency::from(resync, misses));
        if let Some(bin) = &cx.tmux {
            match tmux_for_attach(cx, bin, r) {
                Ok(t) => tmux = Some(t),
                Err(e) => a.errors.push(format!("tmux: {e:#}")),
            }
        }
        // The floor: a process that only writes the same frame.
        let frame = dir.join("frame.bin");
        let frame_arg = [frame.display().to_string()];
        let cat_env = cx.env(&dir)?;
        // Process start → full screen: ccd attach, the floor, tmux attach.
        let mut d: [Vec<Duration>; 3] = Default::default();
        let mut miss = [0usize; 3];
        for round in 0..runs {
            let order = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
            for k in order {
                match k {
                    0 => attach_sample(
                        "ccd-attach",
                        || c.attach_pty(&sid),
                        &r.screen,
                        &mut d[0],
                        &mut miss[0],
                    )?,
                    1 if frame.exists() => attach_sample(
                        "cat",
                        || PtyProc::spawn(std::path::Path::new("cat"), &frame_arg, &cat_env),
                        &r.screen,
                        &mut d[1],
                        &mut miss[1],
                    )?,
                    2 => {
                        if let Some(t) = &tmux {
                            attach_sample(
                                "tmux",
                                || t.attach_pty("m"),
                                &r.screen,
                                &mut d[2],
                                &mut miss[2],
                            )?;
                        }
                    }
                    _ => {}
                }
            }
        }
        let [ccd_d, cat_d, tmux_d] = d;
        a.ccd_attach = Some(Latency::from(ccd_d, miss[0]));
        if frame.exists() {
            a.cat_frame = Some(Latency::from(cat_d, miss[1]));
        }
        if tmux.is_some() {
            a.tmux_attach = Some(Latency::from(tmux_d, miss[2]));
        }
        touch(&run.stop)?;
        Ok(())
    })();
    if let Some(mut t) = tmux {
        t.kill_server();
    }
    c.stop();
    res
}

/// A field of `/proc/<pid>/<file>` (`status`, `smaps_rollup`), in kB (0
/// when unreadable).
fn proc_kb(pid: u32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A `/proc/<pid>/status` figure in kB. Elsewhere only the resident set
/// (`VmRSS`) is known, through `ccd_testkit::procs`; other keys read 0.
fn status_kb(pid: u32, key: &str) -> u64 {
    if cfg!(not(target_os = "linux")) && key == "VmRSS:" {
        return ccd_testkit::procs::rss_kb(pid);
    }
    proc_kb(pid, "status", key)
}

fn rollup_kb(pid: u32, key: &str) -> u64 {
    proc_kb(pid, "smaps_rollup", key)
}

/// Idle fake-claude sessions under one daemon of ours, for the memory
/// and idle parts. Stopped (daemon, holders, claudes) by [`Held::stop`].
pub struct Held {
    ccd: Ccd,
    /// The fake claudes' pids.
    pub claudes: Vec<u32>,
    /// Their holders' pids, in the same order.
    pub holders: Vec<u32>,
    /// `session.new` calls that failed (the rest are here).
    pub failed: Vec<String>,
    /// The daemon's VmRSS before any session.
    pub daemon_rss_kb_idle: u64,
    /// When the last session was started.
    pub started: Instant,
}

impl Held {
    /// Starts `n` sessions (each waited for until ready), one after the
    /// other; at least one must start.
    pub fn start(cx: &Ctx, n: usize) -> anyhow::Result<Self> {
        anyhow::ensure!(
            cx.fake.exists(),
            "{} not found: cargo build --release -p ccd-fake-claude",
            cx.fake.display()
        );
        eprintln!("{n} idle fake-claude sessions…");
        let dir = cx.dir("held")?;
        let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, true)?;
        std::thread::sleep(Duration::from_millis(500));
        let daemon_rss_kb_idle = status_kb(c.daemon_pid(), "VmRSS:");
        let mut claudes = Vec::new();
        let mut failed = Vec::new();
        for _ in 0..n {
            match c.new_session(&[], true) {
                Ok((_, pid)) => claudes.push(pid),
                Err(e) => failed.push(format!("{e:#}")),
            }
        }
        let started = Instant::now();
        let holders: Vec<u32> = claudes.iter().filter_map(|p| ppid(*p)).collect();
        if claudes.is_empty() || holders.len() != claudes.len() {
            c.stop();
            anyhow::ensure!(!claudes.is_empty(), "no session started: {failed:?}");
            anyhow::bail!("holders not found");
        }
        Ok(Self {
            ccd: c,
            claudes,
            holders,
            failed,
            daemon_rss_kb_idle,
            started,
        })
    }

    /// Sleeps until `d` after the last session started.
    fn settle(&self, d: Duration) {
        if let Some(left) = d.checked_sub(self.started.elapsed()) {
            std::thread::sleep(left);
        }
    }

    pub fn stop(self) {
        self.ccd.stop();
    }

    /// The ccd binary and the environment its commands run in.
    pub fn ccd_and_env(&self) -> (&std::path::Path, &[(String, String)]) {
        (&self.ccd.ccd, &self.ccd.env)
    }
}

pub fn memory(h: &Held) -> Memory {
    h.settle(Duration::from_secs(3));
    let n = h.claudes.len();
    let holders = &h.holders;
    let rss: Vec<u64> = holders.iter().map(|h| status_kb(*h, "VmRSS:")).collect();
    let anon: Vec<u64> = holders.iter().map(|h| status_kb(*h, "RssAnon:")).collect();
    let pss: Vec<u64> = holders.iter().map(|h| rollup_kb(*h, "Pss:")).collect();
    let private: Vec<u64> = holders
        .iter()
        .map(|h| rollup_kb(*h, "Private_Clean:") + rollup_kb(*h, "Private_Dirty:"))
        .collect();
    let claude: Vec<u64> = h.claudes.iter().map(|p| status_kb(*p, "VmRSS:")).collect();
    let avg = |v: &[u64]| v.iter().sum::<u64>() / v.len().max(1) as u64;
    let daemon = status_kb(h.ccd.daemon_pid(), "VmRSS:");
    let growth = daemon.saturating_sub(h.daemon_rss_kb_idle) / n.max(1) as u64;
    Memory {
        sessions: n,
        daemon_rss_kb_idle: h.daemon_rss_kb_idle,
        daemon_rss_kb: daemon,
        holder_rss_kb_avg: avg(&rss),
        holder_rss_kb_max: rss.iter().copied().max().unwrap_or(0),
        holder_anon_kb_avg: avg(&anon),
        holder_pss_kb_avg: avg(&pss),
        holder_private_kb_avg: avg(&private),
        per_session_pss_kb: avg(&pss) + growth,
        claude_rss_kb_avg: avg(&claude),
        per_session_kb: avg(&rss) + growth,
        failed_starts: h.failed.clone(),
    }
}

/// Wakeups and CPU of the daemon, the holders and the claudes over
/// `window`, once `settle` has passed since the last session started.
pub fn idle(h: &Held, settle: Duration, window: Duration) -> super::idle::Idle {
    h.settle(settle);
    eprintln!(
        "idle: sampling {} sessions for {:.0} s…",
        h.holders.len(),
        window.as_secs_f64()
    );
    super::idle::measure(h.ccd.daemon_pid(), &h.holders, &h.claudes, settle, window)
}
