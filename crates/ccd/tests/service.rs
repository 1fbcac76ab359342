//! `ccd service install | uninstall | status` on Linux: the systemd user
//! unit written into a temp HOME / XDG_CONFIG_HOME, checked with systemd's
//! own `systemd-analyze verify --user`, refused over a different file
//! without `--force`, reported by `status` (a moved binary too) and
//! removed by `uninstall`. Here no user manager answers (a container):
//! `install` says so, prints the commands, and exits 3. Never the
//! machine's own user manager: `XDG_RUNTIME_DIR` is a temp dir and the
//! session bus address is removed.

#![cfg(target_os = "linux")]

mod common;

use common::Sandbox;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct World {
    sb: Sandbox,
    cfg: PathBuf,
    runtime: PathBuf,
    /// A copy of ccd in a folder with a space in its name.
    ccd: PathBuf,
    /// The state dir, with characters systemd escapes in its name.
    state: PathBuf,
}

impl World {
    fn new() -> Self {
        let sb = Sandbox::new();
        let root = sb.tmp.path().canonicalize().unwrap();
        let cfg = root.join("xdg config");
        let runtime = root.join("runtime");
        std::fs::create_dir_all(&runtime).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        let bin = root.join("my bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ccd = bin.join("ccd");
        if std::fs::hard_link(common::ccd_bin(), &ccd).is_err() {
            std::fs::copy(common::ccd_bin(), &ccd).unwrap();
        }
        let state = root.join("state $HOME %h \"q\" \\ end");
        Self {
            sb,
            cfg,
            runtime,
            ccd,
            state,
        }
    }

    fn unit(&self) -> PathBuf {
        self.cfg.join("systemd/user/ccd.service")
    }

    /// `ccd args…` run from `program`, in this world.
    fn run_with(&self, program: &Path, args: &[&str]) -> Output {
        let mut c = ccd_testkit::sandbox::command(program, args, &self.sb.env);
        c.env("XDG_CONFIG_HOME", &self.cfg)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("CCD_STATE_DIR", &self.state)
            .env("ANTHROPIC_API_KEY", "sk-secret-never-written")
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
        c.output().unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(&self.ccd, args)
    }
}

fn out(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `systemd-analyze verify --user FILE` in `w`: its status and what it
/// printed (it warns, and still exits 0, on a setting it ignores).
fn verify(w: &World, unit: &Path) -> (bool, String) {
    let o = Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(unit)
        .env("HOME", &w.sb.home)
        .env("XDG_CONFIG_HOME", &w.cfg)
        .env("XDG_RUNTIME_DIR", &w.runtime)
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .output()
        .expect("systemd-analyze (package systemd; .ci/run installs it)");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), said)
}

