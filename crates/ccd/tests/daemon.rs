//! The daemon, end to end through the built binary with the fake claude.

mod common;

#[cfg(target_os = "linux")]
use common::private_kb;
use common::{ls_json, wait_for, Sandbox};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

#[test]
fn both_trust_variants_reach_ready() {
    for variant in ["2.1.332", "2.1.173"] {
        let sb = Sandbox::with_env(&[("FAKE_CLAUDE_TRUST_VARIANT", variant)]);
        let sid = sb.new_session("proj");
        assert_eq!(sid.len(), 36, "{variant}: {sid}");
        let rows = ls_json(&sb);
        let r = rows
            .iter()
            .find(|r| r["session_id"] == sid.as_str())
            .unwrap();
        assert_eq!(r["state"], "live", "{variant}: {r}");
        assert_eq!(r["ccd"]["lifecycle"], "idle", "{variant}: {r}");
        // trust was recorded by the CLI itself
        let claude_json = std::fs::read_to_string(sb.config.join(".claude.json")).unwrap();
        assert!(claude_json.contains("hasTrustDialogAccepted"), "{variant}");
        let screen = sb.ok(&["screen", &sid[..8]]);
        assert!(screen.contains('❯'), "{variant}: {screen}");
        let out = sb.ok(&["kill", &sid]);
        assert!(out.contains("exited with status 143"), "{variant}: {out}");
    }
}

