//! Another machine on the dashboard: one ssh connection (`ccd dial-stdio`
//! there) for the dashboard's lifetime carries that machine's events, its
//! listings, previews, costs and actions; lost, it is made again with
//! back-off ([`BACKOFF_FIRST`] doubling to [`BACKOFF_MAX`]).
//!
//! Two threads per machine, and who owns what:
//! - the link owns the connection's writer and the job channel's receiver;
//!   it connects (subscribe, then list), then runs jobs one at a time, each
//!   call waiting for its reply on the reply channel with the method's
//!   deadline (`ccd_client::deadline`). A call past its deadline (a stalled
//!   network, a stopped ssh) or a failed write ends the connection: both
//!   directions are shut, so the reader wakes, and ssh is ended with it.
//!   While the machine is unreachable, jobs are answered at once
//!   ([`jobs::refuse`]).
//! - the reader (one per connection) owns the reading half (and with it
//!   the ssh process): events go to the main loop (never blocking it: a
//!   full queue drops the event and asks for a listing instead), replies to
//!   the link (a line over the client's bound as [`Reply::TooLarge`]: the
//!   call waiting is told its reply was too large, not left to time out);
//!   at the end of the stream it says so to the link
//!   ([`Job::Lost`] with the connection's generation, so a late word about
//!   an old connection is ignored) and drops the reply channel, which ends
//!   a call waiting on it at once.
//!
//! The main thread only queues jobs here (an unbounded channel): no key
//! waits for a machine.

use super::jobs::{self, Tails};
use super::{Job, Msg, RELOAD_EVERY};
use crate::ui::data;
use crate::ui::view::Daemon;
use ccd_client::client::Oversized;
use ccd_client::deadline::{deadline_for, NotAnswering, CALL_TIMEOUT};
use ccd_client::ssh::{Remote, StderrSink};
use ccd_client::{Caller, Client, ClientError};
use ccd_protocol::methods::daemon::Hello;
use ccd_protocol::methods::events::{
    Event as DaemonEvent, EventNotification, EventsSubscribe, SubscribeParams,
};
use ccd_protocol::{Incoming, Method, NotificationKind, Response};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The first wait before connecting again.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// `remote` for a connection under the dashboard: ssh may ask nothing
/// ([`Remote::batch`]: `BatchMode`, since a question on the full-screen
/// dashboard's terminal could not be answered; the option goes after the
/// whole ssh command, as `ccd --host` builds it, and `hello` is waited
/// for at most [`ccd_client::ssh::BATCH_CONNECT_TIMEOUT`]), and what it
/// says on stderr is kept (its last line explains a failure) instead of
/// being printed over the dashboard.
pub(super) fn quiet(remote: &Remote) -> (Remote, Arc<Mutex<String>>) {
    let said = Arc::new(Mutex::new(String::new()));
    let keep = said.clone();
    let mut r = remote.clone();
    r.batch = true;
    r.stderr = StderrSink::Lines(Arc::new(move |line: &[u8]| {
        let text = String::from_utf8_lossy(line).trim().to_string();
        if !text.is_empty() {
            if let Ok(mut s) = keep.lock() {
                *s = text;
            }
        }
    }));
    (r, said)
}

/// Starts the link of `remote` (from [`quiet`]); its jobs go into the
/// returned channel.
pub(super) fn spawn(
    (remote, said): (Remote, Arc<Mutex<String>>),
    tx: SyncSender<Msg>,
    auto_trust: bool,
) -> Sender<Job> {
    let (jobs, rx) = mpsc::channel::<Job>();
    let own = jobs.clone();
    std::thread::spawn(move || {
        let link = LinkThread {
            label: remote.label.clone(),
            remote,
            said,
            tx,
            jobs: own,
            auto_trust,
        };
        link.run(&rx);
    });
    jobs
}

