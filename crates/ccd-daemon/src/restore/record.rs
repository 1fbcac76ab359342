//! The restore record's logic, sans IO: what a held session looks like in
//! the record ([`entry_of`]), the next record from the previous one and
//! the table now ([`next`]), which recorded sessions a daemon start finds
//! lost ([`at_start`]), and the arguments a lost session is resumed with
//! ([`resume_args`]). The file itself is `store`'s; when to write is the
//! record task's (`tasks::record`).
//!
//! The permission mode recorded is the holder's (`holder.info`
//! `permission_mode`), never one read of the screen: the holder takes a
//! mode only from a settled read (`ccd_screen::classify::mode`, rule 4:
//! the same on two changes of the screen in a row, or a screen unchanged
//! for 150 ms), so a footer read half painted never reaches the record.

use ccd_protocol::methods::session::{HeldRecord, RecordEntry, RECORD_VERSION};
use std::collections::HashSet;

/// The most sessions each list of the record keeps (held, lost): more
/// held sessions than this are not recorded past it (the newest are
/// dropped, with a warning), and the oldest lost ones are forgotten.
pub const MAX_ENTRIES: usize = 512;

/// The most bytes of one recorded argument list (its arguments' lengths
/// summed): longer ones are recorded without their arguments (resumed
/// with `--resume` alone and the recorded mode), so one entry stays
/// under about 8 KiB, and the record under `store::MAX_BYTES`.
pub const MAX_ARGS_BYTES: usize = 4096;

/// What the table knows of one live holder, for [`entry_of`].
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub holder: String,
    /// The conversation its process writes now.
    pub session: Option<String>,
    pub cwd: String,
    /// The arguments claude runs with (its argv without the program),
    /// once the holder told.
    pub args: Option<Vec<String>>,
    /// The permission mode read off its screen (a settled read, the
    /// holder's), when known.
    pub mode_seen: Option<String>,
    /// The model it switched to inside the TUI (`/model`), read from its
    /// transcript (`restore::model`), when it did.
    pub model_seen: Option<String>,
    pub name: Option<String>,
    pub pinned: bool,
    pub origin: String,
    pub created_at: i64,
}

/// The value of `flag` in `args` (`--flag v` or `--flag=v`), the last one
/// given.
pub fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let mut found = None;
    let mut it = args.iter();
    let eq = format!("{flag}=");
    while let Some(a) = it.next() {
        if a == flag {
            found = it.next().cloned();
        } else if let Some(v) = a.strip_prefix(&eq) {
            found = Some(v.to_string());
        }
    }
    found
}

/// The permission mode the arguments start claude in.
pub fn mode_of_args(args: &[String]) -> Option<String> {
    flag_value(args, "--permission-mode").or_else(|| {
        args.iter()
            .any(|a| a == "--dangerously-skip-permissions")
            .then(|| "bypassPermissions".to_string())
    })
}

/// The record entry of `o`: `None` until its conversation id is known.
/// Where the holder has not told its arguments yet, those of `prev` (the
/// entry recorded before for the same holder) are kept.
pub fn entry_of(o: &Observed, prev: Option<&RecordEntry>) -> Option<RecordEntry> {
    let session = o.session.clone()?;
    let mut args = o
        .args
        .clone()
        .or_else(|| prev.map(|p| p.args.clone()))
        .unwrap_or_default();
    if args.iter().map(String::len).sum::<usize>() > MAX_ARGS_BYTES {
        args.clear();
    }
    let permission_mode = o
        .mode_seen
        .clone()
        .or_else(|| prev.and_then(|p| p.permission_mode.clone()))
        .or_else(|| mode_of_args(&args));
    let model = o
        .model_seen
        .clone()
        .or_else(|| prev.and_then(|p| p.model.clone()))
        .or_else(|| flag_value(&args, "--model"));
    Some(RecordEntry {
        holder: o.holder.clone(),
        session,
        cwd: o.cwd.clone(),
        args,
        permission_mode,
        model,
        name: o.name.clone(),
        pinned: o.pinned,
        origin: o.origin.clone(),
        created_at: o.created_at,
    })
}

/// How a recorded holder that is no longer live left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// On purpose: its exit was collected (`ccd kill`, an exit from
    /// inside, reaped), it was discarded, or it never came up. Dropped.
    Ended,
    /// Its holder vanished without an exit (killed, crashed): kept, so a
    /// later start can tell a lost set.
    Vanished,
}