#[test]
fn install_writes_a_unit_systemd_accepts_and_says_what_to_run_without_a_user_manager() {
    let w = World::new();
    let o = w.run(&["service", "install"]);
    let said = out(&o);
    // Written, not enabled: no user manager answers here.
    assert_eq!(o.status.code(), Some(3), "{said}");
    assert!(said.contains("no user service manager answers"), "{said}");
    assert!(
        said.contains("systemctl --user enable --now ccd.service"),
        "{said}"
    );
    assert!(said.contains("loginctl enable-linger"), "{said}");
    assert!(said.contains("not carried") && said.contains("ANTHROPIC_API_KEY"));
    let unit = std::fs::read_to_string(w.unit()).unwrap();
    assert!(!unit.contains("sk-secret"), "{unit}");
    assert!(unit.contains("KillMode=process"), "{unit}");
    assert!(
        unit.contains(&format!("ExecStart=\"{}\" \"daemon\"\n", w.ccd.display())),
        "{unit}"
    );
    for k in [
        "PATH",
        "CLAUDE_CONFIG_DIR",
        "CCD_STATE_DIR",
        "CCD_SOCKET_DIR",
    ] {
        assert!(unit.contains(&format!("Environment=\"{k}=")), "{k}: {unit}");
    }
    // systemd's own reading: accepted, nothing ignored.
    let (ok, said) = verify(&w, &w.unit());
    assert!(
        ok && said.trim().is_empty(),
        "systemd-analyze: {said}\n{unit}"
    );

    // The check itself sees a broken unit (a bad setting, a missing binary).
    let bad = w.cfg.join("bad.service");
    std::fs::write(&bad, unit.replace("KillMode=process", "KillMode=bogus")).unwrap();
    let (_, said) = verify(&w, &bad);
    assert!(said.contains("kill mode"), "{said}");
    std::fs::write(&bad, unit.replace("my bin/ccd", "no bin/ccd")).unwrap();
    assert!(!verify(&w, &bad).0);
    std::fs::remove_file(&bad).unwrap();

    // Again: unchanged.
    let o = w.run(&["service", "install"]);
    assert!(out(&o).contains("unchanged"), "{}", out(&o));
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn a_different_unit_is_replaced_only_with_force_and_the_difference_is_shown() {
    let w = World::new();
    assert_eq!(w.run(&["service", "install"]).status.code(), Some(3));
    let mine = std::fs::read_to_string(w.unit()).unwrap();
    let edited = mine.replace("RestartSec=2", "RestartSec=30\nNice=5");
    std::fs::write(w.unit(), &edited).unwrap();
    let o = w.run(&["service", "install"]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("--force"), "{said}");
    assert!(
        said.contains("-RestartSec=30") && said.contains("-Nice=5"),
        "{said}"
    );
    assert!(said.contains("+RestartSec=2"), "{said}");
    assert!(!said.contains("KillMode"), "only what differs: {said}");
    assert_eq!(std::fs::read_to_string(w.unit()).unwrap(), edited);
    let o = w.run(&["service", "install", "--force"]);
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert_eq!(std::fs::read_to_string(w.unit()).unwrap(), mine);
}

#[test]
fn dry_run_prints_the_unit_and_writes_nothing() {
    let w = World::new();
    let o = w.run(&["service", "install", "--dry-run"]);
    assert!(o.status.success(), "{}", out(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.starts_with(&format!("# {}\n", w.unit().display())));
    assert!(printed.contains("KillMode=process"), "{printed}");
    assert!(!w.unit().exists());
}

#[test]
fn status_reports_the_unit_and_a_moved_binary_and_uninstall_removes_it() {
    let w = World::new();
    let o = w.run(&["service", "status"]);
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert!(out(&o).contains("not installed"), "{}", out(&o));

    assert_eq!(w.run(&["service", "install"]).status.code(), Some(3));
    let o = w.run(&["service", "status"]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("runs: {} (this ccd)", w.ccd.display())),
        "{said}"
    );
    assert!(said.contains("no user service manager answers"), "{said}");
    assert!(said.contains("daemon: none running"), "{said}");

    let json = |o: &Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
    };
    let s = json(&w.run(&["service", "status", "--json"]));
    assert_eq!(s["installed"], true);
    assert_eq!(s["program"], w.ccd.display().to_string());
    assert_eq!(s["program_exists"], true);
    assert_eq!(s["program_is_this"], true);
    assert!(
        s["enabled"].is_null() && s["manager_error"].is_string(),
        "{s}"
    );

    // From another ccd: not this one. The unit's binary gone: missing.
    let other = w.run_with(&common::ccd_bin(), &["service", "status"]);
    assert!(out(&other).contains("(not this ccd"), "{}", out(&other));
    std::fs::remove_file(&w.ccd).unwrap();
    let o = w.run_with(&common::ccd_bin(), &["service", "status"]);
    assert!(out(&o).contains("MISSING"), "{}", out(&o));
    let s = json(&w.run_with(&common::ccd_bin(), &["service", "status", "--json"]));
    assert_eq!(s["program_exists"], false);

    let o = w.run_with(&common::ccd_bin(), &["service", "uninstall"]);
    assert!(o.status.success(), "{}", out(&o));
    assert!(out(&o).contains("removed"), "{}", out(&o));
    assert!(!w.unit().exists());
    let o = w.run_with(&common::ccd_bin(), &["service", "status"]);
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    let o = w.run_with(&common::ccd_bin(), &["service", "uninstall"]);
    assert!(o.status.success() && out(&o).contains("not installed"));
}