struct LinkThread {
    label: String,
    remote: Remote,
    /// ssh's last stderr line.
    said: Arc<Mutex<String>>,
    tx: SyncSender<Msg>,
    /// Handed to each reader, for [`Job::Lost`] and reload requests.
    jobs: Sender<Job>,
    auto_trust: bool,
}

/// How serving a connection ended.
enum Ended {
    /// The connection is gone (why).
    Lost(String),
    /// The dashboard is gone.
    Quit,
}

impl LinkThread {
    fn run(&self, rx: &Receiver<Job>) {
        let mut backoff = BACKOFF_FIRST;
        for generation in 1u64.. {
            let why = match self.open(generation) {
                Ok(mut conn) => {
                    backoff = BACKOFF_FIRST;
                    match self.serve(&mut conn, rx) {
                        Ended::Quit => return,
                        Ended::Lost(why) => {
                            conn.close();
                            why
                        }
                    }
                }
                Err(e) => self.explain(&e),
            };
            tracing::debug!(host = %self.label, %why, retry_in = ?backoff, "a machine is unreachable");
            if !self.say(Msg::Daemon(self.label.clone(), Daemon::Gone(why.clone()))) {
                return;
            }
            // Wait out the back-off, answering every job at once.
            let until = Instant::now() + backoff;
            loop {
                match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(job) => {
                        if let Some(m) = jobs::refuse(&self.label, job, &why) {
                            if !self.say(m) {
                                return;
                            }
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// To the main thread; false when the dashboard is gone.
    fn say(&self, m: Msg) -> bool {
        self.tx.send(m).is_ok()
    }

    /// Why a connection failed, with ssh's own last word when it said one.
    fn explain(&self, e: &ClientError) -> String {
        let said = self.said.lock().map(|s| s.clone()).unwrap_or_default();
        let said = ccd_claude::display::line(&said).into_owned();
        let e = explain_error(e);
        if said.is_empty() || e.contains(&said) {
            e
        } else {
            format!("{e}: {said}")
        }
    }

    /// Connects, subscribes, lists, and starts the reader; the machine is
    /// then up.
    fn open(&self, generation: u64) -> Result<Conn, ClientError> {
        if let Ok(mut s) = self.said.lock() {
            s.clear();
        }
        let mut client =
            ccd_client::ssh::connect(&self.remote, crate::shared::connect::CLIENT_NAME)?;
        let ssh_pid = client.peer_pid();
        // Subscribed first: what changes while the list is read comes as
        // events, kept in the client's queue until the reader sends them.
        client.call::<EventsSubscribe>(&SubscribeParams { types: None })?;
        let rows = data::remote_listing(&mut Keeping(&mut client))?;
        let (reader, writer, queued) = client.split();
        writer.set_write_timeout(Some(CALL_TIMEOUT))?;
        let (replies_tx, replies) = mpsc::channel::<Reply>();
        if !self.say(Msg::Daemon(self.label.clone(), Daemon::Connected))
            || !self.say(Msg::Rows(self.label.clone(), Ok(rows)))
        {
            return Err(ClientError::Closed);
        }
        let reading = Reading {
            label: self.label.clone(),
            tx: self.tx.clone(),
            replies: replies_tx,
            jobs: self.jobs.clone(),
            generation,
            lagging: false,
        };
        std::thread::spawn(move || reading.run(reader, queued));
        Ok(Conn {
            label: self.label.clone(),
            writer,
            replies,
            generation,
            ssh_pid,
            last_list: Instant::now(),
        })
    }

    /// Runs jobs on `conn` until it is lost or the dashboard is gone.
    /// Reloads coalesce, at most one listing per [`RELOAD_EVERY`].
    fn serve(&self, conn: &mut Conn, rx: &Receiver<Job>) -> Ended {
        let mut reload_at: Option<Instant> = None;
        loop {
            let job = match reload_at {
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(j) => Some(j),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return Ended::Quit,
                },
                None => match rx.recv() {
                    Ok(j) => Some(j),
                    Err(_) => return Ended::Quit,
                },
            };
            match job {
                None => {
                    reload_at = None;
                    conn.last_list = Instant::now();
                    match data::remote_listing(conn) {
                        Ok(rows) => {
                            if !self.say(Msg::Rows(self.label.clone(), Ok(rows))) {
                                return Ended::Quit;
                            }
                        }
                        Err(e) if e.rpc().is_none() => return Ended::Lost(e.to_string()),
                        Err(e) => {
                            if !self.say(Msg::Rows(self.label.clone(), Err(e.to_string()))) {
                                return Ended::Quit;
                            }
                        }
                    }
                }
                Some(Job::Reload) => {
                    reload_at.get_or_insert(conn.last_list + RELOAD_EVERY);
                }
                Some(Job::Lost { generation, why }) if generation == conn.generation => {
                    return Ended::Lost(why)
                }
                Some(Job::Lost { .. }) => {} // about an earlier connection
                Some(job) => {
                    let ran = jobs::run(
                        &self.label,
                        job,
                        Some(&mut *conn),
                        Tails::Api,
                        self.auto_trust,
                    );
                    if let Some(m) = ran.msg {
                        if !self.say(m) {
                            return Ended::Quit;
                        }
                    }
                    if let Some(why) = ran.lost {
                        return Ended::Lost(why);
                    }
                }
            }
        }
    }
}

/// A connection's failure as the dashboard says it: a `hello` not
/// answered within the dashboard's deadline says why it gave up so soon
/// (ssh in `BatchMode` asks nothing, so no password prompt can be what
/// is waited for).
fn explain_error(e: &ClientError) -> String {
    match e.not_answering() {
        Some(n) if n.during == Hello::NAME && n.waited >= ccd_client::ssh::BATCH_CONNECT_TIMEOUT => format!(
            "{e} (the dashboard waits at most {}s for a machine's hello: its ssh runs with BatchMode=yes, so it asks no question that could be pending)",
            ccd_client::ssh::BATCH_CONNECT_TIMEOUT.as_secs()
        ),
        _ => e.to_string(),
    }
}

/// A [`Caller`] over a whole client that keeps the notifications arriving
/// meanwhile (the events of the listing read right after subscribing).
struct Keeping<'a>(&'a mut Client);

impl Caller for Keeping<'_> {
    fn ask<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.0.call::<M>(params)
    }
}

/// What the reader passes on to a call waiting.
enum Reply {
    Response(Response),
    /// A line over the client's bound (dropped): the reply awaited, most
    /// likely (the link makes one call at a time).
    TooLarge(Oversized),
}

/// One connection of a link: the writing half and the replies the reader
/// passes on.
struct Conn {
    label: String,
    writer: ccd_client::client::Writer,
    replies: Receiver<Reply>,
    generation: u64,
    ssh_pid: Option<u32>,
    last_list: Instant,
}

impl Conn {
    /// Ends the connection: the reader wakes at the end of the stream and
    /// ends ssh.
    fn close(&self) {
        let _ = self.writer.shutdown_both();
    }