/// The record after a change: the held list is the live entries (oldest
/// first, at most [`MAX_ENTRIES`]) and the vanished ones kept; the lost
/// list loses every session held again. `gone` tells how a recorded
/// holder that is not live left.
pub fn next(
    prev: &HeldRecord,
    live: &[Observed],
    gone: impl Fn(&str) -> Gone,
    boot_id: Option<&str>,
) -> HeldRecord {
    let mut held: Vec<RecordEntry> = live
        .iter()
        .filter_map(|o| entry_of(o, prev.held.iter().find(|p| p.holder == o.holder)))
        .collect();
    let live_ids: HashSet<&str> = live.iter().map(|o| o.holder.as_str()).collect();
    held.extend(
        prev.held
            .iter()
            .filter(|p| !live_ids.contains(p.holder.as_str()))
            .filter(|p| gone(&p.holder) == Gone::Vanished)
            .cloned(),
    );
    held.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.holder.cmp(&b.holder))
    });
    held.truncate(MAX_ENTRIES);
    let now: HashSet<&str> = held.iter().map(|e| e.session.as_str()).collect();
    let mut lost: Vec<RecordEntry> = prev
        .lost
        .iter()
        .filter(|l| !now.contains(l.session.as_str()))
        .cloned()
        .collect();
    let over = lost.len().saturating_sub(MAX_ENTRIES);
    lost.drain(..over);
    HeldRecord {
        version: RECORD_VERSION,
        boot_id: boot_id.map(String::from).or_else(|| prev.boot_id.clone()),
        held,
        lost,
    }
}

/// What a daemon start finds, from the record the last one left and the
/// holders it adopted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AtStart {
    /// The record from now on: held = the adopted entries, lost = the
    /// lost ones before and those found now.
    pub record: HeldRecord,
    /// The sessions found lost at this start.
    pub newly_lost: Vec<RecordEntry>,
    /// Recorded holders that vanished without a reboot while others
    /// lived on (crashed one by one): forgotten.
    pub forgotten: Vec<RecordEntry>,
    /// Whether the machine rebooted since the record was written.
    pub rebooted: bool,
}

/// The lost rule: a recorded session whose holder was not adopted is
/// lost when the machine rebooted since (the boot ids differ), or when
/// every recorded holder vanished (none adopted) without an exit being
/// recorded (a session that ended is not in the record). Otherwise it
/// is forgotten (its holder died alone; it is a dead session like any).
/// A boot id unknown on either side is no reboot.
pub fn at_start(prev: &HeldRecord, adopted: &HashSet<String>, boot_now: Option<&str>) -> AtStart {
    let rebooted = matches!((prev.boot_id.as_deref(), boot_now), (Some(a), Some(b)) if a != b);
    let (kept, missing): (Vec<_>, Vec<_>) = prev
        .held
        .iter()
        .cloned()
        .partition(|e| adopted.contains(&e.holder));
    let all_vanished = kept.is_empty() && !missing.is_empty();
    let (newly_lost, forgotten) = if rebooted || all_vanished {
        (missing, Vec::new())
    } else {
        (Vec::new(), missing)
    };
    let mut lost = prev.lost.clone();
    for e in &newly_lost {
        lost.retain(|l| l.session != e.session);
        lost.push(e.clone());
    }
    let over = lost.len().saturating_sub(MAX_ENTRIES);
    lost.drain(..over);
    AtStart {
        record: HeldRecord {
            version: RECORD_VERSION,
            boot_id: boot_now.map(String::from).or_else(|| prev.boot_id.clone()),
            held: kept,
            lost,
        },
        newly_lost,
        forgotten,
        rebooted,
    }
}

/// The flags that name the conversation (dropped from a restore's
/// arguments: the restore names it itself), with whether each takes a
/// value.
const CONVERSATION_FLAGS: [(&str, bool); 6] = [
    ("--session-id", true),
    ("--resume", true),
    ("-r", true),
    ("--fork-session", false),
    ("--continue", false),
    ("-c", false),
];

