//! The screen model and classifiers against real Claude Code recordings.
//!
//! Fixtures: `$CCD_FIXTURES_DIR`, else the repository's own
//! `tests/recordings/claude-cli/`.
//! A missing fixture directory FAILS these tests: they are the evidence that the
//! classifiers work on the real CLI.

use std::path::PathBuf;

use ccd_screen::{
    classify_screen, KeyMoves, NavKey, PermissionDialog, PermissionKind, Screen, ScreenState,
    StartErrorKind, TrustPath,
};

struct Recording {
    name: String,
    data: Vec<u8>,
    rows: u16,
    cols: u16,
    chunk_ends: Vec<usize>,
}

fn fixtures_dir() -> PathBuf {
    match std::env::var_os("CCD_FIXTURES_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/recordings/claude-cli"),
    }
}

fn load(name: &str) -> Recording {
    let dir = fixtures_dir();
    let bin = dir.join(format!("{name}.bin"));
    let data = std::fs::read(&bin).unwrap_or_else(|e| {
        panic!(
            "fixture {} missing ({e}); set CCD_FIXTURES_DIR",
            bin.display()
        )
    });
    let meta_path = dir.join(format!("{name}.json"));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    let rows = meta["rows"].as_u64().unwrap() as u16;
    let cols = meta["cols"].as_u64().unwrap() as u16;
    let chunk_ends = meta["chunk_ends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(meta["total"].as_u64().unwrap() as usize, data.len());
    Recording {
        name: name.to_owned(),
        data,
        rows,
        cols,
        chunk_ends,
    }
}

fn all_recordings() -> Vec<Recording> {
    let dir = fixtures_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "fixture dir {} unreadable ({e}); set CCD_FIXTURES_DIR",
            dir.display()
        )
    });
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.len() >= 3,
        "expected at least 3 .bin fixtures in {}",
        dir.display()
    );
    names.iter().map(|n| load(n)).collect()
}

fn screen_at(rec: &Recording, end: usize) -> Screen {
    let mut s = Screen::new(rec.rows, rec.cols);
    s.process(&rec.data[..end]);
    s
}

fn trust(state: ScreenState) -> ccd_screen::TrustDialog {
    match state {
        ScreenState::TrustDialog(d) => d,
        other => panic!("expected trust dialog, got {other:?}"),
    }
}

#[test]
fn trust_dialog_2_1_332_default_no() {
    let rec = load("trust-dialog-2.1.332");
    let ends = &rec.chunk_ends;

    // Before any key: "No, exit" selected; trust is one Down away.
    let d = trust(classify_screen(&screen_at(&rec, ends[0])));
    assert_eq!(d.options.len(), 2);
    assert_eq!(d.selected, Some(0));
    assert_eq!(d.options[0].label, "No, exit");
    assert!(d.options[0].is_exit && !d.options[0].is_trust);
    assert_eq!(d.trust_index, Some(1));
    assert!(d.options[1].is_trust);
    assert_eq!(
        d.to_trust,
        TrustPath::Keys(KeyMoves {
            key: NavKey::Down,
            count: 1
        })
    );
    assert_eq!(d.keys_to_trust().unwrap().to_bytes(false), b"\x1b[B");
    assert!(!d.trust_selected());

    // After Down: the selection is on trust; nothing more to press but Enter.
    let d = trust(classify_screen(&screen_at(&rec, ends[1])));
    assert_eq!(d.selected, d.trust_index);
    assert_eq!(d.selected, Some(1));
    assert!(d.trust_selected());
    assert_eq!(d.keys_to_trust().unwrap().count, 0);

    // After Enter: the prompt.
    let s = screen_at(&rec, ends[2]);
    match classify_screen(&s) {
        ScreenState::Ready(r) => {
            assert_eq!(r.input, "");
            assert!(r.hint.unwrap().contains("auto mode"));
        }
        other => panic!("expected Ready, got {other:?}"),
    }
    assert!(s.modes().alternate_screen);

    // After the process exited and restored the terminal: blank, modes off.
    let s = screen_at(&rec, rec.data.len());
    assert_eq!(classify_screen(&s), ScreenState::Loading);
    let m = s.modes();
    assert!(!m.alternate_screen && !m.focus_events && !m.bracketed_paste);
    assert_eq!(m.mouse_mode, ccd_screen::MouseMode::None);
}