    fn not_answering(&self, during: &str, waited: Duration) -> ClientError {
        ClientError::NotAnswering(NotAnswering::remote(
            &self.label,
            self.ssh_pid,
            during,
            waited,
        ))
    }
}

impl Caller for Conn {
    fn ask<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        let within = deadline_for::<M>(params);
        // What came for a call given up on is not this call's.
        while self.replies.try_recv().is_ok() {}
        let id = match self.writer.send_typed::<M>(params) {
            Err(ClientError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(self.not_answering(M::NAME, CALL_TIMEOUT))
            }
            r => r?,
        };
        let until = Instant::now() + within;
        loop {
            match self
                .replies
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Ok(Reply::Response(r)) if r.id.as_ref() == Some(&id) => {
                    let v = r.outcome.map_err(ClientError::Rpc)?;
                    return serde_json::from_value(v)
                        .map_err(|e| ClientError::Protocol(format!("{}: {e}", M::NAME)));
                }
                Ok(Reply::TooLarge(o)) => {
                    return Err(ClientError::TooLarge {
                        from: format!("the ccd on {}", self.label),
                        during: M::NAME.to_string(),
                        len: o.len,
                        whole: o.whole,
                        max: ccd_protocol::MAX_LINE_BYTES,
                    })
                }
                // A reply to a call given up on, or to nothing.
                Ok(Reply::Response(_)) => {}
                Err(RecvTimeoutError::Timeout) => return Err(self.not_answering(M::NAME, within)),
                Err(RecvTimeoutError::Disconnected) => return Err(ClientError::Closed),
            }
        }
    }
}

