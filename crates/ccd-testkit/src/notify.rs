//! A `[notify]` command sink for tests: a script that writes each
//! notification's stdin (its JSON) to `<out>/<n>.json` (through a `.tmp`
//! renamed, so a reader never sees half of one) and its `CCD_NOTIFY_*`
//! environment to `<out>/<n>.env`, `<n>` the time in ns and the script's
//! pid; the `ccd.toml` naming it; and what it got, oldest first. Used by
//! ccd's notification tests and ccd-web's prompt-link tests.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The script and the folder it writes to.
#[derive(Debug, Clone)]
pub struct CommandSink {
    /// Where each notification lands (`<root>/notified`).
    pub out: PathBuf,
    /// The command (`<root>/notifier.sh`).
    pub script: PathBuf,
}

impl CommandSink {
    /// Makes `<root>/notified/` and the script `<root>/notifier.sh`.
    pub fn new(root: &Path) -> Self {
        let out = root.join("notified");
        std::fs::create_dir_all(&out).expect("the notified folder");
        let script = root.join("notifier.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nn=$(date +%s%N)-$$\nenv | grep '^CCD_NOTIFY_' | sort > {0}/$n.env\ncat > {0}/$n.json.tmp\nmv {0}/$n.json.tmp {0}/$n.json\n",
                out.display()
            ),
        )
        .expect("the notifier script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
            .expect("the notifier script's mode");
        Self { out, script }
    }

    /// Writes `<root>/ccd.toml`: a `[notify]` table with the desktop off,
    /// this script as the command, and `extra` (more lines of the table).
    pub fn write_config(&self, root: &Path, extra: &str) {
        let config = format!(
            "[notify]\ndesktop = false\ncommand = [\"{}\"]\n{extra}\n",
            self.script.display()
        );
        std::fs::write(root.join("ccd.toml"), config).expect("ccd.toml");
    }

    /// Every notification so far, oldest first: its JSON and its
    /// `CCD_NOTIFY_*` lines.
    pub fn received(&self) -> Vec<(Value, String)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.out)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|x| x == "json"));
        files.sort();
        files
            .iter()
            .filter_map(|p| {
                let json = serde_json::from_slice(&std::fs::read(p).ok()?).ok()?;
                let env = std::fs::read_to_string(p.with_extension("env")).unwrap_or_default();
                Some((json, env))
            })
            .collect()
    }

    /// The `permission` notifications so far, oldest first.
    pub fn permissions(&self) -> Vec<Value> {
        self.received()
            .into_iter()
            .map(|(j, _)| j)
            .filter(|j| j["reason"] == "permission")
            .collect()
    }
}
