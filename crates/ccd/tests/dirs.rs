//! `dirs.complete`: a typed path completed to a directory on the daemon's
//! machine (what another machine's dashboard asks for Tab).

mod common;

use common::Sandbox;
use serde_json::json;

#[test]
fn typed_paths_complete_to_directories_there_and_bad_input_is_refused() {
    let sb = Sandbox::new();
    for d in ["alpha-one", "alpha-two", "beta", ".hidden"] {
        std::fs::create_dir_all(sb.home.join("src").join(d)).unwrap();
    }
    std::fs::write(sb.home.join("src/alpha.txt"), b"").unwrap();
    let mut c = sb.client_or_start();
    let ask = |c: &mut ccd_client::Client, input: &str| {
        c.call_value("dirs.complete", json!({ "input": input }))
            .unwrap()
    };
    let base = format!("{}/src/", sb.home.display());
    // Several: extended to what they share, each listed.
    let r = ask(&mut c, &format!("{base}al"));
    assert_eq!(r["input"], format!("{base}alpha-"), "{r}");
    assert_eq!(
        r["choices"],
        json!([format!("{base}alpha-one/"), format!("{base}alpha-two/")])
    );
    // One: taken whole. `~` is the daemon's user's home.
    assert_eq!(ask(&mut c, "~/src/b")["input"], "~/src/beta/");
    // Hidden only when asked; files never.
    assert_eq!(ask(&mut c, "~/src/.h")["input"], "~/src/.hidden/");
    assert_eq!(ask(&mut c, "~/src/alpha.")["input"], "~/src/alpha.");
    // Relative: as typed (it would be relative to the daemon's directory).
    let r = ask(&mut c, "src/al");
    assert_eq!(
        (r["input"].as_str(), r["choices"].as_array().map(Vec::len)),
        (Some("src/al"), Some(0))
    );
    // Too long: refused, the daemon keeps serving.
    match c.call_value("dirs.complete", json!({ "input": "/".repeat(5000) })) {
        Err(ccd_client::ClientError::Rpc(e)) => assert_eq!(e.code, -32602, "{e:?}"),
        other => panic!("expected invalid_params, got {other:?}"),
    }
    assert_eq!(ask(&mut c, "~/src/b")["input"], "~/src/beta/");
}

/// `~` is a home, never the daemon's own directory: `~/` lists HOME's
/// folders, `~` alone completes to `~/`, `~root` to root's home, and
/// `~name/` for a user the machine does not have is refused. (Before, `~`
/// listed the cwd's folders starting with `~` and `~nosuch/` read the
/// cwd's `~nosuch/`.)
#[test]
fn tilde_is_a_home_never_the_daemon_s_directory() {
    let sb = Sandbox::new();
    for d in ["projects", "notes"] {
        std::fs::create_dir_all(sb.home.join(d)).unwrap();
    }
    // The daemon starts in a folder whose names look like `~` paths.
    let cwd = sb.project("daemon-cwd");
    for d in ["~nosuchuser-ccd/inside", "~stray/x"] {
        std::fs::create_dir_all(cwd.join(d)).unwrap();
    }
    let _ = sb
        .cmd(&["screen", "no-such-session"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    let mut c = sb.client();
    let ask = |c: &mut ccd_client::Client, input: &str| {
        c.call_value("dirs.complete", json!({ "input": input }))
    };
    let r = ask(&mut c, "~/").unwrap();
    assert_eq!(r["input"], "~/", "{r}");
    assert_eq!(r["choices"], json!(["~/notes/", "~/projects/"]), "{r}");
    let r = ask(&mut c, "~").unwrap();
    assert_eq!(
        (r["input"].as_str(), &r["choices"]),
        (Some("~/"), &json!([]))
    );
    assert_eq!(ask(&mut c, "~roo").unwrap()["input"], "~roo");
    assert_eq!(ask(&mut c, "~root").unwrap()["input"], "~root/");
    for input in ["~nosuchuser-ccd/", "~nosuchuser-ccd/in"] {
        match ask(&mut c, input) {
            Err(ccd_client::ClientError::Rpc(e)) => {
                assert_eq!(e.code, -32602, "{e:?}");
                assert!(e.message.contains("no such user"), "{e:?}");
            }
            other => panic!("{input}: expected no such user, got {other:?}"),
        }
    }
    // `~s`: half a user name, not the cwd's `~stray`.
    let r = ask(&mut c, "~s").unwrap();
    assert_eq!(
        (r["input"].as_str(), &r["choices"]),
        (Some("~s"), &json!([]))
    );
}
