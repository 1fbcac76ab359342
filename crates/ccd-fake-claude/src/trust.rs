//! Folder trust, as recorded in the global state file (`.claude.json`) under
//! `projects["<abs cwd>"].hasTrustDialogAccepted`. A folder is trusted when it or any of its
//! ancestors is.

use std::fs;
use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use crate::util::atomic_write;

fn load(state: &Path) -> Option<Map<String, Value>> {
    let text = fs::read_to_string(state).ok()?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// True if `cwd` or one of its ancestors has `hasTrustDialogAccepted: true`.
pub fn is_trusted(state: &Path, cwd: &Path) -> bool {
    let Some(root) = load(state) else {
        return false;
    };
    let Some(Value::Object(projects)) = root.get("projects") else {
        return false;
    };
    cwd.ancestors().any(|dir| {
        let key = dir.to_string_lossy();
        projects
            .get(key.as_ref())
            .and_then(|p| p.get("hasTrustDialogAccepted"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    })
}

/// Records trust for `cwd`, keeping every other key of the file (atomic rewrite).
pub fn record_trust(state: &Path, cwd: &Path) -> io::Result<()> {
    let mut root = load(state).unwrap_or_default();
    let projects = root
        .entry("projects")
        .or_insert_with(|| Value::Object(Map::new()));
    if !projects.is_object() {
        *projects = Value::Object(Map::new());
    }
    if let Value::Object(projects) = projects {
        let key = cwd.to_string_lossy().into_owned();
        let project = projects
            .entry(key)
            .or_insert_with(|| Value::Object(Map::new()));
        if !project.is_object() {
            *project = Value::Object(Map::new());
        }
        if let Value::Object(project) = project {
            project.insert("hasTrustDialogAccepted".into(), Value::Bool(true));
        }
    }
    if let Some(dir) = state.parent() {
        fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&Value::Object(root)).map_err(io::Error::other)?;
    atomic_write(state, text.as_bytes(), 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_inherited_and_other_keys_kept() {
        let dir = std::env::temp_dir().join(format!("fc-trust-{}", crate::util::random_hex(4)));
        fs::create_dir_all(&dir).unwrap();
        let state = dir.join(".claude.json");
        fs::write(&state, r#"{"theme":"dark","projects":{"/x":{"foo":1}}}"#).unwrap();
        assert!(!is_trusted(&state, Path::new("/a/b")));
        record_trust(&state, Path::new("/a")).unwrap();
        assert!(is_trusted(&state, Path::new("/a/b/c")));
        assert!(!is_trusted(&state, Path::new("/ab")));
        let v: Value = serde_json::from_str(&fs::read_to_string(&state).unwrap()).unwrap();
        assert_eq!(v["theme"], "dark");
        assert_eq!(v["projects"]["/x"]["foo"], 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
