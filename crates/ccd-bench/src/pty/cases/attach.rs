//! Attach → first full frame, per contender, the samples taken in turns.

use super::*;

/// Attach → first full frame: `ccd attach`, `cat` of the same frame (the
/// harness's floor) and `tmux attach`, one sample of each in turn, the
/// order reversed each round, so a machine that drifts during the part
/// weighs on each alike; enough samples that p99 is not the one slowest.
pub fn attach_times(cx: &Ctx) -> Attach {
    let mut a = Attach::default();
    let r = crate::pty::reference(Kind::Tui, 300_000, cx.seed + 7);
    let runs = cx.attach_samples;
    eprintln!("attach → first frame (ccd attach, cat of its frame, tmux attach, in turns)…");
    if let Err(e) = attach_in_turns(cx, &r, runs, &mut a) {
        a.errors.push(format!("ccd: {e:#}"));
    }
    a
}

/// A tmux server holding one session that drew the attach reference.
pub(super) fn tmux_for_attach(
    cx: &Ctx,
    bin: &std::path::Path,
    r: &Reference,
) -> anyhow::Result<Tmux> {
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
pub(super) fn attach_sample(
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

pub(super) fn attach_in_turns(
    cx: &Ctx,
    r: &Reference,
    runs: usize,
    a: &mut Attach,
) -> anyhow::Result<()> {
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