/// A connection's reader thread.
struct Reading {
    label: String,
    tx: SyncSender<Msg>,
    replies: Sender<Reply>,
    jobs: Sender<Job>,
    generation: u64,
    /// Events were dropped (the main thread's queue was full) and a
    /// listing asked: one listing per spell, however many events.
    lagging: bool,
}

impl Reading {
    fn run(
        mut self,
        mut reader: ccd_client::client::Reader,
        queued: std::collections::VecDeque<ccd_protocol::Notification>,
    ) {
        for n in queued {
            if !self.note(&n) {
                return;
            }
        }
        let why = loop {
            match reader.next_or_oversized() {
                Ok(Err(o)) => {
                    tracing::warn!(host = %self.label, len = o.len, "a message over the client's bound, dropped");
                    let _ = self.replies.send(Reply::TooLarge(o));
                }
                Ok(Ok(Incoming::Notification(n))) => {
                    if !self.note(&n) {
                        return;
                    }
                }
                Ok(Ok(Incoming::Response(r))) => {
                    let _ = self.replies.send(Reply::Response(r));
                }
                Ok(Ok(Incoming::Request(_))) => {}
                Err(ClientError::Closed) => break "the connection closed".to_string(),
                Err(e) => break e.to_string(),
            }
        };
        drop(self.replies);
        let _ = self.jobs.send(Job::Lost {
            generation: self.generation,
            why,
        });
        // `reader` goes here, and the ssh under it.
    }

    /// Passes an event on; false when the dashboard is gone.
    fn note(&mut self, n: &ccd_protocol::Notification) -> bool {
        if n.method != EventNotification::NAME {
            return true;
        }
        let e = match n.params_as::<DaemonEvent>() {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(host = %self.label, error = %e.message, "skipping an event that does not read");
                return true;
            }
        };
        match self
            .tx
            .try_send(Msg::Event(self.label.clone(), Box::new(e)))
        {
            Ok(()) => {
                self.lagging = false;
                true
            }
            // The main thread is not taking messages (an attached session
            // has the terminal): this event is dropped and the machine
            // listed again instead, as after `events.lagged` (once for
            // the whole spell: the link's job queue stays short).
            Err(TrySendError::Full(_)) => {
                if !self.lagging {
                    self.lagging = true;
                    let _ = self.jobs.send(Job::Reload);
                }
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `hello` not answered within the dashboard's deadline says why the
    /// dashboard gave up so soon; one cut short by a trickle does not
    /// claim the full deadline.
    #[test]
    fn a_hello_past_the_dashboard_deadline_says_why() {
        let at = |waited| {
            explain_error(&ClientError::NotAnswering(NotAnswering::remote(
                "far",
                None,
                Hello::NAME,
                waited,
            )))
        };
        let full = at(ccd_client::ssh::BATCH_CONNECT_TIMEOUT);
        assert!(
            full.starts_with("the ccd on far did not answer `hello` within 20s"),
            "{full}"
        );
        assert!(
            full.contains("the dashboard waits at most 20s for a machine's hello: its ssh runs with BatchMode=yes"),
            "{full}"
        );
        let cut = at(Duration::from_millis(5100));
        assert!(cut.contains("within 5.1s"), "{cut}");
        assert!(!cut.contains("BatchMode"), "{cut}");
    }
}
