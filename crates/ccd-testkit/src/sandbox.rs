//! A test's own ccd world on disk: a temp root holding HOME (with the
//! Claude config dir in it), the socket dir, the state dir, a work folder
//! and TMPDIR, and the environment that points ccd (and the daemon it
//! starts, and every session) there with the fake claude as the claude
//! binary. Shared by ccd's and ccd-web's test harnesses, which add their
//! own commands; never the machine's own `~/.claude`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The sandbox's folders (HOME and the work folder made; the others are
/// made by ccd). The temp root is removed when this drops.
pub struct Dirs {
    pub tmp: tempfile::TempDir,
    /// The temp root, canonical (TMPDIR, and `ccd.toml`'s folder).
    pub root: PathBuf,
    pub home: PathBuf,
    /// `CLAUDE_CONFIG_DIR`: `home/.claude`.
    pub config: PathBuf,
    pub sock: PathBuf,
    pub state: PathBuf,
    pub work: PathBuf,
}

impl Dirs {
    /// A fresh root named `prefix…` in the system's temp dir.
    pub fn new(prefix: &str) -> Self {
        let tmp = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("a temp dir");
        let root = std::fs::canonicalize(tmp.path()).expect("the temp dir's path");
        let home = root.join("home");
        let work = root.join("work");
        for d in [&home, &work] {
            std::fs::create_dir_all(d).expect("sandbox folders");
        }
        Self {
            config: home.join(".claude"),
            sock: root.join("sock"),
            state: root.join("state"),
            tmp,
            root,
            home,
            work,
        }
    }

    /// The environment for ccd here: HOME, `CLAUDE_CONFIG_DIR`, ccd's
    /// socket, state and config, the fake claude, a 300 ms trust settle,
    /// TMPDIR and debug logs.
    pub fn env(&self) -> Vec<(String, String)> {
        let path = |p: &Path| p.display().to_string();
        vec![
            ("HOME".into(), path(&self.home)),
            ("CLAUDE_CONFIG_DIR".into(), path(&self.config)),
            ("CCD_SOCKET_DIR".into(), path(&self.sock)),
            ("CCD_STATE_DIR".into(), path(&self.state)),
            ("CCD_CLAUDE_BIN".into(), path(&crate::bins::fake_claude())),
            ("CCD_CONFIG".into(), path(&self.root.join("ccd.toml"))),
            ("CCD_TRUST_STABLE_MS".into(), "300".into()),
            ("TMPDIR".into(), path(&self.root)),
            ("CCD_LOG".into(), "debug".into()),
        ]
    }
}

/// `ccd args…` (the binary at `ccd`) with `env` and without the caller's
/// `XDG_RUNTIME_DIR` and `CCD_CLAUDE_BIN`.
pub fn command(ccd: &Path, args: &[&str], env: &[(String, String)]) -> Command {
    let mut c = Command::new(ccd);
    c.args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CCD_CLAUDE_BIN");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_env_points_inside_the_root() {
        let d = Dirs::new("ccd-k");
        assert!(d.home.is_dir() && d.work.is_dir());
        let env = d.env();
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .expect(k)
        };
        for k in [
            "HOME",
            "CLAUDE_CONFIG_DIR",
            "CCD_SOCKET_DIR",
            "CCD_STATE_DIR",
            "CCD_CONFIG",
            "TMPDIR",
        ] {
            assert!(Path::new(&get(k)).starts_with(&d.root), "{k}");
        }
        let c = command(Path::new("/bin/true"), &["x"], &env);
        assert!(c
            .get_envs()
            .any(|(k, v)| k == "XDG_RUNTIME_DIR" && v.is_none()));
    }
}