/// `claude`'s arguments to bring `e` back: `--resume <its id>`, the
/// arguments it was started with minus the ones naming a conversation,
/// the model and the permission mode, then `--model <recorded>` (a
/// `/model` switch included) and `--permission-mode <recorded>`.
pub fn resume_args(e: &RecordEntry) -> Vec<String> {
    let mut out = vec!["--resume".to_string(), e.session.clone()];
    let mut it = e.args.iter();
    while let Some(a) = it.next() {
        let named = CONVERSATION_FLAGS
            .iter()
            .chain([&("--permission-mode", true), &("--model", true)])
            .find(|(f, _)| a == f || a.starts_with(&format!("{f}=")));
        match named {
            Some((f, true)) if a == f => {
                it.next();
            }
            Some(_) => {}
            None => out.push(a.clone()),
        }
    }
    if let Some(m) = &e.model {
        out.push("--model".into());
        out.push(m.clone());
    }
    if let Some(m) = &e.permission_mode {
        out.push("--permission-mode".into());
        out.push(m.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(holder: &str, session: &str, args: &[&str]) -> Observed {
        Observed {
            holder: holder.into(),
            session: Some(session.into()),
            cwd: format!("/w/{holder}"),
            args: Some(args.iter().map(|s| s.to_string()).collect()),
            origin: "new".into(),
            created_at: holder.len() as i64,
            ..Default::default()
        }
    }

    fn ended(_: &str) -> Gone {
        Gone::Ended
    }

    #[test]
    fn a_held_session_is_recorded_with_its_args_model_and_mode() {
        let o = obs(
            "h1",
            "s1",
            &[
                "--session-id",
                "s1",
                "--model",
                "opus",
                "--permission-mode",
                "plan",
            ],
        );
        let r = next(&HeldRecord::default(), &[o], ended, Some("boot"));
        assert_eq!(r.boot_id.as_deref(), Some("boot"));
        let e = &r.held[0];
        assert_eq!(e.model.as_deref(), Some("opus"));
        assert_eq!(e.permission_mode.as_deref(), Some("plan"));
        assert_eq!(
            resume_args(e),
            [
                "--resume",
                "s1",
                "--model",
                "opus",
                "--permission-mode",
                "plan"
            ]
        );
    }

    #[test]
    fn the_mode_seen_on_screen_beats_the_args_and_is_kept_when_unseen() {
        let mut o = obs("h1", "s1", &["--permission-mode", "plan"]);
        o.mode_seen = Some("acceptEdits".into());
        let r = next(
            &HeldRecord::default(),
            std::slice::from_ref(&o),
            ended,
            None,
        );
        assert_eq!(r.held[0].permission_mode.as_deref(), Some("acceptEdits"));
        o.mode_seen = None;
        let r2 = next(&r, &[o], ended, None);
        assert_eq!(r2.held[0].permission_mode.as_deref(), Some("acceptEdits"));
    }

    #[test]
    fn the_record_follows_a_conversation_change_and_is_unchanged_without_one() {
        let o = obs("h1", "s1", &[]);
        let r = next(
            &HeldRecord::default(),
            std::slice::from_ref(&o),
            ended,
            None,
        );
        assert_eq!(
            next(&r, std::slice::from_ref(&o), ended, None),
            r,
            "no change, same record"
        );
        let mut cleared = o;
        cleared.session = Some("s2".into());
        let r2 = next(&r, &[cleared], ended, None);
        assert_eq!(r2.held[0].session, "s2");
    }

    #[test]
    fn an_ended_holder_leaves_the_record_a_vanished_one_stays() {
        let r = next(
            &HeldRecord::default(),
            &[obs("h1", "s1", &[]), obs("h22", "s2", &[])],
            ended,
            None,
        );
        assert_eq!(r.held.len(), 2);
        let after = next(
            &r,
            &[],
            |h| {
                if h == "h1" {
                    Gone::Ended
                } else {
                    Gone::Vanished
                }
            },
            None,
        );
        assert_eq!(after.held.len(), 1);
        assert_eq!(after.held[0].holder, "h22");
    }

    fn record(boot: &str, holders: &[&str]) -> HeldRecord {
        let live: Vec<Observed> = holders
            .iter()
            .map(|h| obs(h, &format!("s-{h}"), &[]))
            .collect();
        next(&HeldRecord::default(), &live, ended, Some(boot))
    }

    #[test]
    fn after_a_reboot_every_holder_not_adopted_is_lost() {
        let prev = record("b1", &["h1", "h22"]);
        let adopted: HashSet<String> = ["h1".to_string()].into();
        let s = at_start(&prev, &adopted, Some("b2"));
        assert!(s.rebooted);
        assert_eq!(s.newly_lost.len(), 1);
        assert_eq!(s.newly_lost[0].holder, "h22");
        assert_eq!(s.record.held.len(), 1);
        assert_eq!(s.record.lost.len(), 1);
        assert_eq!(s.record.boot_id.as_deref(), Some("b2"));
    }

    #[test]
    fn the_same_boot_loses_only_when_every_holder_vanished() {
        let prev = record("b1", &["h1", "h22"]);
        let one: HashSet<String> = ["h1".to_string()].into();
        let s = at_start(&prev, &one, Some("b1"));
        assert!(s.newly_lost.is_empty());
        assert_eq!(s.forgotten.len(), 1);
        let none = HashSet::new();
        let s = at_start(&prev, &none, Some("b1"));
        assert_eq!(s.newly_lost.len(), 2);
        // Nothing recorded: nothing lost.
        let s = at_start(&HeldRecord::default(), &none, Some("b2"));
        assert!(s.newly_lost.is_empty() && s.record.lost.is_empty());
    }

    #[test]
    fn lost_sessions_stay_lost_until_held_again_and_are_bounded() {
        let prev = record("b1", &["h1"]);
        let s = at_start(&prev, &HashSet::new(), Some("b2"));
        let again = at_start(&s.record, &HashSet::new(), Some("b2"));
        assert_eq!(again.record.lost.len(), 1, "a second start keeps them");
        let back = next(&again.record, &[obs("h9", "s-h1", &[])], ended, Some("b2"));
        assert!(back.lost.is_empty(), "held again: no longer lost");
        let mut many = HeldRecord::default();
        for i in 0..MAX_ENTRIES + 10 {
            many.held.push(
                entry_of(&obs(&format!("h{i}"), &format!("s{i}"), &[]), None).expect("entry"),
            );
        }
        let s = at_start(&many, &HashSet::new(), Some("b2"));
        assert_eq!(s.record.lost.len(), MAX_ENTRIES);
        let live: Vec<Observed> = (0..MAX_ENTRIES + 10)
            .map(|i| obs(&format!("h{i}"), &format!("s{i}"), &[]))
            .collect();
        assert_eq!(
            next(&HeldRecord::default(), &live, ended, None).held.len(),
            MAX_ENTRIES
        );
    }

    #[test]
    fn resume_args_drop_the_conversation_flags_and_put_the_recorded_mode() {
        let mut e = entry_of(
            &obs(
                "h1",
                "new-id",
                &[
                    "--resume",
                    "old",
                    "--fork-session",
                    "--add-dir",
                    "/x y",
                    "--permission-mode=plan",
                    "--session-id=abc",
                ],
            ),
            None,
        )
        .expect("entry");
        e.permission_mode = Some("acceptEdits".into());
        assert_eq!(
            resume_args(&e),
            [
                "--resume",
                "new-id",
                "--add-dir",
                "/x y",
                "--permission-mode",
                "acceptEdits"
            ]
        );
        e.args = vec!["--dangerously-skip-permissions".into()];
        e.permission_mode = None;
        assert_eq!(
            resume_args(&e),
            ["--resume", "new-id", "--dangerously-skip-permissions"]
        );
    }

    #[test]
    fn a_model_switched_inside_replaces_the_start_model_and_is_kept_when_unseen() {
        let mut o = obs("h1", "s1", &["--model", "opus", "--add-dir", "/d"]);
        let r = next(
            &HeldRecord::default(),
            std::slice::from_ref(&o),
            ended,
            None,
        );
        assert_eq!(r.held[0].model.as_deref(), Some("opus"));
        o.model_seen = Some("sonnet".into());
        let r = next(&r, std::slice::from_ref(&o), ended, None);
        assert_eq!(r.held[0].model.as_deref(), Some("sonnet"));
        // A daemon restart adopts it with nothing seen yet: kept.
        o.model_seen = None;
        let r = next(&r, &[o], ended, None);
        let e = &r.held[0];
        assert_eq!(e.model.as_deref(), Some("sonnet"));
        assert_eq!(
            resume_args(e),
            ["--resume", "s1", "--add-dir", "/d", "--model", "sonnet"]
        );
        let mut e = e.clone();
        e.args = vec!["--model=opus".into()];
        assert_eq!(resume_args(&e), ["--resume", "s1", "--model", "sonnet"]);
    }

    #[test]
    fn oversized_args_are_not_recorded() {
        let big = "x".repeat(MAX_ARGS_BYTES + 1);
        let e = entry_of(&obs("h1", "s1", &["--append-system-prompt", &big]), None).expect("entry");
        assert!(e.args.is_empty());
    }
}
