//! Path normalization against a real file system (symlinks, missing leaves).

use ccd_claude::paths::normalize_from;
use std::path::PathBuf;

#[test]
fn normalization_table() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(root.join("real/sub")).unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).unwrap();
    let r = |s: &str| root.join(s);

    let cases: Vec<(PathBuf, PathBuf)> = vec![
        // existing paths, written in every odd way
        (r("real"), r("real")),
        (
            PathBuf::from(format!("{}/real/", root.display())),
            r("real"),
        ),
        (
            PathBuf::from(format!("{}//real", root.display())),
            r("real"),
        ),
        (r("real/./sub/.."), r("real")),
        // symlinks resolve to their target
        (r("link"), r("real")),
        (r("link/sub/"), r("real/sub")),
        // a missing leaf keeps its name under the resolved parent
        (r("link/missing"), r("real/missing")),
        (r("link/missing/deeper/"), r("real/missing/deeper")),
        (r("nope/x/../y"), r("nope/y")),
        // a dangling symlink cannot be resolved: kept lexically
        (r("dangling"), r("dangling")),
        // relative paths are taken against the base
        (PathBuf::from("real/sub"), r("real/sub")),
        (PathBuf::from("./link/"), r("real")),
    ];
    for (input, want) in cases {
        assert_eq!(
            normalize_from(&root, &input),
            want,
            "input {}",
            input.display()
        );
    }
}
