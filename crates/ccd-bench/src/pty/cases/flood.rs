//! Flood throughput into an attached client, per contender (raw PTY,
//! tmux, dtach, `ccd attach`, the socket API), rounds merged.

use super::*;

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
    let dtach = all
        .iter()
        .find(|(c, _)| *c == "dtach")
        .map(|(_, v)| v.clone());
    all.into_iter()
        .map(|(c, v)| {
            let paired = match &dtach {
                Some(d) if c != "dtach" && c != "raw" && c != "tmux" => paired(&v, d),
                _ => None,
            };
            let mut m = merge(v);
            m.paired_to_dtach = paired;
            m
        })
        .collect()
}

/// `rounds` over dtach's rounds of the same numbers ([`Paired`]): the
/// median of the ratios of the rounds both ran without an error.
pub(super) fn paired(rounds: &[Flood], dtach: &[Flood]) -> Option<Paired> {
    let total = |f: &Flood| f.cpu_ms_per_mb.map(|(s, c)| s + c);
    let pairs: Vec<(&Flood, &Flood)> = rounds
        .iter()
        .zip(dtach)
        .filter(|(a, d)| a.error.is_none() && d.error.is_none() && d.mb_per_s > 0.0)
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let median = |mut v: Vec<f64>| -> Option<f64> {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    };
    let range = |v: &[f64]| {
        let min = v.iter().copied().reduce(f64::min)?;
        Some((min, v.iter().copied().reduce(f64::max)?))
    };
    let speeds: Vec<f64> = pairs.iter().map(|(a, d)| a.mb_per_s / d.mb_per_s).collect();
    let cpus: Vec<f64> = pairs
        .iter()
        .filter_map(|(a, d)| Some(total(a)? / total(d).filter(|t| *t > 0.0)?))
        .collect();
    Some(Paired {
        rounds: pairs.len(),
        mb_per_s: median(speeds.clone())?,
        mb_per_s_range: range(&speeds)?,
        cpu: median(cpus.clone()),
        cpu_range: range(&cpus),
    })
}

/// One row from several rounds: the median run, with the worst losses and
/// every round's throughput.
pub(super) fn merge(runs: Vec<Flood>) -> Flood {
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
    // The thread split of the round whose total is the median.
    let mut split: Vec<&Flood> = ok
        .iter()
        .copied()
        .filter(|f| f.server_threads_ms_per_mb.is_some())
        .collect();
    split.sort_by(|a, b| {
        let t = |f: &Flood| f.cpu_ms_per_mb.map_or(0.0, |(s, c)| s + c);
        t(a).total_cmp(&t(b))
    });
    m.server_threads_ms_per_mb = split
        .get(split.len() / 2)
        .and_then(|f| f.server_threads_ms_per_mb.clone());
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

pub(super) fn flood_raw(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
    let dir = cx.dir("raw")?;
    let env = cx.env(&dir)?;
    let run = Run::new(&dir);
    let p = PtyProc::spawn(&cx.bench, &run.emit_args(r.kind, r.target, cx.seed), &env)?;
    let fl = flood_through(&p, &run.ready, &run.go, &run.done, limit(r.bytes))?;
    touch(&run.stop)?;
    Ok(pty_result("raw", r, fl, true))
}

pub(super) fn flood_tmux(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
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

pub(super) fn flood_dtach(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
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

pub(super) fn flood_ccd_attach(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
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
        let threads0 = pids[0].map(crate::pty::idle::cpu_ms_by_thread);
        let fl = flood_through(&client, &run.ready, &run.go, &run.done, limit(r.bytes))?;
        // The holder's own count for this client (still attached), and its
        // screen (the model caught up: its parse counted in its CPU).
        let drops = c.drops(&sid);
        let cpu = cpu_per_mb(cpu0, pids.map(cpu_ms), r.bytes);
        let threads = match (threads0, pids[0].map(crate::pty::idle::cpu_ms_by_thread)) {
            (Some(a), Some(b)) => {
                let mb = r.bytes as f64 / 1e6;
                Some(
                    b.into_iter()
                        .map(|(k, v)| {
                            let before = a.get(&k).copied().unwrap_or(0.0);
                            (k, (v - before).max(0.0) / mb)
                        })
                        .collect(),
                )
            }
            _ => None,
        };
        let peak = pids[0].map(|p| status_kb(p, "VmHWM:"));
        touch(&run.stop)?;
        drop(client);
        let mut f = pty_result("ccd-attach", r, fl, true);
        f.cpu_ms_per_mb = cpu;
        f.server_threads_ms_per_mb = threads;
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

pub(super) fn flood_ccd_api(cx: &Ctx, r: &Reference) -> anyhow::Result<Flood> {
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
            server_threads_ms_per_mb: None,
            server_peak_rss_kb: None,
            paired_to_dtach: None,
            error: None,
        })
    })();
    c.stop();
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(mb_per_s: f64, cpu: (f64, f64)) -> Flood {
        let mut f = Flood::failed("x", Kind::Tui, &anyhow::anyhow!("unused"));
        f.error = None;
        f.mb_per_s = mb_per_s;
        f.cpu_ms_per_mb = Some(cpu);
        f
    }

    #[test]
    fn rounds_are_paired_with_dtach_s_of_the_same_number() {
        let dtach = [
            round(100.0, (4.0, 2.0)),
            round(50.0, (8.0, 4.0)),
            round(80.0, (5.0, 3.0)),
        ];
        // The second round ran while the machine was slow for both.
        let mut ccd = vec![
            round(110.0, (9.0, 0.0)),
            round(55.0, (18.0, 0.0)),
            round(60.0, (16.0, 0.0)),
        ];
        let p = paired(&ccd, &dtach).expect("pairs");
        assert_eq!(p.rounds, 3);
        // Ratios 1.1, 1.1, 0.75: the median is 1.1 (the medians of the
        // rounds, 60 over 80, would say 0.75).
        assert!((p.mb_per_s - 1.1).abs() < 1e-9, "{p:?}");
        assert_eq!(p.mb_per_s_range, (0.75, 1.1));
        // CPU 9/6, 18/12, 16/8.
        assert!((p.cpu.expect("cpu") - 1.5).abs() < 1e-9, "{p:?}");
        assert_eq!(p.cpu_range, Some((1.5, 2.0)));
        // A round with an error pairs with nothing; an even count averages
        // the middle two.
        ccd[2].error = Some("failed".into());
        let p = paired(&ccd, &dtach).expect("pairs");
        assert_eq!(p.rounds, 2);
        assert!((p.mb_per_s - 1.1).abs() < 1e-9, "{p:?}");
        ccd[0].error = Some("failed".into());
        ccd[1].error = Some("failed".into());
        assert!(paired(&ccd, &dtach).is_none());
    }
}