#[test]
fn trust_dialog_2_1_173_default_yes() {
    let rec = load("trust-dialog-2.1.173");
    let ends = &rec.chunk_ends;

    let d = trust(classify_screen(&screen_at(&rec, ends[0])));
    assert_eq!(d.options.len(), 2);
    assert_eq!(d.selected, Some(0));
    assert_eq!(d.trust_index, Some(0));
    assert_eq!(d.options[0].label, "Yes, I trust this folder");
    assert_eq!(d.options[1].label, "No, exit");
    assert!(d.options[1].is_exit);
    assert!(d.trust_selected());

    match classify_screen(&screen_at(&rec, *ends.last().unwrap())) {
        ScreenState::Ready(r) => {
            assert_eq!(r.input, "");
            assert!(r.hint.unwrap().contains("? for shortcuts"));
        }
        other => panic!("expected Ready, got {other:?}"),
    }
}

#[test]
fn resume_not_found_2_1_332() {
    let rec = load("resume-not-found-2.1.332");
    let ends = &rec.chunk_ends;

    let d = trust(classify_screen(&screen_at(&rec, ends[0])));
    assert_eq!(d.keys_to_trust().unwrap().count, 1);
    let d = trust(classify_screen(&screen_at(&rec, ends[1])));
    assert!(d.trust_selected());

    // After Enter the CLI prints the error and exits.
    match classify_screen(&screen_at(&rec, rec.data.len())) {
        ScreenState::Error(e) => assert_eq!(
            e.kind,
            StartErrorKind::NoConversationFound {
                session_id: "0b6c5c1e-1111-4222-8333-944455556666".into()
            }
        ),
        other => panic!("expected Error, got {other:?}"),
    }
}

fn permission(state: ScreenState, what: &str) -> PermissionDialog {
    match state {
        ScreenState::PermissionDialog(d) => d,
        other => panic!("{what}: expected permission dialog, got {other:?}"),
    }
}

/// The recording's final screen, fed whole and at every split size 1..=64:
/// always the same permission dialog. Before Enter: never one.
fn final_dialog(name: &str) -> PermissionDialog {
    let rec = load(name);
    let ends = &rec.chunk_ends;
    assert_eq!(ends.len(), 3, "{name}: prompt up, text typed, dialog");
    for &end in &ends[..2] {
        let v = classify_screen(&screen_at(&rec, end));
        assert!(
            !matches!(v, ScreenState::PermissionDialog(_)),
            "{name} @ {end}: {v:?}"
        );
    }
    let whole = permission(classify_screen(&screen_at(&rec, ends[2])), name);
    for size in 1..=64 {
        let s = feed_in_chunks(&rec, || size);
        let d = permission(classify_screen(&s), &format!("{name} split {size}"));
        assert_eq!(d, whole, "{name} split {size}");
    }
    assert_eq!(
        whole.selected,
        Some(0),
        "{name}: default is the first option"
    );
    assert_eq!(whole.options[0].label, "Yes");
    assert_eq!(whole.options.last().map(|o| o.label.as_str()), Some("No"));
    for (i, o) in whole.options.iter().enumerate() {
        assert_eq!(o.number, Some(i as u32 + 1), "{name}: {o:?}");
    }
    whole
}

