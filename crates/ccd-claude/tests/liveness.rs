//! Liveness against real processes.

use ccd_claude::liveness::{check, current_proc_start, system_probe, Liveness};
use ccd_claude::registry::read_entry;
use ccd_testkit::gen::{registry_entry, write_registry_entry};
use std::process::{Child, Command};

struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> Reaped {
    Reaped(Command::new("sleep").arg("60").spawn().unwrap())
}

#[test]
fn live_then_dead_after_sigkill_with_file_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let probe = system_probe();
    let domain = probe.pid_domain();
    let mut child = sleeper();
    let pid = child.0.id();
    let start = current_proc_start(pid).expect("start time of a running child");
    let path = write_registry_entry(
        tmp.path(),
        &registry_entry(pid, "sid-live", "/tmp", &start, domain.as_deref()),
    );
    let entry = read_entry(&path).unwrap();
    assert_eq!(check(&entry, probe.as_ref()).liveness, Liveness::Live);

    child.0.kill().unwrap(); // SIGKILL; the file stays
    child.0.wait().unwrap();
    assert!(path.exists());
    let entry = read_entry(&path).unwrap();
    assert_eq!(check(&entry, probe.as_ref()).liveness, Liveness::Dead);
}

#[test]
fn unreaped_zombie_is_dead() {
    let tmp = tempfile::tempdir().unwrap();
    let probe = system_probe();
    let mut child = sleeper();
    let pid = child.0.id();
    let start = current_proc_start(pid).unwrap();
    let path = write_registry_entry(tmp.path(), &registry_entry(pid, "z", "/tmp", &start, None));
    nix_kill9(pid);
    // Not waited for yet: a zombie.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let entry = read_entry(&path).unwrap();
    assert_eq!(check(&entry, probe.as_ref()).liveness, Liveness::Dead);
    child.0.wait().unwrap();
}

fn nix_kill9(pid: u32) {
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

#[test]
fn reused_pid_is_dead() {
    let tmp = tempfile::tempdir().unwrap();
    let probe = system_probe();
    let child = sleeper();
    let pid = child.0.id();
    let start: u64 = current_proc_start(pid).unwrap().parse().unwrap();
    let other = (start + 12345).to_string();
    let path = write_registry_entry(
        tmp.path(),
        &registry_entry(pid, "reused", "/tmp", &other, probe.pid_domain().as_deref()),
    );
    let entry = read_entry(&path).unwrap();
    assert_eq!(check(&entry, probe.as_ref()).liveness, Liveness::Dead);
}

#[test]
fn foreign_domain_and_unknown_format_are_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let probe = system_probe();
    let child = sleeper();
    let pid = child.0.id();
    let start = current_proc_start(pid).unwrap();
    let foreign = write_registry_entry(
        tmp.path(),
        &registry_entry(
            pid,
            "foreign",
            "/tmp",
            &start,
            Some("linux:someone-else:pid:[1]"),
        ),
    );
    let entry = read_entry(&foreign).unwrap();
    assert_eq!(check(&entry, probe.as_ref()).liveness, Liveness::Unknown);

    let odd = write_registry_entry(
        tmp.path(),
        &registry_entry(pid, "odd", "/tmp", "Thu Jul  9 04:18:26 2026", None),
    );
    let entry = read_entry(&odd).unwrap();
    assert_eq!(check(&entry, probe.as_ref()).liveness, Liveness::Unknown);
}