#[test]
fn no_auto_trust_and_api_key_dialog_need_attention() {
    let sb = Sandbox::new();
    let p = sb.project("untrusted");
    let o = sb.run(&[
        "new",
        "--detach",
        "--no-auto-trust",
        "--cwd",
        p.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("needs-attention"), "{err}");
    assert!(err.contains("trust"), "{err}");
    assert!(err.contains("No, exit"), "screen text shown: {err}");

    let sb = Sandbox::with_env(&[
        ("FAKE_CLAUDE_API_KEY_DIALOG", "1"),
        ("ANTHROPIC_API_KEY", "sk-test-0123456789abcdefghij"),
    ]);
    let p = sb.project("apikey");
    let o = sb.run(&["new", "--detach", "--cwd", p.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("API key"), "{err}");
    // Never answered: the dialog is still on screen.
    let sid = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let screen = sb.ok(&["screen", &sid]);
    assert!(screen.contains("API key"), "{screen}");
}

#[test]
fn a_missing_cwd_is_refused() {
    let sb = Sandbox::new();
    let o = sb.run(&["new", "--detach", "--cwd", "/no/such/dir"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an existing directory"));
}

#[test]
fn sessions_survive_kill_9_of_the_daemon() {
    let sb = Sandbox::new();
    let sid = sb.new_session("survive");
    let pid = sb.daemon_pid().expect("daemon running");
    let holders = sb.holder_pids();
    assert_eq!(holders.len(), 1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for(Duration::from_secs(5), "daemon death", || {
        ccd_testkit::procs::gone(pid).then_some(())
    });
    // The leader shows as a zombie while its other threads still tear
    // down and hold the listening socket (a connection then is reset, as
    // `ccd ls` reports): wait until the socket refuses.
    wait_for(Duration::from_secs(5), "the socket closed", || {
        UnixStream::connect(sb.sock.join("ccd.sock"))
            .is_err()
            .then_some(())
    });
    // The holder and claude keep running.
    for h in &holders {
        assert!(ccd_testkit::procs::exists(*h));
    }
    // The next command starts a new daemon that adopts the session.
    let rows = ls_json(&sb); // ls does not start a daemon...
    let r = rows
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .unwrap();
    assert_eq!(r["state"], "live");
    let screen = sb.ok(&["screen", &sid]); // ...screen does, and it adopts
    assert!(screen.contains('❯'), "{screen}");
    assert_ne!(sb.daemon_pid(), Some(pid));
    let rows = ls_json(&sb);
    let r = rows
        .iter()
        .find(|r| r["session_id"] == sid.as_str())
        .unwrap();
    assert_eq!(r["ccd"]["lifecycle"], "idle", "{r}");
    let out = sb.ok(&["kill", &sid[..8]]);
    assert!(out.contains("exited"), "{out}");
    let rows = ls_json(&sb);
    assert!(rows
        .iter()
        .all(|r| r["session_id"] != sid.as_str() || r["state"] == "dead"));
}

fn raw_conn(sb: &Sandbox) -> (BufReader<UnixStream>, UnixStream) {
    let s = UnixStream::connect(sb.sock.join("ccd.sock")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    (BufReader::new(s.try_clone().unwrap()), s)
}

fn reply(r: &mut BufReader<UnixStream>) -> serde_json::Value {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

/// What `ccd attach` relies on to send its `session.attach` in the same
/// write as `hello` (`ccd_client::Client::connect_sending`): the daemon
/// handles `hello` before it reads the next line, and refuses what follows
/// a failed one.
#[test]
fn a_request_right_behind_hello_is_served_after_it_or_refused_with_it() {
    let sb = Sandbox::new();
    let _ = sb.client_or_start();
    let status = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"daemon.status\"}\n";
    let (mut r, mut w) = raw_conn(&sb);
    let mut both = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\",\"params\":{\"client\":\"t\",\"protocol\":{\"min\":1,\"max\":1}}}\n".to_vec();
    both.extend_from_slice(status);
    w.write_all(&both).unwrap();
    let hello = reply(&mut r);
    assert_eq!(
        (hello["id"].clone(), hello["result"]["protocol"].clone()),
        (json!(1), json!(1)),
        "{hello}"
    );
    let served = reply(&mut r);
    assert_eq!(served["id"], 2, "{served}");
    assert!(served["result"]["pid"].as_u64().is_some(), "{served}");

    let (mut r, mut w) = raw_conn(&sb);
    let mut both = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\",\"params\":{\"client\":\"t\",\"protocol\":{\"min\":90,\"max\":91}}}\n".to_vec();
    both.extend_from_slice(status);
    w.write_all(&both).unwrap();
    let hello = reply(&mut r);
    assert_eq!(hello["error"]["code"], -32001, "{hello}");
    let refused = reply(&mut r);
    assert_eq!(
        (refused["id"].clone(), refused["error"]["code"].clone()),
        (json!(2), json!(-32002)),
        "{refused}"
    );
}

#[test]
fn bad_input_gets_errors_and_the_daemon_keeps_serving() {
    let sb = Sandbox::new();
    let _ = sb.client_or_start();
    let (mut r, mut w) = raw_conn(&sb);
    // before hello
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}\n")
        .unwrap();
    assert_eq!(reply(&mut r)["error"]["code"], -32002);
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hello\",\"params\":{\"client\":\"t\",\"protocol\":{\"min\":1,\"max\":1}}}\n").unwrap();
    assert_eq!(reply(&mut r)["result"]["protocol"], 1);
    w.write_all(b"this is not json\n").unwrap();
    assert_eq!(reply(&mut r)["error"]["code"], -32700);
    let big = vec![b'x'; 10 << 20];
    w.write_all(&big).unwrap();
    w.write_all(b"\n").unwrap();
    assert_eq!(reply(&mut r)["error"]["code"], -32000);
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no.such\"}\n")
        .unwrap();
    let e = reply(&mut r);
    assert_eq!(e["error"]["code"], -32601);
    assert_eq!(e["id"], 3);
    w.write_all(
        b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sessions.get\",\"params\":{\"nope\":1}}\n",
    )
    .unwrap();
    assert_eq!(reply(&mut r)["error"]["code"], -32602);
    let mut junk = [0u8; 4096];
    for (i, b) in junk.iter_mut().enumerate() {
        *b = match (i * 7919 % 251) as u8 {
            b'\n' => 0xff,
            x => x,
        };
    }
    w.write_all(&junk).unwrap();
    w.write_all(b"\n").unwrap();
    let e = reply(&mut r);
    assert!(e["error"]["code"].as_i64().unwrap() < 0);
    // the same connection still works
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"daemon.status\"}\n")
        .unwrap();
    assert!(reply(&mut r)["result"]["pid"].as_u64().is_some());
    // a connection dropped mid-line
    {
        let (_r2, mut w2) = raw_conn(&sb);
        w2.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"meth")
            .unwrap();
    }
    // a second client is served
    let mut c = sb.client();
    let s = c.call_value("daemon.status", json!({})).unwrap();
    assert!(s["pid"].as_u64().is_some());
}

#[test]
fn unsafe_socket_dirs_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    std::fs::create_dir_all(&sb.sock).unwrap();
    std::fs::set_permissions(&sb.sock, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = sb.run(&["daemon"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("must be private"), "{err}");
    // a client refuses it too
    let o = sb.run(&["screen", "x"]);
    assert!(!o.status.success());

    // a symlink
    std::fs::remove_dir(&sb.sock).unwrap();
    let real = sb.tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&real, &sb.sock).unwrap();
    let o = sb.run(&["daemon"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("symlink"));

    // owned by someone else (needs root to chown)
    if nix::unistd::getuid().is_root() {
        std::fs::remove_file(&sb.sock).unwrap();
        std::fs::create_dir(&sb.sock).unwrap();
        std::fs::set_permissions(&sb.sock, std::fs::Permissions::from_mode(0o700)).unwrap();
        nix::unistd::chown(&sb.sock, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let o = sb.run(&["daemon"]);
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("owned by uid 65534"));
        nix::unistd::chown(&sb.sock, Some(nix::unistd::getuid()), None).unwrap();
    }
}

#[test]
fn a_peer_with_another_uid_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::getuid().is_root() {
        eprintln!("not root: cannot run a client as another user here");
        return;
    }
    let sb = Sandbox::new();
    let mut c0 = sb.client_or_start();
    c0.call_value("daemon.status", json!({})).unwrap();
    // Open the doors (as a misconfiguration would) so only the uid check stands.
    for p in [
        sb.tmp.path().to_path_buf(),
        sb.sock.clone(),
        sb.sock.join("ccd.sock"),
    ] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    // perl is in every Debian base system and readable by nobody.
    let script = r#"use IO::Socket::UNIX; $SIG{PIPE} = "IGNORE"; my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!"; print $s qq({"jsonrpc":"2.0","id":1,"method":"hello","params":{"client":"x","protocol":{"min":1,"max":1}}}\n); my $got = <$s>; print(defined $got ? "GOT $got" : "CLOSED\n");"#;
    let o = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/perl",
            "-e",
            script,
        ])
        .arg(sb.sock.join("ccd.sock"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("CLOSED"),
        "stdout {out} stderr {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = c0.call_value("daemon.status", json!({})).unwrap();
    assert_eq!(s["refused_connections"], 1);
    std::fs::set_permissions(&sb.sock, std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn racing_clients_start_exactly_one_daemon() {
    let sb = Sandbox::new();
    let mut children: Vec<_> = (0..6)
        .map(|_| {
            sb.cmd(&["screen", "nothing-here"])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in &mut children {
        let _ = c.wait();
    }
    let pid = sb.daemon_pid().expect("one daemon");
    // Exactly one ccd daemon process for this socket dir.
    let count = ccd_testkit::procs::pids()
        .into_iter()
        .filter(|&p| {
            let c = ccd_testkit::procs::cmdline(p);
            let c = String::from_utf8_lossy(&c);
            c.contains("daemon") && c.contains(sb.sock.to_str().unwrap())
        })
        .count();
    assert_eq!(count, 1, "daemon pid {pid}");
    let _ = std::io::stdout().flush();
}

// Linux only: the holder's RSS is read in `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn a_client_that_never_reads_does_not_hurt_the_session_or_others() {
    const FLOOD: u64 = 20_000_000;
    let sb = Sandbox::new();
    let sid = sb.new_session("flood");
    // A stuck client: attaches, never reads.
    let (stuck_r, mut stuck_w) = raw_conn(&sb);
    stuck_w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\",\"params\":{\"client\":\"stuck\",\"protocol\":{\"min\":1,\"max\":1}}}\n").unwrap();
    stuck_w
        .write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session.attach\",\"params\":{{\"session\":\"{sid}\",\"mode\":\"observe\"}}}}\n").as_bytes())
        .unwrap();
    // A reading client.
    let mut c = sb.client();
    c.call_value("session.attach", json!({"session": sid, "mode": "observe"}))
        .unwrap();
    let holder_pid = sb.holder_pids()[0];
    let holder_sock = sb.holder_socket(&sid);
    let start = common::holder_info(&holder_sock).output_bytes;
    sb.type_flood(&sid, FLOOD);
    // Read until this client has caught up with everything the session
    // wrote, the whole flood included.
    let mut pos = 0u64;
    let mut resyncs = 0;
    let mut peak_rss = 0u64;
    let mut last_check = std::time::Instant::now();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "reader never caught up (at {pos})"
        );
        if let Some(n) = c
            .next_notification(Some(Duration::from_millis(200)))
            .unwrap()
        {
            match n.method.as_str() {
                "session.output" => {
                    let chunk: ccd_protocol::OutputChunk = n.params_as().unwrap();
                    assert!(
                        chunk.seq == pos || pos == 0 || resyncs > 0,
                        "gap at {pos}: {}",
                        chunk.seq
                    );
                    pos = chunk.seq + chunk.data.len() as u64;
                }
                "session.resync" => {
                    let r: ccd_protocol::stream::Resync = n.params_as().unwrap();
                    pos = r.seq;
                    resyncs += 1;
                }
                _ => {}
            }
        }
        if last_check.elapsed() > Duration::from_millis(200) {
            last_check = std::time::Instant::now();
            peak_rss = peak_rss.max(private_kb(holder_pid));
            let info = common::holder_info(&holder_sock);
            if info.output_bytes >= start + FLOOD && pos == info.output_bytes {
                // The stuck client's queue was dropped, not waited on.
                let dropped: u64 = info.clients.iter().map(|c| c.bytes_dropped).sum();
                assert!(dropped > 0, "nobody dropped anything: {:?}", info.clients);
                break;
            }
        }
    }
    eprintln!(
        "reader caught up at {pos} bytes with {resyncs} resync(s); holder private memory peak {peak_rss} kB"
    );
    assert!(
        peak_rss < common::HOLDER_FLOOD_PRIVATE_BOUND_KB,
        "holder private memory peaked at {peak_rss} kB (bound {} kB)",
        common::HOLDER_FLOOD_PRIVATE_BOUND_KB
    );
    // The counters are visible through the API.
    let info = sb
        .client()
        .call_value("sessions.get", json!({"session": sid}))
        .unwrap();
    let clients = info["ccd"]["clients"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        clients
            .iter()
            .any(|c| c["bytes_dropped"].as_u64().unwrap_or(0) > 0),
        "no dropped bytes reported: {info}"
    );
    // The session still answers, and a new client is served.
    let screen = sb.ok(&["screen", &sid]);
    assert!(screen.contains('❯'), "{screen}");
    drop(stuck_w);
    drop(stuck_r);
}