#[test]
fn permission_bash_2_1_173() {
    let d = final_dialog("permission-bash-2.1.173");
    assert_eq!(d.kind, PermissionKind::Bash);
    assert_eq!(d.heading.as_deref(), Some("Bash command"));
    assert_eq!(d.detail.as_deref(), Some("echo hi > out.txt"));
    assert_eq!(d.question, "Do you want to proceed?");
    let labels: Vec<&str> = d.options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Yes",
            "Yes, and always allow access to proj/ from this project",
            "No"
        ]
    );
}

#[test]
fn permission_bash_2_1_332() {
    let d = final_dialog("permission-bash-2.1.332");
    assert_eq!(d.kind, PermissionKind::Bash);
    assert_eq!(d.heading.as_deref(), Some("Bash command"));
    assert_eq!(d.detail.as_deref(), Some("echo hi > out.txt"));
    assert_eq!(d.question, "Do you want to proceed?");
    assert_eq!(d.options.len(), 4);
    assert!(d.options[1]
        .label
        .starts_with("Yes, and always allow access to /tmp/"));
    assert!(d.options[2]
        .label
        .starts_with("Yes, and switch to auto mode"));
}

#[test]
fn answers_and_prompt_ids_on_both_versions_recordings() {
    use ccd_screen::{Answer, PermissionDialogExt};
    let mut ids = Vec::new();
    for name in [
        "permission-bash-2.1.173",
        "permission-bash-2.1.332",
        "permission-write-2.1.173",
        "permission-write-2.1.332",
    ] {
        let d = final_dialog(name);
        assert_eq!(d.option_for(Answer::Yes), Some(0), "{name}");
        assert_eq!(
            d.option_for(Answer::No),
            Some(d.options.len() - 1),
            "{name}: {:?}",
            d.options
        );
        let always = d.option_for(Answer::Always);
        if name.contains("bash") {
            assert_eq!(always, Some(1), "{name}: {:?}", d.options);
        }
        if let Some(i) = always {
            assert!(!d.options[i].label.contains("auto mode"), "{name}");
        }
        ids.push(d.prompt_id());
    }
    // Four different prompts, four ids.
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}

#[test]
fn permission_write_both_versions() {
    for v in ["2.1.173", "2.1.332"] {
        let name = format!("permission-write-{v}");
        let d = final_dialog(&name);
        assert_eq!(d.kind, PermissionKind::FileEdit, "{name}");
        assert_eq!(d.heading.as_deref(), Some("Create file"), "{name}");
        assert_eq!(d.detail.as_deref(), Some("new.txt"), "{name}");
        assert_eq!(d.question, "Do you want to create new.txt?", "{name}");
        assert_eq!(d.options.len(), 3, "{name}");
    }
}

#[test]
fn other_recordings_never_show_a_permission_dialog() {
    for rec in all_recordings() {
        if rec.name.starts_with("permission-") {
            continue;
        }
        let mut points: Vec<usize> = rec.chunk_ends.clone();
        points.extend((0..rec.data.len()).step_by(17));
        points.push(rec.data.len());
        for end in points {
            let v = classify_screen(&screen_at(&rec, end));
            assert!(
                !matches!(v, ScreenState::PermissionDialog(_)),
                "{} @ {end}: {v:?}",
                rec.name
            );
        }
    }
}

#[test]
fn modes_while_the_dialog_is_up() {
    for name in ["trust-dialog-2.1.332", "trust-dialog-2.1.173"] {
        let rec = load(name);
        let m = screen_at(&rec, rec.chunk_ends[0]).modes();
        assert!(m.focus_events, "{name}");
        assert!(m.bracketed_paste, "{name}");
        assert!(m.color_scheme_updates, "{name}");
        // Nobody answered the kitty query, so the CLI never pushed flags.
        assert_eq!(m.kitty_flags(), 0, "{name}");
        assert_eq!(m.modify_other_keys, 0, "{name}");
    }
}

fn assert_same(a: &Screen, b: &Screen, what: &str) {
    assert_eq!(a.cells(), b.cells(), "{what}: cells");
    assert_eq!(a.contents(), b.contents(), "{what}: contents");
    assert_eq!(a.modes(), b.modes(), "{what}: modes");
    assert_eq!(a.title(), b.title(), "{what}: title");
}

