//! Holder with `/bin/sh` children: attach/resync/output, input, resize, exit
//! status, descriptors and environment of the child, cwd refusal, kill.

mod common;

use std::time::Duration;

use ccd_holder::{
    AttachMode, ClientError, Holder, KillSignal, ScreenFormat, SpawnError, State, StreamEvent,
};
use ccd_screen::Screen;
use common::{start, wait_screen, Env};

const T: Duration = Duration::from_secs(10);

#[test]
fn attach_gets_resync_then_output_and_input_reaches_child() {
    let env = Env::new();
    let (serve, mut c) = start(env.sh("printf hello; read x; echo got:$x; read y; exit 3"));
    wait_screen(&mut c, T, "hello");

    let mut a = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
    let res = a.attach(AttachMode::Interactive).unwrap();
    assert_eq!(res.size.rows, 40);
    assert_eq!(res.size.cols, 120);
    // First notification: the full redraw.
    let mut screen = Screen::new(40, 120);
    let mut expected = match a.next_event(T).unwrap() {
        StreamEvent::Resync(r) => {
            assert_eq!(r.seq, res.seq);
            screen.process(&r.data);
            r.seq
        }
        other => panic!("expected a resync first, got {other:?}"),
    };
    assert!(screen.contents().contains("hello"), "{}", screen.contents());

    a.input(b"abc\r").unwrap();
    // Output follows in order, coalesced.
    while !screen.contents().contains("got:abc") {
        match a.next_event(T).unwrap() {
            StreamEvent::Output(o) => {
                assert_eq!(o.seq, expected, "output in order");
                expected = o.end_seq();
                screen.process(&o.data);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    a.input(b"\r").unwrap();
    // The attached client is told about the exit.
    loop {
        match a.next_event(T).unwrap() {
            StreamEvent::Exited(e) => {
                assert_eq!(e.exit_code, Some(3));
                break;
            }
            StreamEvent::Output(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let r = c.collect(T).unwrap();
    assert!(r.collected);
    assert_eq!(r.exit.as_ref().and_then(|e| e.code), Some(3));
    assert!(r.screen.contains("got:abc"));
    // A shell never registers: it exited before being ready.
    assert_eq!(r.state, State::Failed);
    let outcome = serve.join().unwrap().unwrap();
    assert_eq!(outcome.exit.and_then(|e| e.code), Some(3));
}

#[test]
fn resize_changes_stty_size_and_model() {
    let env = Env::new();
    let (serve, mut c) = start(env.sh("stty size; read x; stty size; read y"));
    wait_screen(&mut c, T, "40 120");
    c.resize(30, 100).unwrap();
    let s = c.screen(ScreenFormat::Text).unwrap();
    assert_eq!((s.size.rows, s.size.cols), (30, 100));
    assert_eq!(s.rows.len(), 30);
    c.input(b"\r").unwrap();
    wait_screen(&mut c, T, "30 100");
    assert_eq!(c.info().unwrap().size.rows, 30);
    c.input(b"\r").unwrap();
    let r = c.collect(T).unwrap();
    assert_eq!(r.exit.and_then(|e| e.code), Some(0));
    serve.join().unwrap().unwrap();
}

/// The direct-stream names (`session.attach` with a size, `session.input`
/// as a notification) and the size policy: a client that types gets its
/// own size back when another client changed it meanwhile.
#[test]
fn the_most_recently_active_client_sets_the_size() {
    let env = Env::new();
    let (serve, mut c) = start(env.sh("while read x; do stty size; done"));
    let mut a = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
    let r = a
        .call_value(
            "session.attach",
            Some(serde_json::json!({"mode": "interactive", "size": {"rows": 30, "cols": 100}})),
        )
        .unwrap();
    assert_eq!(
        r["size"],
        serde_json::json!({"rows": 30, "cols": 100}),
        "{r}"
    );
    let mut b = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
    b.attach(AttachMode::Interactive).unwrap();
    b.resize(20, 80).unwrap();
    assert_eq!(c.info().unwrap().size.rows, 20);
    // A types (a notification: no reply): its size comes back first.
    a.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session.input\",\"params\":{\"data\":\"YQ0=\"}}\n",
    )
    .unwrap();
    wait_screen(&mut c, T, "30 100");
    assert_eq!(c.info().unwrap().size.cols, 100);
    // B types: 20 x 80 again.
    b.input(b"b\r").unwrap();
    wait_screen(&mut c, T, "20 80");
    // A connection that is not attached resizes without remembering.
    c.resize(25, 90).unwrap();
    c.input(b"c\r").unwrap();
    wait_screen(&mut c, T, "25 90");
    c.kill(KillSignal::Kill, None).unwrap();
    c.collect(T).unwrap();
    drop((a, b));
    serve.join().unwrap().unwrap();
}

#[test]
fn child_inherits_no_descriptors_and_no_ccd_variables() {
    let env = Env::new();
    // No pipeline around `ls`: the shell would hold the pipe's fds itself.
    // Linux lists the shell's own descriptors; macOS has no `/proc`, so
    // `ls` lists its own (inherited from the shell) in `/dev/fd`, plus the
    // one it reads that directory through.
    #[cfg(target_os = "linux")]
    let (list, expected) = ("ls /proc/$$/fd", vec!["0", "1", "2"]);
    #[cfg(not(target_os = "linux"))]
    let (list, expected) = ("ls /dev/fd", vec!["0", "1", "2", "3"]);
    let mut cfg = env.sh(&format!(
        "{list}; echo ccdvars=$(env | grep -c '^CCD_'); echo term=$TERM; pwd; read x"
    ));
    let mut base = cfg.base_env.clone().unwrap();
    base.push(("CCD_SECRET".into(), "s3cret".into()));
    base.push(("CCD_SOCKET".into(), "/x".into()));
    base.push(("TERM".into(), "dumb".into()));
    cfg.base_env = Some(base);
    let (serve, mut c) = start(cfg);
    let text = wait_screen(&mut c, T, "term=");
    let fd_line = text.lines().next().unwrap();
    let fds: Vec<&str> = fd_line.split_whitespace().collect();
    assert_eq!(fds, expected, "child fds: {text}");
    assert!(text.contains("ccdvars=0"), "{text}");
    assert!(text.contains("term=xterm-256color"), "{text}");
    assert!(text.contains(env.proj.to_str().unwrap()), "{text}");
    // The listening socket is 0600.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.socket())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    c.kill(KillSignal::Hup, None).unwrap();
    let r = c.collect(T).unwrap();
    assert!(r.collected);
    serve.join().unwrap().unwrap();
}

#[test]
fn cwd_that_is_a_file_or_missing_is_refused() {
    let env = Env::new();
    let file = env.proj.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let mut cfg = env.sh("true");
    cfg.cwd = file;
    match Holder::spawn(&cfg) {
        Err(SpawnError::CwdNotDirectory(p)) => assert!(p.ends_with("a-file")),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("a file as cwd was accepted"),
    }
    cfg.cwd = env.proj.join("missing");
    assert!(matches!(
        Holder::spawn(&cfg),
        Err(SpawnError::CwdMissing(_))
    ));
    // Relative and dotted paths are normalized.
    cfg.cwd = env.proj.join("sub/..");
    std::fs::create_dir_all(env.proj.join("sub")).unwrap();
    let (serve, mut c) = start({
        let mut c2 = cfg.clone();
        c2.args = vec!["-c".into(), "pwd; read x".into()];
        c2
    });
    let info = c.info().unwrap();
    assert_eq!(info.cwd, env.proj.to_str().unwrap());
    c.kill(KillSignal::Kill, None).unwrap();
    c.collect(T).unwrap();
    serve.join().unwrap().unwrap();
}

#[test]
fn kill_term_then_kill_after_grace_and_collect_reports_signal() {
    let env = Env::new();
    // The shell ignores SIGTERM: only the SIGKILL after the grace ends it.
    let (serve, mut c) = start(env.sh("trap '' TERM; echo ready; while :; do sleep 0.05; done"));
    wait_screen(&mut c, T, "ready");
    // Not exited yet: collect says so and the holder keeps serving.
    let r = c.collect(Duration::from_millis(50)).unwrap();
    assert!(!r.collected);
    assert!(c
        .kill(KillSignal::Term, Some(Duration::from_millis(300)))
        .unwrap());
    let r = c.collect(T).unwrap();
    assert!(r.collected);
    assert_eq!(r.exit.as_ref().and_then(|e| e.signal), Some(libc_sigkill()));
    serve.join().unwrap().unwrap();
    // The holder is gone.
    assert!(matches!(
        ccd_holder::HolderClient::connect(&env.socket()).and_then(|mut c| c.info()),
        Err(ClientError::Io(_) | ClientError::Closed)
    ));
}

#[test]
fn observe_clients_cannot_type() {
    let env = Env::new();
    let (serve, mut c) = start(env.sh("echo up; read x"));
    wait_screen(&mut c, T, "up");
    let mut o = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
    o.attach(AttachMode::Observe).unwrap();
    match o.input(b"x\r") {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32010),
        other => panic!("observer typed: {other:?}"),
    }
    let info = c.info().unwrap();
    assert_eq!(info.clients.len(), 1);
    assert_eq!(info.clients[0].mode, AttachMode::Observe);
    c.kill(KillSignal::Term, None).unwrap();
    let r = c.collect(T).unwrap();
    assert_eq!(r.exit.and_then(|e| e.signal), Some(15));
    serve.join().unwrap().unwrap();
}

#[test]
fn every_attached_client_gets_the_exit_before_a_collect_stops_the_holder() {
    // A collect already waiting when the child ends answers at once, and
    // its reply stops the holder and shuts every socket: each attached
    // client's `session.exited` must be written first. Several clients
    // and a few rounds, since the pumps race the collect.
    for round in 0..4 {
        let env = Env::new();
        let (serve, mut c) = start(env.sh("echo up; read x; exit 5"));
        wait_screen(&mut c, T, "up");
        let mut clients = observers(&env, 6);
        let mut collector = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
        let collect = std::thread::spawn(move || collector.collect(T));
        // The collect is waiting for the exit by now, more often than not.
        std::thread::sleep(Duration::from_millis(50));
        c.input(b"\r").unwrap();
        let r = collect.join().unwrap().unwrap();
        assert!(r.collected);
        for (i, o) in clients.iter_mut().enumerate() {
            loop {
                match o.next_event(T) {
                    Ok(StreamEvent::Exited(e)) => {
                        assert_eq!(e.exit_code, Some(5));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => panic!("round {round}, client {i}: no session.exited before {e}"),
                }
            }
        }
        serve.join().unwrap().unwrap();
    }
}

/// `n` clients attached as observers.
fn observers(env: &Env, n: usize) -> Vec<ccd_holder::HolderClient> {
    (0..n)
        .map(|_| {
            let mut o = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
            o.attach(AttachMode::Observe).unwrap();
            o
        })
        .collect()
}

fn libc_sigkill() -> i32 {
    9
}

#[test]
fn the_input_that_ends_the_child_gets_its_reply_though_a_collect_stops_the_holder() {
    // The input's bytes reach the child, which exits; a collect already
    // waiting answers and stops the holder, racing the input's reply. The
    // stop shuts read sides first, so the reply is written, never lost
    // (a lost one reads as `Closed`: "the holder went away" for input
    // that was delivered).
    for round in 0..20 {
        let env = Env::new();
        let (serve, mut c) = start(env.sh("echo up; read x; exit 5"));
        wait_screen(&mut c, T, "up");
        // Observers too: their pumps take the CPU at the exit, which
        // widens the race (the reply was lost about once in ten rounds
        // on a loaded 2-CPU machine before the stop shut read sides
        // first).
        let _observers = observers(&env, 4);
        let mut collector = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
        let collect = std::thread::spawn(move || collector.collect(T));
        std::thread::sleep(Duration::from_millis(20));
        if let Err(e) = c.input(b"\r") {
            panic!("round {round}: the input was delivered but its reply was lost: {e}");
        }
        assert!(collect.join().unwrap().unwrap().collected);
        serve.join().unwrap().unwrap();
    }
}

#[test]
fn a_client_that_never_reads_its_replies_does_not_hold_the_stop() {
    // A client sends screen requests and reads nothing: once its socket's
    // buffer is full, its connection thread blocks writing a reply. The
    // stop gives it `STOP_GRACE`, then shuts it both ways.
    use std::io::Write;
    let env = Env::new();
    let (serve, mut c) = start(env.sh("seq 1 2000; echo up; read x; exit 5"));
    wait_screen(&mut c, T, "up");
    let mut stuck = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
    stuck
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let req = br#"{"jsonrpc":"2.0","id":1,"method":"holder.screen","params":{"format":"ansi"}}"#;
    let mut sent = 0;
    // Until the holder stops reading it (its thread is blocked in a
    // write), or enough to fill both buffers many times over.
    while sent < 5000 {
        if stuck
            .write_all(req)
            .and_then(|()| stuck.write_all(b"\n"))
            .is_err()
        {
            break;
        }
        sent += 1;
    }
    let mut collector = ccd_holder::HolderClient::connect(&env.socket()).unwrap();
    c.input(b"\r").unwrap();
    assert!(collector.collect(T).unwrap().collected);
    // Without the bound the serve thread would never end.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(serve.join()));
    let bound = ccd_holder::rpc::server::STOP_GRACE + Duration::from_secs(20);
    match ended.recv_timeout(bound) {
        Ok(r) => {
            r.unwrap().unwrap();
        }
        Err(_) => panic!(
            "the holder did not stop within {bound:?}: a client reading nothing ({sent} requests) held it"
        ),
    }
    drop(stuck);
}

/// A footer read between the writes of one frame is not taken (the
/// module doc of `ccd_screen::classify::mode`, rule 4): accept edits
/// shown and settled, then a frame showing plan for 130 ms (a footer half
/// painted over another, as 2.1.1xx can be read without synchronized
/// output), then accept edits again: `holder.info` never says plan. A
/// mode that stays is still taken (the last step).
#[test]
fn a_permission_mode_shown_for_an_instant_is_never_taken() {
    use ccd_screen::PermissionMode;
    let rule = "─".repeat(40);
    let paint = |footer: &str| {
        format!("printf '\\033[2J\\033[H{rule}\\r\\n❯ \\r\\n{rule}\\r\\n  {footer}'; ")
    };
    let accept = paint("⏵⏵ accept edits on (shift+tab to cycle) · ← for agents");
    let plan = paint("⏸ plan mode on (shift+tab to cycle) · ← for agents");
    let script = format!(
        "{accept}read x; {plan}sleep 0.13; {accept}read x; {plan}sleep 0.13; {accept}read x; {plan}read x"
    );
    let env = Env::new();
    let (serve, mut c) = start(env.sh(&script));
    common::wait_info(&mut c, T, "accept edits", |i| {
        i.permission_mode == Some(PermissionMode::AcceptEdits)
    });
    for _ in 0..2 {
        c.input(b"\r").unwrap();
        // Watched closely while plan flashes and a while after.
        let until = std::time::Instant::now() + Duration::from_millis(600);
        while std::time::Instant::now() < until {
            let m = c.info().unwrap().permission_mode;
            assert_eq!(m, Some(PermissionMode::AcceptEdits), "plan was taken");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    // Plan shown and left: taken.
    c.input(b"\r").unwrap();
    common::wait_info(&mut c, T, "plan", |i| {
        i.permission_mode == Some(PermissionMode::Plan)
    });
    c.input(b"\r").unwrap();
    c.collect(T).unwrap();
    serve.join().unwrap().unwrap();
}

/// The permission mode under the input box is read as the screen changes
/// (`holder.info`'s `permission_mode`): a Shift-Tab's new footer replaces
/// it; a screen without a footer (a dialog, a blank footer) keeps the last
/// one read; an indicator ccd cannot name is `unknown`, never a guess.
#[test]
fn the_permission_mode_follows_the_footer_and_is_kept_while_none_shows() {
    use ccd_screen::PermissionMode;
    let rule = "─".repeat(40);
    let frame = |footer: &str| {
        format!("printf '\\033[2J\\033[H{rule}\\r\\n❯ \\r\\n{rule}\\r\\n  {footer}'; read x; ")
    };
    let script = [
        frame("? for shortcuts · ← for agents"),
        frame("⏵⏵ accept edits on (shift+tab to cycle) · ← for agents"),
        "printf '\\033[2J\\033[H Bash command\\r\\n\\r\\n Do you want to proceed?\\r\\n ❯ 1. Yes\\r\\n   2. No'; read x; ".to_string(),
        frame(""),
        frame("⏵⏵ yolo on (shift+tab to cycle)"),
    ]
    .concat();
    let env = Env::new();
    let (serve, mut c) = start(env.sh(&script));
    let mode = |c: &mut ccd_holder::HolderClient| c.info().unwrap().permission_mode;
    common::wait_info(&mut c, T, "default", |i| {
        i.permission_mode == Some(PermissionMode::Default)
    });
    c.input(b"\r").unwrap();
    common::wait_info(&mut c, T, "accept edits", |i| {
        i.permission_mode == Some(PermissionMode::AcceptEdits)
    });
    // A dialog, then a prompt whose footer is blank: nothing read, kept.
    for shows in ["Do you want to proceed?", "❯"] {
        c.input(b"\r").unwrap();
        wait_screen(&mut c, T, shows);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(mode(&mut c), Some(PermissionMode::AcceptEdits), "{shows}");
    }
    c.input(b"\r").unwrap();
    common::wait_info(&mut c, T, "unknown", |i| {
        i.permission_mode == Some(PermissionMode::Unknown)
    });
    c.input(b"\r").unwrap();
    c.collect(T).unwrap();
    serve.join().unwrap().unwrap();
}