/// Reads `c` until its connection ends (notifications skipped), within
/// `within`.
fn until_closed(c: &mut ccd_client::Client, within: Duration, who: &str) {
    let deadline = std::time::Instant::now() + within;
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "{who}: the connection stayed open after daemon.stop"
        );
        if c.next_notification(Some(Duration::from_millis(200)))
            .is_err()
        {
            return;
        }
    }
}

/// `daemon.stop` replies, then the daemon exits, the stop ordered by
/// signals (issue 15): its reply reaches a client that reads slowly,
/// behind a megabyte of earlier replies still queued when the daemon
/// decides to stop (a timer between the reply and the exit would cut it
/// off), and every other client (idle, subscribed, attached) sees its
/// connection end. Several rounds, for the races.
#[test]
fn daemon_stop_reaches_a_slow_reader_and_ends_every_connection() {
    const STATUS_REQUESTS: u64 = 3000;
    let sb = Sandbox::new();
    for round in 0..3 {
        let sid = sb.new_session(&format!("stop{round}"));
        let pid = sb.daemon_pid().expect("a daemon runs");
        let mut idle = sb.client();
        let mut subscribed = sb.client();
        subscribed
            .call_value("events.subscribe", json!({}))
            .unwrap();
        let mut attached = sb.client();
        attached
            .call_value("session.attach", json!({"session": sid, "mode": "observe"}))
            .unwrap();
        // The slow reader pipelines its requests and reads nothing until
        // well after the daemon has decided to stop.
        let (mut r, mut w) = raw_conn(&sb);
        let mut batch = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hello\",\"params\":{\"client\":\"slow\",\"protocol\":{\"min\":1,\"max\":1}}}\n".to_vec();
        for id in 2..2 + STATUS_REQUESTS {
            batch.extend(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"daemon.status\"}}\n")
                    .as_bytes(),
            );
        }
        let stop_id = 2 + STATUS_REQUESTS;
        batch.extend(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{stop_id},\"method\":\"daemon.stop\",\"params\":{{}}}}\n")
                .as_bytes(),
        );
        w.write_all(&batch).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let mut stop_reply = None;
        let mut bytes = 0usize;
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) => break,
                Ok(n) => bytes += n,
                // The end of a connection the daemon closed.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("round {round}: reading the slow client: {e}"),
            }
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["id"] == stop_id {
                stop_reply = Some(v);
            }
        }
        let stop_reply = stop_reply.unwrap_or_else(|| {
            panic!("round {round}: no daemon.stop reply after {bytes} bytes of replies")
        });
        assert_eq!(stop_reply["result"]["stopping"], true, "{stop_reply}");
        assert!(
            bytes > 512 * 1024,
            "only {bytes} bytes queued before the stop"
        );
        for (c, who) in [
            (&mut idle, "idle"),
            (&mut subscribed, "subscribed"),
            (&mut attached, "attached"),
        ] {
            until_closed(c, Duration::from_secs(10), who);
        }
        wait_for(Duration::from_secs(10), "the daemon to exit", || {
            (!ccd_testkit::procs::exists(pid)).then_some(())
        });
        // The sessions live on in their holders; a new daemon adopts them.
        let _ = sb.client_or_start();
        assert_eq!(sb.holder_pids().len(), round + 1);
    }
}