fn replay(s: &Screen) -> Screen {
    let (rows, cols) = s.size();
    let mut fresh = Screen::new(rows, cols);
    fresh.process(&s.redraw());
    fresh
}

#[test]
fn redraw_reproduces_every_fixture_at_every_step() {
    for rec in all_recordings() {
        let mut points: Vec<usize> = rec.chunk_ends.clone();
        points.extend((0..rec.data.len()).step_by(61));
        points.push(rec.data.len());
        for end in points {
            let s = screen_at(&rec, end);
            let r = replay(&s);
            assert_same(&r, &s, &format!("{} @ {end}", rec.name));
            assert_eq!(
                classify_screen(&r),
                classify_screen(&s),
                "{} @ {end}: verdict",
                rec.name
            );
        }
    }
}

/// A tiny xorshift64 generator: deterministic chunk sizes without a dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

fn feed_in_chunks(rec: &Recording, mut next_len: impl FnMut() -> usize) -> Screen {
    let mut s = Screen::new(rec.rows, rec.cols);
    let mut pos = 0;
    while pos < rec.data.len() {
        let end = (pos + next_len().max(1)).min(rec.data.len());
        s.process(&rec.data[pos..end]);
        pos = end;
    }
    s
}

#[test]
fn arbitrary_chunk_splits_give_the_same_screen_and_modes() {
    for rec in all_recordings() {
        // Compare at the step boundaries too, where modes differ from the end.
        let mut cut_points = rec.chunk_ends.clone();
        cut_points.push(rec.data.len());
        for &cut in &cut_points {
            let part = Recording {
                name: rec.name.clone(),
                data: rec.data[..cut].to_vec(),
                rows: rec.rows,
                cols: rec.cols,
                chunk_ends: Vec::new(),
            };
            let whole = screen_at(&part, cut);
            for size in 1..=64 {
                let s = feed_in_chunks(&part, || size);
                assert_same(&s, &whole, &format!("{} @ {cut} split {size}", rec.name));
                assert_eq!(classify_screen(&s), classify_screen(&whole));
            }
            for seed in [1u64, 0x9e37_79b9_7f4a_7c15, 42, 7_777_777] {
                let mut rng = XorShift(seed);
                let s = feed_in_chunks(&part, || (rng.next() % 200) as usize + 1);
                assert_same(&s, &whole, &format!("{} @ {cut} seed {seed}", rec.name));
                let mut rng = XorShift(seed ^ 0xdead_beef);
                let s = feed_in_chunks(&part, || (rng.next() % 5) as usize + 1);
                assert_same(
                    &s,
                    &whole,
                    &format!("{} @ {cut} tiny seed {seed}", rec.name),
                );
            }
        }
    }
}

/// ccd's lane in front of `vte` (`ccd_screen::lane`) against `vte` alone on
/// the real CLI's recordings, fed whole and at every split size 1..=64: the
/// same model field for field after every 16th chunk and at the end.
#[test]
fn the_lane_is_vte_alone_on_every_recording_at_every_split() {
    for rec in all_recordings() {
        for size in (1..=64).chain([rec.data.len()]) {
            let mut lane = Screen::new(rec.rows, rec.cols);
            let mut vte = Screen::new(rec.rows, rec.cols);
            vte.set_vte_only(true);
            let chunks = rec.data.chunks(size).count();
            for (i, chunk) in rec.data.chunks(size).enumerate() {
                lane.process(chunk);
                vte.process(chunk);
                if i % 16 != 0 && i + 1 != chunks {
                    continue;
                }
                assert_eq!(
                    lane.model_difference(&vte),
                    None,
                    "{} split {size}, chunk {i}",
                    rec.name
                );
            }
        }
    }
}

