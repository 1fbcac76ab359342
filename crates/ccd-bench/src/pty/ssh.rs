//! `ccd-bench pty --only ssh`: the echo latency that `ccd --host ssh://…
//! attach` adds over loopback SSH, beside a local `ccd attach` of the same
//! session in the same run.
//!
//! The benchmark starts its own `sshd` on 127.0.0.1 (a free port, a
//! generated host key, a generated user key authorized for the user running
//! it, everything in the run's temp dir; `/usr/sbin/sshd` from Debian's
//! `openssh-server`) and points `ccd` at it with `CCD_SSH_COMMAND="ssh -F
//! <its ssh_config>"`. The remote side is this machine and this user: its
//! `ccd dial-stdio` is given the benchmark daemon's socket dir through a
//! `--remote-ccd` wrapper script. The stream then goes keys → ssh → sshd →
//! dial-stdio → the daemon (relayed: no direct stream over ssh) → the
//! holder, and back. sshd is ended by pid when done.

use super::ccd::Ccd;
use super::report::Echo;
use super::term::{echo_pty, wait_file, Latency, PtyProc};
use super::{Ctx, Run};
use anyhow::Context;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What the ssh part measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SshEcho {
    /// `ccd attach` on this machine.
    pub local: Latency,
    /// `ccd --host ssh://… attach` over loopback ssh.
    pub ssh: Latency,
    /// The ssh command line used.
    pub command: String,
}

/// A private sshd on 127.0.0.1 for the current user.
struct Sshd {
    child: Child,
    port: u16,
    user: String,
    config: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let o = cmd.output().with_context(|| format!("{cmd:?}"))?;
    anyhow::ensure!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Ok(())
}

impl Sshd {
    fn start(dir: &Path) -> anyhow::Result<Self> {
        let sshd = Path::new("/usr/sbin/sshd");
        anyhow::ensure!(
            sshd.exists(),
            "{} is not installed (Debian: openssh-server)",
            sshd.display()
        );
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::current())?
            .context("who am I")?
            .name;
        for k in ["host_key", "user_key"] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(k)))?;
        }
        let auth = dir.join("authorized_keys");
        std::fs::copy(dir.join("user_key.pub"), &auth)?;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let d = dir.display();
        std::fs::write(
            dir.join("sshd_config"),
            format!("Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\nAuthorizedKeysFile {}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nAllowUsers {user}\nPermitRootLogin prohibit-password\n", auth.display()),
        )?;
        let host_pub = std::fs::read_to_string(dir.join("host_key.pub"))?;
        let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", key.join(" ")),
        )?;
        let config = dir.join("ssh_config");
        std::fs::write(
            &config,
            format!("Host *\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/user_key\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n  ControlMaster no\n  ControlPath none\n"),
        )?;
        if nix::unistd::Uid::effective().is_root() && !Path::new("/run/sshd").exists() {
            std::fs::create_dir_all("/run/sshd")?;
        }
        let child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("sshd.log"))?)
            .spawn()
            .context("starting sshd")?;
        let s = Self {
            child,
            port,
            user,
            config,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "sshd did not listen: {}",
                std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(s)
    }
}

/// Echo through `ccd attach` locally, then through `ccd --host … attach`
/// over loopback ssh, on one session.
pub fn echo(cx: &Ctx) -> anyhow::Result<SshEcho> {
    let n = cx.samples;
    let sdir = cx.dir("sshd")?;
    let sshd = Sshd::start(&sdir)?;
    let dir = cx.dir("echo-ssh")?;
    let run = Run::new(&dir);
    let mut c = Ccd::start(&cx.ccd, &cx.bench, &cx.fake, &dir, false)?;
    let res = (|| -> anyhow::Result<SshEcho> {
        let (sid, _) = c.new_session(&run.echo_args(), false)?;
        wait_file(&run.ready, Duration::from_secs(10))?;
        let wait_detached = |c: &Ccd| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.attached(&sid) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        eprintln!("echo → ccd attach (local)…");
        let mut client = c.attach_pty(&sid)?;
        c.wait_attached(&sid, 1)?;
        std::thread::sleep(Duration::from_millis(300));
        let local = echo_pty(&mut client, n)?;
        client.kill(Duration::from_secs(2));
        wait_detached(&c);

        // The remote side: this machine, the benchmark daemon's socket.
        let sock_dir = c.sock.parent().context("socket dir")?.to_path_buf();
        let wrapper = dir.join("remote-ccd");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec env CCD_SOCKET_DIR='{}' '{}' \"$@\"\n",
                sock_dir.display(),
                cx.ccd.display()
            ),
        )?;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
        let command = format!("ssh -F {}", sshd.config.display());
        let mut env = c.env.clone();
        env.push(("CCD_SSH_COMMAND".into(), command.clone()));
        let url = format!("ssh://{}@127.0.0.1:{}", sshd.user, sshd.port);
        eprintln!("echo → ccd --host {url} attach (loopback ssh)…");
        let args: Vec<String> = vec![
            "--host".into(),
            url,
            "--remote-ccd".into(),
            wrapper.display().to_string(),
            "attach".into(),
            sid.clone(),
        ];
        let mut client = PtyProc::spawn(&cx.ccd, &args, &env)?;
        c.wait_attached(&sid, 1)
            .context("ccd attach over ssh did not attach")?;
        std::thread::sleep(Duration::from_millis(300));
        let ssh = echo_pty(&mut client, n)?;
        client.kill(Duration::from_secs(2));
        Ok(SshEcho {
            local,
            ssh,
            command,
        })
    })();
    c.stop();
    drop(sshd);
    res
}

/// For the report's errors list.
pub fn failed(e: &anyhow::Error) -> Echo {
    Echo {
        contender: "ccd-attach-ssh".into(),
        idle: None,
        sibling_flood: None,
        error: Some(format!("{e:#}")),
    }
}