/// Whether `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    ccd_testkit::procs::gone(pid)
}

/// A holder exits as soon as its exit is collected, with no timer before
/// it exits (issue 15), and the `holder.collect` reply reaches the
/// collector every time: the holder raises its stop only once that reply
/// is written.
#[test]
fn a_collected_holder_exits_at_once_and_its_reply_arrives() {
    let sb = Sandbox::new();
    let sids: Vec<String> = (0..4).map(|i| sb.new_session(&format!("c{i}"))).collect();
    let socks: Vec<_> = sids.iter().map(|s| sb.holder_socket(s)).collect();
    let pids = sb.holder_pids();
    assert_eq!(pids.len(), sids.len());
    // Without a daemon, nobody else collects.
    sb.ok(&["daemon", "stop"]);
    for sock in &socks {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        w.write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"holder.kill\",\"params\":{\"signal\":\"hup\"}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"holder.collect\",\"params\":{\"wait_ms\":5000}}\n",
        )
        .unwrap();
        let collected = loop {
            let v = reply(&mut r);
            if v["id"] == 2 {
                break v;
            }
        };
        assert_eq!(collected["result"]["collected"], true, "{collected}");
        // Then the holder is gone: its end of the connection closes.
        let mut rest = String::new();
        let end = r.read_line(&mut rest);
        assert!(
            matches!(&end, Ok(0))
                || matches!(&end, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
            "{end:?} {rest:?} after the collect reply"
        );
    }
    wait_for(Duration::from_secs(10), "the holders to exit", || {
        pids.iter().all(|&p| gone(p)).then_some(())
    });
}
