//! The threads that own the PTY and the child:
//!
//! - the **reader** reads the master into the session ([`Session::on_output`]:
//!   screen model + fan-out; see [`crate::fanout`] for the invariant that it
//!   never waits on a client);
//! - the **parser** feeds the output to the screen model beside the stream
//!   ([`Session::parse_step`]; see [`crate::session`] for why and how the
//!   redraws still line up);
//! - the **writer** is the single owner of PTY input: everything typed
//!   (clients, the trust step) goes through its bounded channel;
//! - the **waiter** waits for the child, records its exit, reaps it.

use std::io::{Read, Write};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use portable_pty::Child;

use crate::exit;
use crate::session::Session;

/// Bytes per PTY read.
const READ_BUF: usize = 64 * 1024;
/// After the child exits, how long to wait for the rest of its output before
/// telling clients (a descendant may keep the PTY open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Start the reader thread.
pub fn spawn_reader(
    session: Arc<Session>,
    mut reader: Box<dyn Read + Send>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-pty-reader".into())
        .spawn(move || {
            let mut sched = crate::sched::Adaptive::start();
            let mut buf = vec![0u8; READ_BUF];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        sched.moved(n);
                        session.on_output(&buf[..n]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO: every slave fd closed.
                    Err(e) => {
                        tracing::debug!(error = %e, "pty read ended");
                        break;
                    }
                }
            }
            session.lock().output_eof = true;
            session.notify();
            session.wake_parser();
            tracing::debug!("pty reader done");
        })
}

/// Start the parser thread.
pub fn spawn_parser(session: Arc<Session>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-parser".into())
        .spawn(move || {
            crate::sched::bulk();
            while session.parse_step() {}
            tracing::debug!("parser done");
        })
}

/// Start the writer thread (the only writer of PTY input).
pub fn spawn_writer(
    mut writer: Box<dyn Write + Send>,
    input: Receiver<Vec<u8>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-pty-writer".into())
        .spawn(move || {
            crate::sched::short_slice();
            for bytes in input {
                if let Err(e) = writer.write_all(&bytes).and_then(|()| writer.flush()) {
                    tracing::debug!(error = %e, "pty write failed; input writer stops");
                    break;
                }
            }
        })
}

/// Start the waiter thread.
pub fn spawn_waiter(
    session: Arc<Session>,
    child: Box<dyn Child + Send + Sync>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("holder-child-waiter".into())
        .spawn(move || {
            let pid = session.fixed.pid;
            let waited = exit::wait_exited_no_reap(pid);
            if waited {
                // A zombie now: from here on no signal is sent (crate::exit).
                session.lock().child_gone = true;
            }
            let info = exit::reap(child);
            session.lock().child_gone = true;
            tracing::info!(pid, code = ?info.code, signal = ?info.signal, "child exited");
            let (g, _) = session.wait_for(DRAIN_AFTER_EXIT, |g| g.output_eof);
            drop(g);
            // The last output parsed too (on demand, here: the backlog is
            // bounded): the final screen is what is kept.
            session.catch_up();
            let mut g = session.lock();
            g.exit = Some(info.clone());
            g.fanout.mark_exited(info);
            drop(g);
            session.notify();
        })
}
