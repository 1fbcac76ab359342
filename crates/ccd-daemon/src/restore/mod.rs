//! The restore record: what ccd holds, kept durably in the state dir so
//! a daemon started after a reboot knows which sessions were lost (not
//! ended) and can bring them back (`session_ops::restore`).
//!
//! Here: [`Restore`], the service the daemon keeps (the record as last
//! written, the config's `restore` mode and bound, the write counter),
//! fed by the record task (`tasks::record`) from the holder table. Beside
//! it: [`record`] (the logic, sans IO: entries, the next record, the lost
//! rule, a restore's arguments), [`model`] (a `/model` switch, read from
//! the transcript) and [`store`] (the file, written atomically).

pub mod model;
pub mod record;
pub mod store;

use crate::holders::{HolderEntry, HolderTable};
use ccd_protocol::methods::session::{HeldRecord, RecordEntry};
use record::{Gone, Observed};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub use crate::options::RestoreMode;

/// How many lost sessions are resumed at once unless the config says
/// otherwise (`restore_at_once`).
pub const DEFAULT_AT_ONCE: usize = 4;

/// The most the config may set `restore_at_once` to.
pub const MAX_AT_ONCE: usize = 64;

/// This machine's boot id: the test hook's (`CCD_TEST_BOOT_ID`, a
/// simulated reboot) or the system's; `None` when unreadable.
pub fn boot_id() -> Option<String> {
    if let Some(v) = ccd_test_hooks::Hook::BootId.read() {
        return v.into_string().ok();
    }
    match ccd_os::boot::boot_id() {
        Ok(id) => Some(id),
        Err(error) => {
            tracing::warn!(%error, "cannot read the machine's boot id; a reboot is told only by every holder gone");
            None
        }
    }
}

/// The record service.
pub struct Restore {
    dir: PathBuf,
    pub mode: RestoreMode,
    /// At most this many resumes at once.
    pub at_once: usize,
    /// The record as last written (or read).
    last: Mutex<HeldRecord>,
    boot: Option<String>,
    /// Records written since start.
    writes: AtomicU64,
    /// What reading the record at start found wrong, once.
    problem: Mutex<Option<String>>,
    /// At most `at_once` resumes of lost sessions at a time, across
    /// every restore running.
    pub turns: std::sync::Arc<tokio::sync::Semaphore>,
    /// Claude Code's `projects` dir (the transcripts), where a `/model`
    /// switch is read; `None`: not read.
    projects: Option<PathBuf>,
    /// Each live holder's transcript, followed for a `/model` switch.
    follows: Mutex<HashMap<String, model::Follow>>,
}

impl Restore {
    /// Reads the record in `state_dir` (a bad one is moved aside and
    /// logged once).
    pub fn open(state_dir: PathBuf, mode: RestoreMode, at_once: usize) -> Self {
        let at_once = at_once.clamp(1, MAX_AT_ONCE);
        let (last, problem) = match store::read(&state_dir) {
            store::Read::Absent => (HeldRecord::default(), None),
            store::Read::Record(r) => (r, None),
            store::Read::Bad { error, moved_to } => {
                let text = match &moved_to {
                    Some(to) => format!("{error}; moved aside to {}", to.display()),
                    None => error.to_string(),
                };
                tracing::error!(%error, moved_to = ?moved_to, "the restore record is unreadable; starting a new one (no session is restored from it)");
                (HeldRecord::default(), Some(text))
            }
        };
        Self {
            dir: state_dir,
            mode,
            at_once,
            last: Mutex::new(last),
            boot: boot_id(),
            writes: AtomicU64::new(0),
            problem: Mutex::new(problem),
            turns: std::sync::Arc::new(tokio::sync::Semaphore::new(at_once)),
            projects: None,
            follows: Mutex::new(HashMap::new()),
        }
    }

    /// Reads `/model` switches from the transcripts under `projects`.
    pub fn with_projects(mut self, projects: PathBuf) -> Self {
        self.projects = Some(projects);
        self
    }

    /// Each live holder's model switched to inside the TUI, read from the
    /// new part of its transcript; followers of holders gone are dropped.
    fn models_seen(&self, live: &mut [Observed]) {
        let Some(projects) = &self.projects else {
            return;
        };
        let Ok(mut follows) = self.follows.lock() else {
            return;
        };
        follows.retain(|h, _| live.iter().any(|o| &o.holder == h));
        for o in live.iter_mut() {
            let Some(sid) = o.session.as_deref() else {
                continue;
            };
            let fresh = !follows.contains_key(&o.holder);
            let f = follows.entry(o.holder.clone()).or_default();
            let before = f.switches.model.clone();
            f.pass(projects, sid, &o.cwd, fresh);
            if let Some(m) = f
                .switches
                .model
                .as_ref()
                .filter(|m| before.as_ref() != Some(*m))
            {
                tracing::info!(holder = %o.holder, session = %sid, model = %m, "model switched inside the TUI (from its transcript)");
            }
            o.model_seen = f.switches.model.clone();
        }
    }

    /// What was wrong with the record at start, if anything.
    pub fn problem(&self) -> Option<String> {
        self.problem.lock().ok().and_then(|p| p.clone())
    }

