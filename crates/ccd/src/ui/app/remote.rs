//! Another machine on the dashboard: one ssh connection (`ccd dial-stdio`
//! there) for the dashboard's lifetime, a [`ccd_client::Link`], carries
//! that machine's events, its listings, previews, costs and actions; lost,
//! it is made again with back-off ([`BACKOFF_FIRST`] doubling to
//! [`BACKOFF_MAX`]).
//!
//! Who owns what:
//! - the link thread (one per machine) owns the job channel's receiver and
//!   the link while it is up. It connects (the link started with the
//!   event sink held, subscribe, then list: the listing goes out, then the
//!   events held meanwhile, [`super::forward`]), then runs jobs one at a
//!   time, each call through the link within the method's deadline
//!   (`ccd_client::deadline`). A call past its deadline (a stalled
//!   network, a stopped ssh) or a failed write ends the connection
//!   ([`Link::close`]: the link's reader wakes, ssh is ended with it).
//!   While the machine is unreachable, jobs are answered at once
//!   ([`jobs::refuse`]).
//! - the link's own reader thread routes replies to the call waiting and
//!   events to the forwarder (never blocking: a full queue drops the event
//!   and asks for a listing instead); at the end of the stream it fails
//!   the call waiting and says so to the link thread ([`Job::Lost`] with
//!   the connection's generation, so a late word about an old connection
//!   is ignored).
//!
//! The main thread only queues jobs here (an unbounded channel): no key
//! waits for a machine.

use super::forward::Forward;
use super::jobs::{self, Tails};
use super::{Job, Msg, RELOAD_EVERY};
use crate::ui::data;
use crate::ui::view::Daemon;
use ccd_client::ssh::{Remote, StderrSink};
use ccd_client::{ClientError, Link};
use ccd_protocol::methods::daemon::Hello;
use ccd_protocol::methods::events::{EventNotification, EventsSubscribe, SubscribeParams};
use ccd_protocol::{Method, NotificationKind};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
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

    /// Connects, starts the link, subscribes and lists; the machine is
    /// then up.
    fn open(&self, generation: u64) -> Result<Conn, ClientError> {
        if let Ok(mut s) = self.said.lock() {
            s.clear();
        }
        let client = ccd_client::ssh::connect(&self.remote, crate::shared::connect::CLIENT_NAME)?;
        let reload = self.jobs.clone();
        let events = Forward::new(
            &self.label,
            self.tx.clone(),
            Box::new(move || {
                let _ = reload.send(Job::Reload);
            }),
            true,
        );
        let lost = self.jobs.clone();
        let link = Link::builder()
            .subscribe(EventNotification::NAME, Forward::sink(events.clone()))
            .on_close(move |why| {
                let _ = lost.send(Job::Lost {
                    generation,
                    why: why.to_string(),
                });
            })
            .start(client)?;
        let conn = Conn {
            link,
            generation,
            last_list: Instant::now(),
        };
        // Subscribed first: what changes while the list is read comes as
        // events, held until the list is out.
        let listed = conn
            .link
            .call::<EventsSubscribe>(&SubscribeParams { types: None })
            .and_then(|_| data::remote_listing(&mut conn.link.clone()));
        let rows = match listed {
            Ok(rows) => rows,
            Err(e) => {
                conn.close();
                return Err(e);
            }
        };
        if !self.say(Msg::Daemon(self.label.clone(), Daemon::Connected))
            || !self.say(Msg::Rows(self.label.clone(), Ok(rows)))
            || !Forward::open(&events)
        {
            conn.close();
            return Err(ClientError::Closed);
        }
        Ok(conn)
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
                    match data::remote_listing(&mut conn.link) {
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
                        Some(&mut conn.link),
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

/// One connection of a machine: its link, and when it was listed last.
struct Conn {
    link: Link,
    generation: u64,
    last_list: Instant,
}

impl Conn {
    /// Ends the connection: the link's reader wakes at the end of the
    /// stream, fails the call waiting, and ends ssh.
    fn close(&self) {
        self.link.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccd_client::NotAnswering;

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
