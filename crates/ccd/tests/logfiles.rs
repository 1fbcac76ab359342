//! ccd's logs: owner-only, and bounded (holder logs capped in size,
//! pruned by age and count, never a live holder's).

mod common;

use common::{wait_for, Sandbox};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

const T: Duration = Duration::from_secs(20);
const DAY: Duration = Duration::from_secs(86_400);

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn names(dir: &Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

fn age(p: &Path, by: Duration) {
    let f = std::fs::File::options().append(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - by).unwrap();
}

#[test]
fn the_state_dir_and_every_log_are_owner_only() {
    let sb = Sandbox::new();
    // A state dir someone made 0755 before, with a log readable by all.
    std::fs::create_dir_all(&sb.state).unwrap();
    std::fs::set_permissions(&sb.state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let old = sb.state.join("holder-hold0000.log");
    std::fs::write(&old, "old\n").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();

    let sid = sb.new_session("perm");
    sb.ok(&["kill", &sid]);
    assert_eq!(mode(&sb.state), 0o700, "state dir");
    let logs = names(&sb.state, "");
    assert!(logs.iter().any(|n| n.starts_with("ccd.")), "{logs:?}");
    assert!(
        logs.iter()
            .filter(|n| n.starts_with("holder-") && n.as_str() != "holder-hold0000.log")
            .count()
            >= 1,
        "{logs:?}"
    );
    for n in &logs {
        let p = sb.state.join(n);
        if p.is_file() {
            assert_eq!(mode(&p), 0o600, "{n}");
        }
    }
}

#[test]
fn old_and_surplus_holder_logs_go_and_a_live_holders_stays() {
    let sb = Sandbox::new();
    // A live holder whose log looks 30 days old.
    let sid = sb.new_session("live");
    let live_log = wait_for(T, "the live holder's log", || {
        names(&sb.state, "holder-").into_iter().next()
    });
    age(&sb.state.join(&live_log), DAY * 30);
    sb.ok(&["daemon", "stop"]); // sessions keep running

    // 300 logs of ended holders: 100 older than 14 days, 200 of the
    // last 10 days.
    for i in 0..300u32 {
        let p = sb.state.join(format!("holder-old{i:05}.log"));
        std::fs::write(&p, "x\n").unwrap();
        let by = if i < 100 {
            DAY * 15 + Duration::from_secs(u64::from(i))
        } else {
            Duration::from_secs(3600 + u64::from(i) * 60)
        };
        age(&p, by);
    }
    let _ = sb.client_or_start();
    let left = wait_for(T, "the daemon to prune holder logs", || {
        let left = names(&sb.state, "holder-");
        (left.len() == 51).then_some(left)
    });
    assert!(left.contains(&live_log), "{left:?}");
    // The newest 50 of the ended ones (aged least: the lowest i of 100..300).
    for i in 100..150u32 {
        assert!(
            left.contains(&format!("holder-old{i:05}.log")),
            "{i} {left:?}"
        );
    }
    // The live session still answers.
    sb.ok(&["screen", &sid]);
}

#[test]
fn a_holder_log_past_its_cap_moves_aside_and_the_session_keeps_running() {
    let sb = Sandbox::with_env(&[("CCD_HOLDER_LOG_CAP", "4000")]);
    let sid = sb.new_session("capped");
    let log = names(&sb.state, "holder-")
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .unwrap();
    let log = sb.state.join(log);
    // Every request a holder serves logs a line (debug): push past the cap.
    let mut c = sb.client();
    for _ in 0..100 {
        c.call_value(
            "session.screen",
            serde_json::json!({"session": sid, "format": "text"}),
        )
        .unwrap();
    }
    let prev = wait_for(T, "the log to move aside", || {
        let p = std::path::PathBuf::from(format!("{}.1", log.display()));
        p.exists().then_some(p)
    });
    assert!(std::fs::metadata(&log).unwrap().len() <= 4000);
    assert!(std::fs::metadata(&prev).unwrap().len() <= 4000);
    assert_eq!(mode(&prev), 0o600);
    sb.ok(&["screen", &sid]);
    sb.ok(&["send", &sid, "still here"]);
}