/// A systemd user manager of the test's own: `systemd --user` in a mount
/// namespace whose `/run` is a tmpfs holding `/run/systemd/system` (so it
/// runs where the machine was not booted with systemd), in a cgroup of its
/// own below the test's in every hierarchy (so it manages that subtree and
/// nothing else), with HOME and XDG_RUNTIME_DIR in the world. Dropped: the
/// manager and every process left in its cgroups (all started by this
/// test) are killed by pid, and the cgroups removed.
struct UserManager {
    pid: u32,
    /// The cgroup directories made, one per hierarchy.
    cgroups: Vec<PathBuf>,
}

/// Why a user manager cannot run here (`None`: it can).
fn user_manager_unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (a cgroup and a mount namespace are needed)".into());
    }
    for tool in ["unshare", "systemctl", "systemd-analyze"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Some(format!("no {tool}"));
        }
    }
    if !Path::new("/lib/systemd/systemd").is_file() {
        return Some("no /lib/systemd/systemd".into());
    }
    if std::fs::read_to_string("/proc/self/cgroup").is_err() {
        return Some("no /proc/self/cgroup".into());
    }
    None
}

/// The cgroup directories of this process, one per mounted hierarchy.
fn own_cgroups() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let v2_only = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let mut dirs = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        let (Some(controllers), Some(path)) = (controllers, path) else {
            continue;
        };
        let mount = match controllers {
            "" if v2_only => PathBuf::from("/sys/fs/cgroup"),
            "" => PathBuf::from("/sys/fs/cgroup/unified"),
            "name=systemd" => PathBuf::from("/sys/fs/cgroup/systemd"),
            c if c.starts_with("name=") => continue,
            c => PathBuf::from("/sys/fs/cgroup").join(c),
        };
        let dir = mount.join(path.trim_start_matches('/'));
        if dir.join("cgroup.procs").exists() {
            dirs.push(dir);
        }
    }
    dirs
}

impl UserManager {
    fn start(w: &World) -> Result<Self, String> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!(
            "ccd-service-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut cgroups = Vec::new();
        for parent in own_cgroups() {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            // A v1 cpuset takes no task before it has cpus and mems.
            for f in ["cpuset.cpus", "cpuset.mems"] {
                if let Ok(v) = std::fs::read_to_string(parent.join(f)) {
                    let _ = std::fs::write(dir.join(f), v.trim());
                }
            }
            cgroups.push(dir);
        }
        let joins: String = cgroups
            .iter()
            .map(|d| format!("echo $$ > '{}/cgroup.procs'\n", d.display()))
            .collect();
        let script = format!(
            "set -e\n{joins}mount -t tmpfs tmpfs /run\nmkdir -p /run/systemd/system\nexec /lib/systemd/systemd --user\n"
        );
        let log = std::fs::File::create(w.sb.tmp.path().join("user-manager.log")).unwrap();
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .env_clear()
            .env("HOME", &w.sb.home)
            .env("XDG_RUNTIME_DIR", &w.runtime)
            .env("XDG_CONFIG_HOME", &w.cfg)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("unshare: {e}"))?;
        let m = Self {
            pid: child.id(),
            cgroups,
        };
        // `child` is not waited for: the drop kills and reaps by pid.
        std::mem::forget(child);
        let ready = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            systemctl(w, &["show", "--property=Version"])
                .status
                .success()
        });
        if !ready {
            let log = std::fs::read_to_string(w.sb.tmp.path().join("user-manager.log"))
                .unwrap_or_default();
            return Err(format!("the user manager did not answer: {log}"));
        }
        Ok(m)
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let _ = kill(Pid::from_raw(self.pid as i32), Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(Pid::from_raw(self.pid as i32), None);
        // Every process left below our cgroups is this test's (the
        // daemon, holders, claude): killed by pid, then the cgroups go.
        for _ in 0..50 {
            let mut any = false;
            for dir in &self.cgroups {
                for entry in walkdir(dir) {
                    let procs =
                        std::fs::read_to_string(entry.join("cgroup.procs")).unwrap_or_default();
                    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                        any = true;
                        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                    }
                }
            }
            if !any {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        for dir in &self.cgroups {
            let mut all = walkdir(dir);
            all.reverse();
            for d in all {
                let _ = std::fs::remove_dir(&d);
            }
        }
    }
}