#[test]
fn fixture_dir_override_is_honoured() {
    // The default location must hold the fixtures when no override is set; with an
    // override, that directory must. Either way a missing directory fails.
    let dir = fixtures_dir();
    assert!(dir.is_dir(), "fixture dir {} missing", dir.display());
}

#[test]
fn the_banner_states_the_window_on_2_1_173_only() {
    use ccd_screen::classify::banner;
    for (name, model, window) in [
        ("permission-bash-2.1.173", "Opus 4.8", Some(1_000_000)),
        ("permission-bash-2.1.332", "Opus 5.5", None),
    ] {
        let rec = load(name);
        let b = banner::detect(&screen_at(&rec, rec.chunk_ends[0]).text())
            .unwrap_or_else(|| panic!("{name}: no banner"));
        assert_eq!(b.model.as_deref(), Some(model), "{name}");
        assert_eq!(b.context_window, window, "{name}");
        // Split anywhere, the same.
        for size in [1, 7, 64] {
            let s = feed_in_chunks_until(&rec, rec.chunk_ends[0], size);
            assert_eq!(
                banner::detect(&s.text()),
                Some(b.clone()),
                "{name} split {size}"
            );
        }
    }
}

/// The screen after `rec.data[..end]`, fed `size` bytes at a time.
fn feed_in_chunks_until(rec: &Recording, end: usize, size: usize) -> Screen {
    let mut s = Screen::new(rec.rows, rec.cols);
    for chunk in rec.data[..end].chunks(size) {
        s.process(chunk);
    }
    s
}

