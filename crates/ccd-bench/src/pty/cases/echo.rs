//! Keystroke echo latency, idle and beside a flooding sibling, per
//! contender.

use super::*;

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
pub(super) fn pool_echoes(runs: Vec<Echo>) -> Vec<Echo> {
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
pub(super) fn pty_echo(
    cx: &Ctx,
    c: &str,
    f: &dyn Fn() -> anyhow::Result<(Latency, Latency)>,
) -> Vec<Echo> {
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
pub(super) fn echo_round(cx: &Ctx, n: usize, reverse: bool) -> Vec<Echo> {
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

pub(super) fn echo_api(api: Api, sid: &str, n: usize) -> anyhow::Result<(Latency, Api)> {
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

pub(super) fn echo_ccd(cx: &Ctx, n: usize) -> anyhow::Result<Vec<Echo>> {
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
