//! A real `sshd` on 127.0.0.1 for the `--host` tests: its own config, a
//! generated host key, a throwaway user (created with `useradd`, removed
//! on drop) whose home is a temp dir, with a generated user key, `ccd`
//! and the fake claude (as its `claude`) in `~/bin`. The client side uses
//! `ssh -F <tmp>/ssh_config` (identity, known hosts, port, user): never
//! the machine's own `~/.ssh`, and the remote side never sees the
//! machine's `~/.claude`.
//!
//! Needs root (useradd, sshd) and `/usr/sbin/sshd` (Debian's
//! `openssh-server`, installed by `.ci/run`): without them the test is
//! skipped with a reason, or fails when `$CI` is set.

use super::{fake_claude, Sandbox};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// useradd/userdel take a lock on /etc/passwd: one at a time.
static USERS: Mutex<()> = Mutex::new(());

const SSHD: &str = "/usr/sbin/sshd";

pub struct SshHost {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub user: String,
    pub uid: u32,
    pub home: PathBuf,
    pub port: u16,
    pub ssh_config: PathBuf,
    sshd: Option<Child>,
}

/// Why this machine cannot run the sshd tests, if it cannot.
fn missing() -> Option<String> {
    if !Path::new(SSHD).exists() {
        return Some(format!("{SSHD} is not installed (Debian: openssh-server)"));
    }
    for tool in ["ssh", "ssh-keygen", "useradd", "userdel"] {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).exists()))
            .unwrap_or(false)
            || Path::new("/usr/sbin").join(tool).exists();
        if !found {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    if !nix::unistd::Uid::effective().is_root() {
        return Some("not root: cannot create a throwaway user for sshd".into());
    }
    None
}

/// The sshd host, or `None` (skipped, with the reason printed) when this
/// machine cannot run it; under `$CI` a missing piece fails the test.
pub fn sshd_or_skip() -> Option<SshHost> {
    sshd_with_shell_or_skip("/bin/sh")
}