/// A recording's `.json` (its `args`, `keys`, `cwd`…).
fn meta(name: &str) -> serde_json::Value {
    let path = fixtures_dir().join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// The verdict on `rec.data[..end]`, fed whole and `size` bytes at a time for
/// every size 1..=64: the same each time.
fn verdict_at_every_split(rec: &Recording, end: usize) -> ScreenState {
    let whole = classify_screen(&screen_at(rec, end));
    for size in 1..=64 {
        let s = feed_in_chunks_until(rec, end, size);
        assert_eq!(
            classify_screen(&s),
            whole,
            "{} @ {end} split {size}",
            rec.name
        );
    }
    whole
}

#[test]
fn api_key_dialog_both_versions() {
    for v in ["2.1.173", "2.1.332"] {
        let name = format!("api-key-dialog-{v}");
        let rec = load(&name);
        assert_eq!(
            rec.chunk_ends,
            [rec.data.len()],
            "{name}: one step, the dialog"
        );
        match verdict_at_every_split(&rec, rec.data.len()) {
            ScreenState::ApiKeyDialog(d) => {
                assert_eq!(d.options, ["Yes", "No (recommended)"], "{name}");
                // The CLI's own default, and nothing here suggests otherwise.
                assert_eq!(d.selected, Some(1), "{name}");
            }
            other => panic!("{name}: expected the API key dialog, got {other:?}"),
        }
        // Never a trust or permission dialog on the way.
        for end in (0..rec.data.len()).step_by(7) {
            let v = classify_screen(&screen_at(&rec, end));
            assert!(
                !matches!(
                    v,
                    ScreenState::TrustDialog(_)
                        | ScreenState::PermissionDialog(_)
                        | ScreenState::Ready(_)
                ),
                "{name} @ {end}: {v:?}"
            );
        }
    }
}

#[test]
fn ready_both_versions() {
    for (v, hint) in [("2.1.173", "? for shortcuts"), ("2.1.332", "auto mode on")] {
        let name = format!("ready-{v}");
        let rec = load(&name);
        assert_eq!(
            rec.chunk_ends,
            [rec.data.len()],
            "{name}: one step, the prompt"
        );
        match verdict_at_every_split(&rec, rec.data.len()) {
            ScreenState::Ready(r) => {
                assert_eq!(r.input, "", "{name}");
                assert!(
                    r.hint.as_deref().is_some_and(|h| h.contains(hint)),
                    "{name}: {r:?}"
                );
            }
            other => panic!("{name}: expected Ready, got {other:?}"),
        }
        // The folder was trusted beforehand: no trust dialog at any point.
        for end in (0..rec.data.len()).step_by(7) {
            let v = classify_screen(&screen_at(&rec, end));
            assert!(
                !matches!(v, ScreenState::TrustDialog(_) | ScreenState::Error(_)),
                "{name} @ {end}: {v:?}"
            );
        }
    }
}

#[test]
fn resume_not_found_both_versions_at_every_split() {
    for v in ["2.1.173", "2.1.332"] {
        let name = format!("resume-not-found-{v}");
        let rec = load(&name);
        let m = meta(&name);
        assert_eq!(m["args"][0], "--resume", "{name}");
        let sid = m["args"][1].as_str().unwrap().to_string();
        // The trust dialog first (a fresh folder); the keys that trust it.
        let d = trust(verdict_at_every_split(&rec, rec.chunk_ends[0]));
        let downs = d.keys_to_trust().unwrap().count;
        let keys: Vec<&str> = m["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(keys.len(), downs + 1, "{name}: {keys:?}");
        assert_eq!(keys.last(), Some(&"enter"), "{name}");
        let last = trust(verdict_at_every_split(
            &rec,
            *rec.chunk_ends.last().unwrap(),
        ));
        assert!(last.trust_selected(), "{name}");
        // Then the error, and the CLI exits.
        match verdict_at_every_split(&rec, rec.data.len()) {
            ScreenState::Error(e) => assert_eq!(
                e.kind,
                StartErrorKind::NoConversationFound { session_id: sid },
                "{name}"
            ),
            other => panic!("{name}: expected Error, got {other:?}"),
        }
    }
}

#[test]
fn trust_dialog_verdicts_at_every_split() {
    for name in ["trust-dialog-2.1.173", "trust-dialog-2.1.332"] {
        let rec = load(name);
        let ends = &rec.chunk_ends;
        for &end in &ends[..ends.len() - 1] {
            trust(verdict_at_every_split(&rec, end));
        }
        let ready = verdict_at_every_split(&rec, *ends.last().unwrap());
        assert!(matches!(ready, ScreenState::Ready(_)), "{name}: {ready:?}");
    }
}

/// The permission mode the footer shows on `rec.data[..end]`, fed whole
/// and `size` bytes at a time for every size 1..=64: the same each time.
fn mode_at_every_split(rec: &Recording, end: usize) -> Option<ccd_screen::PermissionMode> {
    use ccd_screen::classify::mode;
    let whole = mode::detect(&screen_at(rec, end).text());
    for size in 1..=64 {
        let s = feed_in_chunks_until(rec, end, size);
        assert_eq!(
            mode::detect(&s.text()),
            whole,
            "{} @ {end} split {size}",
            rec.name
        );
    }
    whole
}

#[test]
fn shift_tab_cycles_the_permission_modes_the_footer_names_on_both_versions() {
    use ccd_screen::PermissionMode::{
        AcceptEdits, Auto, BypassPermissions as Bypass, Default, Plan,
    };
    for (name, modes) in [
        // 2.1.1xx starts in default; auto is in its cycle.
        (
            "mode-cycle-2.1.173",
            [Default, AcceptEdits, Plan, Auto, Default, AcceptEdits, Plan],
        ),
        // 2.1.332 starts in auto; its default is "manual mode".
        (
            "mode-cycle-2.1.332",
            [Auto, Default, AcceptEdits, Plan, Auto, Default, AcceptEdits],
        ),
        // Started with --dangerously-skip-permissions: bypass joins the cycle.
        (
            "mode-cycle-bypass-2.1.173",
            [Bypass, Auto, Default, AcceptEdits, Plan, Bypass, Auto],
        ),
        (
            "mode-cycle-bypass-2.1.332",
            [Bypass, Auto, Default, AcceptEdits, Plan, Bypass, Auto],
        ),
    ] {
        let rec = load(name);
        let m = meta(name);
        let keys = m["keys"].as_array().unwrap();
        assert_eq!(keys.len(), modes.len() - 1, "{name}: one Shift-Tab a step");
        assert!(keys.iter().all(|k| k == "shift-tab"), "{name}: {keys:?}");
        let seen: Vec<_> = rec
            .chunk_ends
            .iter()
            .map(|&end| mode_at_every_split(&rec, end))
            .collect();
        assert_eq!(seen, modes.map(Some), "{name}");
    }
}

#[test]
fn each_permission_mode_flag_shows_its_mode_or_why_not_on_both_versions() {
    use ccd_screen::PermissionMode as M;
    for (flag, on_173, on_332) in [
        ("default", Some(M::Default), Some(M::Default)),
        ("acceptEdits", Some(M::AcceptEdits), Some(M::AcceptEdits)),
        ("plan", Some(M::Plan), Some(M::Plan)),
        ("auto", Some(M::Auto), Some(M::Auto)),
        ("dontAsk", Some(M::DontAsk), Some(M::DontAsk)),
        // The bypass warning first (no prompt, no mode); 2.1.173 refuses
        // `manual` and exits.
        ("bypassPermissions", None, None),
        ("manual", None, Some(M::Default)),
    ] {
        for (v, want) in [("2.1.173", &on_173), ("2.1.332", &on_332)] {
            let name = format!("mode-flag-{flag}-{v}");
            let rec = load(&name);
            assert_eq!(
                meta(&name)["args"],
                serde_json::json!(["--permission-mode", flag]),
                "{name}"
            );
            assert_eq!(&mode_at_every_split(&rec, rec.data.len()), want, "{name}");
            if want.is_some() {
                assert!(
                    matches!(
                        classify_screen(&screen_at(&rec, rec.data.len())),
                        ScreenState::Ready(_)
                    ),
                    "{name}"
                );
            }
        }
    }
    let text = |name: &str| {
        let rec = load(name);
        screen_at(&rec, rec.data.len()).contents()
    };
    assert!(text("mode-flag-manual-2.1.173").contains("argument 'manual' is invalid"));
    for v in ["2.1.173", "2.1.332"] {
        assert!(
            text(&format!("mode-flag-bypassPermissions-{v}"))
                .contains("WARNING: Claude Code running in Bypass Permissions mode"),
            "{v}"
        );
    }
}

/// Every settled screen of every recording (each step's end) names its
/// mode or none, never `unknown`; a screen that is not the input prompt
/// (a dialog, an error, a frame half drawn) never names one. (Between
/// two writes of one 2.1.1xx frame the footer can read as anything: a
/// reader takes the next, settled, read.)
#[test]
fn no_recording_shows_a_mode_ccd_cannot_name_and_dialogs_show_none() {
    use ccd_screen::classify::mode;
    for rec in all_recordings() {
        let mut settled: Vec<usize> = rec.chunk_ends.clone();
        settled.push(rec.data.len());
        for &end in &settled {
            let m = mode::detect(&screen_at(&rec, end).text());
            assert_ne!(
                m,
                Some(ccd_screen::PermissionMode::Unknown),
                "{} @ {end}",
                rec.name
            );
        }
        for end in (0..rec.data.len()).step_by(13).chain(settled) {
            let s = screen_at(&rec, end);
            if !matches!(classify_screen(&s), ScreenState::Ready(_)) {
                assert_eq!(mode::detect(&s.text()), None, "{} @ {end}", rec.name);
            }
        }
    }
    // The prompt of a fresh start: each version's own default.
    for (name, want) in [
        ("ready-2.1.173", ccd_screen::PermissionMode::Default),
        ("ready-2.1.332", ccd_screen::PermissionMode::Auto),
    ] {
        let rec = load(name);
        assert_eq!(
            mode_at_every_split(&rec, rec.data.len()),
            Some(want),
            "{name}"
        );
    }
}
