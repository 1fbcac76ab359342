//! The parse backlog: bounded in bytes however far the model falls behind,
//! and a redraw taken while it is far behind (parse on demand, a small seed)
//! still lines up exactly with the stream.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ccd_holder::{AttachMode, Holder, HolderClient, ScreenFormat, StreamEvent};
use ccd_screen::Screen;
use common::{init_tracing, wait_screen, Env};

const T: Duration = Duration::from_secs(60);
/// Random bytes before base64 (≈ 8 MB of output).
const FLOOD: usize = 6_000_000;
/// The backlog's cap here (below [`ccd_holder::session::BACKLOG_MIN`], so
/// it is the binding one).
const BACKLOG: usize = 256 << 10;
/// Per-client queue: a redraw seeds at most half of it.
const QUEUE: usize = 64 << 10;

/// A terminal fed with what a client gets.
struct Viewer {
    c: HolderClient,
    screen: Screen,
    pos: u64,
    resyncs: u32,
}

impl Viewer {
    fn attach(env: &Env, mode: AttachMode) -> Self {
        let mut c = HolderClient::connect(&env.socket()).unwrap();
        c.attach(mode).unwrap();
        let mut v = Viewer {
            c,
            screen: Screen::with_scrollback(24, 80, 0),
            pos: 0,
            resyncs: 0,
        };
        match v.c.next_event(T).unwrap() {
            StreamEvent::Resync(r) => v.redraw(&r),
            other => panic!("{other:?}"),
        }
        v
    }

    fn redraw(&mut self, r: &ccd_protocol::stream::Resync) {
        self.screen = Screen::with_scrollback(r.size.rows, r.size.cols, 0);
        self.screen.process(&r.data);
        self.pos = r.seq;
    }

    /// Reads one event; the stream must continue where it was.
    fn read_one(&mut self) {
        match self.c.next_event(T).unwrap() {
            StreamEvent::Output(o) => {
                assert_eq!(o.seq, self.pos, "a gap in the stream");
                self.screen.process(&o.data);
                self.pos = o.end_seq();
            }
            StreamEvent::Resync(r) => {
                self.resyncs += 1;
                self.redraw(&r);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_backlog_stays_within_its_cap_and_a_redraw_far_behind_lines_up() {
    init_tracing();
    let env = Env::new();
    let mut cfg = env.sh(&format!(
        "echo armed; read go; head -c {FLOOD} /dev/urandom | base64; echo __END__; read x"
    ));
    cfg.client_queue_bytes = QUEUE;
    cfg.parse_backlog_bytes = BACKLOG;
    let holder = Holder::spawn(&cfg).unwrap();
    let session = Arc::clone(holder.session());
    let listener = ccd_holder::bind(&cfg.socket_path).unwrap();
    let serve = std::thread::spawn(move || holder.serve(listener));
    let mut c = HolderClient::connect(&cfg.socket_path).unwrap();
    wait_screen(&mut c, T, "armed");

    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done, session) = (Arc::clone(&peak), Arc::clone(&done), Arc::clone(&session));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(session.backlog_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };

    // A reader that keeps up from the start (its own thread), then the flood.
    let mut reader = Viewer::attach(&env, AttachMode::Interactive);
    reader.c.input(b"\r").unwrap();
    let reader = std::thread::spawn(move || {
        while !reader.screen.contents().contains("__END__") {
            reader.read_one();
        }
        reader
    });
    // The model falls far behind (every parse held back): the reader goes
    // on to the backlog's cap, then waits there (the PTY is paced).
    let pause = session.pause_parse();
    let mut last = (0, std::time::Instant::now());
    let far_behind = loop {
        let b = session.backlog_bytes();
        if b != last.0 {
            last = (b, std::time::Instant::now());
        } else if last.1.elapsed() > Duration::from_millis(300) {
            break b;
        }
        assert!(
            !reader.is_finished(),
            "the flood ended before the model fell behind"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    drop(pause);
    // Then a second client attaches: its redraw waits for the model to come
    // within half its queue (parse on demand), and lines up with the stream.
    let mut late = Viewer::attach(&env, AttachMode::Interactive);
    while !late.screen.contents().contains("__END__") {
        late.read_one();
    }
    let mut reader = reader.join().unwrap();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);
    eprintln!("backlog peak {peak} bytes (cap {BACKLOG}); the late client attached {far_behind} bytes behind");
    assert!(
        peak <= BACKLOG,
        "the backlog held {peak} bytes, cap {BACKLOG}"
    );
    // The flood pushed at the cap (the PTY was paced there).
    assert!(
        far_behind > BACKLOG / 2,
        "the reader stopped at {far_behind} bytes behind"
    );

    // Both ended on the holder's screen (parsed on demand to the end).
    let screen = c.screen(ScreenFormat::Text).unwrap();
    while late.pos < reader.pos {
        late.read_one();
    }
    while reader.pos < late.pos {
        reader.read_one();
    }
    assert_eq!(reader.resyncs, 0, "the reading client lost output");
    assert_eq!(late.resyncs, 0, "the late client lost output");
    assert_eq!(reader.screen.contents(), screen.text);
    assert_eq!(late.screen.contents(), screen.text);
    let info = c.info().unwrap();
    assert!(info.clients.iter().all(|s| s.bytes_dropped == 0));
    assert_eq!(info.output_bytes, reader.pos);

    c.kill(ccd_holder::KillSignal::Kill, None).unwrap();
    c.collect(T).unwrap();
    serve.join().unwrap().unwrap();
}