/// [`sshd_or_skip`] with `shell` as the user's login shell (the one ssh
/// hands the remote command to); a missing shell skips, or fails under
/// `$CI` (`.ci/run` installs fish).
pub fn sshd_with_shell_or_skip(shell: &str) -> Option<SshHost> {
    let why = missing().or_else(|| {
        (!Path::new(shell).exists()).then(|| format!("the login shell {shell} is not installed"))
    });
    if let Some(why) = why {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set and the sshd tests cannot run: {why}");
        }
        eprintln!("SKIPPED: {why}");
        return None;
    }
    Some(SshHost::start(shell))
}

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl SshHost {
    fn start(shell: &str) -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("ccd-ssh")
            .tempdir()
            .unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        // The throwaway user must reach its home below this.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let user = format!("ccdt{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let home = root.join("home");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("tmp")).unwrap();
        {
            let _g = USERS.lock().unwrap_or_else(|e| e.into_inner());
            run(Command::new("useradd")
                .args(["-M", "-d"])
                .arg(&home)
                .args(["-s", shell, "-p", "*"])
                .arg(&user));
        }
        let uid: u32 = String::from_utf8(
            Command::new("id")
                .args(["-u", &user])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim()
        .parse()
        .unwrap();
        // Keys.
        let keygen = |path: &Path| {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path));
        };
        keygen(&root.join("host_key"));
        keygen(&root.join("user_key"));
        let authorized = home.join(".ssh/authorized_keys");
        std::fs::copy(root.join("user_key.pub"), &authorized).unwrap();
        // What the user's non-interactive commands see (sshd's
        // PermitUserEnvironment): its own bin first, everything of ccd
        // under the temp home.
        std::fs::write(
            home.join(".ssh/environment"),
            format!(
                "PATH={h}/bin:/usr/local/bin:/usr/bin:/bin\nCCD_SOCKET_DIR={h}/sock\nCCD_STATE_DIR={h}/state\nTMPDIR={h}/tmp\nCCD_TRUST_STABLE_MS=300\n",
                h = home.display()
            ),
        )
        .unwrap();
        run(Command::new("chown")
            .arg("-R")
            .arg(format!("{user}:"))
            .arg(&home));
        // ccd and the fake claude as the user's own `ccd` and `claude`,
        // after the chown (which must never reach the build's files):
        // linked when the temp dir shares the build's filesystem (the
        // debug ccd is over 100 MB), else copied; root's, readable by all.
        for (from, to) in [(super::ccd_bin(), "bin/ccd"), (fake_claude(), "bin/claude")] {
            let to = home.join(to);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
        }
        let port = free_port();
        let pidfile = root.join("sshd.pid");
        std::fs::write(
            root.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/host_key\nPidFile {pid}\nAuthorizedKeysFile {auth}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitUserEnvironment yes\nAllowUsers {user}\nPermitRootLogin no\nLogLevel VERBOSE\n",
                root = root.display(),
                pid = pidfile.display(),
                auth = authorized.display(),
            ),
        )
        .unwrap();
        let host_pub = std::fs::read_to_string(root.join("host_key.pub")).unwrap();
        let key = host_pub
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::write(
            root.join("known_hosts"),
            format!("[127.0.0.1]:{port} {key}\n"),
        )
        .unwrap();
        let ssh_config = root.join("ssh_config");
        std::fs::write(
            &ssh_config,
            format!(
                "Host *\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {root}/user_key\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {root}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n  ControlMaster no\n  ControlPath none\n",
                root = root.display()
            ),
        )
        .unwrap();
        // sshd's privilege separation directory.
        if !Path::new("/run/sshd").exists() {
            let _ = std::fs::create_dir_all("/run/sshd");
            let _ = std::fs::set_permissions("/run/sshd", std::fs::Permissions::from_mode(0o755));
        }
        let log = std::fs::File::create(root.join("sshd.log")).unwrap();
        let sshd = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(root.join("sshd_config"))
            .args(["-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut host = Self {
            tmp,
            root,
            user,
            uid,
            home,
            port,
            ssh_config,
            sshd: Some(sshd),
        };
        // Up once it accepts connections.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(s) = host.sshd.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("sshd exited ({s}): {}", host.sshd_log());
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not listen: {}",
                host.sshd_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        host
    }

    pub fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.root.join("sshd.log")).unwrap_or_default()
    }

    /// The `--host` value for it.
    pub fn url(&self) -> String {
        format!("ssh://{}@127.0.0.1:{}", self.user, self.port)
    }

    /// The ssh command for `CCD_SSH_COMMAND`.
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.ssh_config.display())
    }

    /// A local sandbox whose ccd reaches this host (through
    /// `CCD_SSH_COMMAND`).
    pub fn sandbox(&self) -> Sandbox {
        Sandbox::with_env(&[("CCD_SSH_COMMAND", &self.ssh_command())])
    }

    /// The user's own `~/.claude` (never the machine's).
    pub fn claude_dir(&self) -> PathBuf {
        self.home.join(".claude")
    }

    /// A directory on the remote side, owned by the user.
    pub fn project(&self, name: &str) -> PathBuf {
        let p = self.home.join("work").join(name);
        std::fs::create_dir_all(&p).unwrap();
        run(Command::new("chown")
            .arg("-R")
            .arg(format!("{}:", self.user))
            .arg(self.home.join("work")));
        p
    }

    /// `ccd --host <this> new --detach --cwd <project(name)>` from `sb`
    /// (required to work, with sshd's log if not); the session id.
    pub fn new_session(&self, sb: &Sandbox, name: &str) -> String {
        let dir = self.project(name);
        let url = self.url();
        let o = sb.run(&[
            "--host",
            &url,
            "new",
            "--detach",
            "--cwd",
            dir.to_str().expect("a UTF-8 path"),
        ]);
        assert!(
            o.status.success(),
            "remote new failed: {}\nsshd log:\n{}",
            String::from_utf8_lossy(&o.stderr),
            self.sshd_log()
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// The pids of every process of the throwaway user.
    pub fn user_pids(&self) -> Vec<i32> {
        ccd_testkit::procs::pids()
            .into_iter()
            .filter(|&pid| ccd_testkit::procs::uid(pid) == Some(self.uid))
            .filter_map(|pid| i32::try_from(pid).ok())
            .collect()
    }

    /// The command line of `pid`, NUL-separated words joined by spaces.
    pub fn cmdline(pid: i32) -> String {
        let Ok(pid) = u32::try_from(pid) else {
            return String::new();
        };
        String::from_utf8_lossy(&ccd_testkit::procs::cmdline(pid)).replace('\0', " ")
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Every process of the throwaway user was started by this test
        // (its daemon, holders, fake claudes, sshd sessions): end them by pid.
        for _ in 0..3 {
            let pids = self.user_pids();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _g = USERS.lock().unwrap_or_else(|e| e.into_inner());
        let _ = Command::new("userdel").arg(&self.user).output();
    }
}