/// `dir` and every directory below it, parents first.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

/// `systemctl --user args…` against the world's user manager.
fn systemctl(w: &World, args: &[&str]) -> Output {
    Command::new("systemctl")
        .arg("--user")
        .args(args)
        .env("HOME", &w.sb.home)
        .env("XDG_CONFIG_HOME", &w.cfg)
        .env("XDG_RUNTIME_DIR", &w.runtime)
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .output()
        .unwrap()
}

fn main_pid(w: &World) -> Option<u32> {
    let o = systemctl(w, &["show", "ccd.service", "--property=MainPID", "--value"]);
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|p| *p != 0)
}

fn environ(pid: u32) -> Vec<(String, String)> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    raw.split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// A user manager for `w`; `None` (the test skipped, said on stderr)
/// where none can run, a failure under `$CI`.
fn user_manager_or_skip(w: &World) -> Option<UserManager> {
    if let Some(why) = user_manager_unavailable() {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set and a systemd user manager cannot run here: {why}");
        }
        eprintln!("skipped: {why}");
        return None;
    }
    Some(UserManager::start(w).unwrap_or_else(|e| panic!("{e}")))
}

/// The daemon answering on the world's socket.
fn daemon_pid(w: &World) -> Option<u32> {
    let o = w.run(&["daemon", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
    v["pid"].as_u64().map(|p| p as u32)
}

/// The point of `KillMode=process`: under a real systemd user manager,
/// `systemctl --user restart ccd` restarts the daemon and leaves the held
/// sessions' holders running, and the new daemon adopts them; `ccd service
/// uninstall` stops the daemon and leaves them too. (With systemd's
/// default, `control-group`, the restart kills every holder.)
/// Waits until the daemon serves the holders `holders` again (adopted by
/// a new daemon), and `sid`'s screen answers.
fn adopted(w: &World, holders: &[u32], sid: &str) {
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the session adopted",
        || (w.sb.holder_pids() == holders).then_some(()),
    );
    let o = w.run(&["screen", sid]);
    assert!(o.status.success(), "{}", out(&o));
}

#[test]
fn under_a_real_user_manager_a_restart_keeps_the_held_sessions() {
    let w = World::new();
    let Some(_manager) = user_manager_or_skip(&w) else {
        return;
    };
    let o = w.run(&["service", "install"]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(said.contains("enabled and started"), "{said}");
    let o = systemctl(&w, &["is-enabled", "ccd.service"]);
    assert!(o.status.success(), "{}", out(&o));
    let status = daemon_pid;
    let first = common::wait_for(
        std::time::Duration::from_secs(20),
        "the service's daemon",
        || {
            let pid = status(&w)?;
            (Some(pid) == main_pid(&w)).then_some(pid)
        },
    );
    // The environment as systemd read it from the unit: byte for byte.
    let env = environ(first);
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("CCD_STATE_DIR").as_deref(), w.state.to_str(), "{env:?}");
    assert_eq!(get("ANTHROPIC_API_KEY"), None);
    assert_eq!(
        std::fs::read_link(format!("/proc/{first}/exe")).unwrap(),
        w.ccd
    );

    let p = w.sb.project("held");
    let o = w.run(&["new", "--detach", "--cwd", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out(&o));
    let sid = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let holders = w.sb.holder_pids();
    assert_eq!(holders.len(), 1, "{holders:?}");

    let o = systemctl(&w, &["restart", "ccd.service"]);
    assert!(o.status.success(), "{}", out(&o));
    let second = common::wait_for(std::time::Duration::from_secs(20), "a new daemon", || {
        let pid = status(&w)?;
        (pid != first && Some(pid) == main_pid(&w)).then_some(pid)
    });
    assert!(ccd_testkit::procs::gone(first));
    assert!(
        !ccd_testkit::procs::gone(holders[0]),
        "the restart killed the holder"
    );
    // Adopted: the new daemon serves the session.
    adopted(&w, &holders, &sid);

    let o = w.run(&["service", "status"]);
    let said = out(&o);
    assert!(
        said.contains(&format!(
            "enabled at login: yes; running: yes, pid {second}"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!("daemon: pid {second}, the service's")),
        "{said}"
    );

    let o = w.run(&["service", "uninstall"]);
    let said = out(&o);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("held sessions keep running"), "{said}");
    assert!(!w.unit().exists());
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the daemon stopped",
        || ccd_testkit::procs::gone(second).then_some(()),
    );
    assert!(
        !ccd_testkit::procs::gone(holders[0]),
        "uninstall killed the holder"
    );
    let o = systemctl(&w, &["is-enabled", "ccd.service"]);
    assert!(!o.status.success(), "{}", out(&o));
}

/// A daemon already running outside the service (started by a command,
/// with a held session): `install` enables the unit for the next login,
/// leaves that daemon alone and says how to switch; `ccd daemon stop` and
/// `systemctl --user start ccd` then switch, and the service's daemon
/// adopts the session.
#[test]
fn a_daemon_running_outside_the_service_is_left_and_the_switch_keeps_its_sessions() {
    let w = World::new();
    let Some(_manager) = user_manager_or_skip(&w) else {
        return;
    };
    let p = w.sb.project("before");
    let o = w.run(&["new", "--detach", "--cwd", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out(&o));
    let sid = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let outside = daemon_pid(&w).expect("the daemon the command started");
    let holders = w.sb.holder_pids();
    assert_eq!(holders.len(), 1);

    let o = w.run(&["service", "install"]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "started outside the service runs now (pid {outside})"
        )),
        "{said}"
    );
    assert!(
        said.contains("ccd daemon stop") && said.contains("systemctl --user start ccd.service")
    );
    let enabled = systemctl(&w, &["is-enabled", "ccd.service"]);
    assert!(enabled.status.success(), "{}", out(&enabled));
    assert_eq!(
        main_pid(&w),
        None,
        "the unit started beside a running daemon"
    );
    assert_eq!(daemon_pid(&w), Some(outside));
    let o = w.run(&["service", "status"]);
    assert!(
        out(&o).contains(&format!(
            "daemon: pid {outside}, started outside the service"
        )),
        "{}",
        out(&o)
    );

    // Started beside it, the service's daemon stands down (exit 4) and
    // systemd does not restart it (RestartSec is 2 s: two restarts would
    // have happened in the 5 s watched), the outside one keeps serving.
    let o = systemctl(&w, &["start", "ccd.service"]);
    assert!(o.status.success(), "{}", out(&o));
    let show = || {
        let o = systemctl(
            &w,
            &[
                "show",
                "ccd.service",
                "--property=ExecMainStatus,NRestarts,ActiveState",
            ],
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the service's daemon exited 4",
        || show().contains("ExecMainStatus=4").then_some(()),
    );
    std::thread::sleep(std::time::Duration::from_secs(5));
    let shown = show();
    assert!(shown.contains("NRestarts=0"), "{shown}");
    assert!(!shown.contains("ActiveState=active"), "{shown}");
    assert_eq!(daemon_pid(&w), Some(outside));

    let o = w.run(&["daemon", "stop"]);
    assert!(o.status.success(), "{}", out(&o));
    let o = systemctl(&w, &["start", "ccd.service"]);
    assert!(o.status.success(), "{}", out(&o));
    let service = common::wait_for(
        std::time::Duration::from_secs(20),
        "the service's daemon",
        || {
            let pid = daemon_pid(&w)?;
            (Some(pid) == main_pid(&w)).then_some(pid)
        },
    );
    assert_ne!(service, outside);
    adopted(&w, &holders, &sid);
}