    /// Records written since start.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// The record as last written.
    pub fn current(&self) -> HeldRecord {
        self.last.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// At daemon start, after adoption: applies the lost rule
    /// ([`record::at_start`]) to the holders adopted, writes the result
    /// (`off`: with no lost sessions), and returns it.
    pub fn start(&self, adopted: &HashSet<String>) -> record::AtStart {
        let prev = self.current();
        let mut s = record::at_start(&prev, adopted, self.boot.as_deref());
        for e in &s.newly_lost {
            tracing::warn!(session = %e.session, cwd = %e.cwd, rebooted = s.rebooted, "session lost (held when the machine or every holder went down)");
        }
        for e in &s.forgotten {
            tracing::info!(session = %e.session, holder = %e.holder, "its holder died alone; not restored");
        }
        if self.mode == RestoreMode::Off && !s.record.lost.is_empty() {
            tracing::info!(
                lost = s.record.lost.len(),
                "restore = \"off\": lost sessions forgotten"
            );
            s.record.lost.clear();
        }
        self.replace(s.record.clone());
        s
    }

    /// The sessions lost and not restored yet.
    pub fn lost(&self) -> Vec<RecordEntry> {
        self.current().lost
    }

    /// The lost entry of session `sid`, if it is one.
    pub fn lost_entry(&self, sid: &str) -> Option<RecordEntry> {
        self.lost().into_iter().find(|e| e.session == sid)
    }

    /// Forgets lost session `sid` (it cannot come back: its folder or
    /// transcript is gone).
    pub fn drop_lost(&self, sid: &str) {
        let mut r = self.current();
        r.lost.retain(|e| e.session != sid);
        self.replace(r);
    }

    /// Brings the record in step with the holder table; writes only when
    /// something changed. Returns whether it wrote.
    pub fn sync(&self, holders: &HolderTable) -> bool {
        let mut live: Vec<Observed> = holders.snapshot().iter().map(observe).collect();
        self.models_seen(&mut live);
        let gone = |id: &str| match holders.finished_for_holder(id) {
            Some(f)
                if f.exit.is_none()
                    && f.failure.as_deref() == Some(crate::holders::HOLDER_DIED) =>
            {
                Gone::Vanished
            }
            _ => Gone::Ended,
        };
        let prev = self.current();
        let next = record::next(&prev, &live, gone, self.boot.as_deref());
        if next == prev {
            return false;
        }
        self.replace(next)
    }

    /// Writes `r` if it differs from the last record; keeps it as the
    /// last either way (a failed write is retried on the next change).
    fn replace(&self, r: HeldRecord) -> bool {
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        let unchanged = *last == r && self.writes.load(Ordering::Relaxed) > 0;
        if unchanged {
            return false;
        }
        match store::write(&self.dir, &r) {
            Ok(()) => {
                let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::debug!(
                    writes = n,
                    held = r.held.len(),
                    lost = r.lost.len(),
                    "restore record written"
                );
                *last = r;
                true
            }
            Err(error) => {
                tracing::warn!(%error, dir = %self.dir.display(), "writing the restore record failed");
                false
            }
        }
    }
}

/// What the record needs of a live holder.
pub fn observe(e: &HolderEntry) -> Observed {
    let origin = match e.meta.origin {
        crate::holders::spec::Origin::New => "new",
        crate::holders::spec::Origin::Resume => "resume",
        crate::holders::spec::Origin::Fork => "fork",
    };
    Observed {
        holder: e.id.clone(),
        session: e.session_id().map(String::from),
        cwd: e.meta.cwd.clone(),
        args: e
            .info
            .as_ref()
            .map(|i| i.argv.iter().skip(1).cloned().collect()),
        mode_seen: e
            .info
            .as_ref()
            .and_then(|i| i.permission_mode.as_ref())
            .and_then(|m| m.flag_value())
            .map(String::from),
        model_seen: None,
        name: e.meta.name.clone(),
        pinned: e.meta.pinned,
        origin: origin.into(),
        created_at: e.meta.created_at,
    }
}

/// Why a lost session is listed (its `ccd.attention`).
pub const LOST_REASON: &str =
    "held when the machine (or every holder) went down; `ccd restore` brings it back";

/// A lost session as the listing shows it: a finished record in state
/// `lost` (`HolderTable::list_lost`).
pub fn lost_finished(e: &RecordEntry) -> crate::holders::Finished {
    use crate::holders::spec::{HolderMeta, Origin};
    let origin = match e.origin.as_str() {
        "resume" => Origin::Resume,
        "fork" => Origin::Fork,
        _ => Origin::New,
    };
    crate::holders::Finished {
        meta: HolderMeta {
            id: e.holder.clone(),
            session_id: Some(e.session.clone()),
            name: e.name.clone(),
            cwd: e.cwd.clone(),
            origin,
            forked_from: None,
            created_at: e.created_at,
            pinned: e.pinned,
            holder_pid: None,
        },
        session_id: Some(e.session.clone()),
        child_pid: None,
        exit: None,
        state: ccd_protocol::methods::session::Lifecycle::Lost,
        failure: Some(LOST_REASON.into()),
        screen: String::new(),
    }
}
