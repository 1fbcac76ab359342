//! Prompt links (issue 53, item 3) against the fake claude: the daemon's
//! `command` notification about a permission prompt carries
//! `<web_public_url>/p#<token>` when `web_public_url` is set; that token,
//! with no login, shows that prompt and answers it once; a second use, an
//! expired, altered or forged token, one made before `ccd web --revoke`,
//! one for a machine not served, and the token used for anything else
//! (another prompt of the session, another route, "always", a message)
//! are refused; a link naming another machine served (`--host`, through a
//! stand-in ssh) answers that machine's prompt. The used-nonce bound is
//! pushed past in `link.rs`'s unit tests.

mod http;

use ccd_notify::link::{Claims, KeyFile};
use ccd_testkit::notify::CommandSink;
use http::{wait_for, Sandbox, Web, T};
use serde_json::{json, Value};

/// A command sink keeping each notification, and the sandbox's config:
/// `[notify]` with it and `web_public_url`.
fn configure(sb: &Sandbox) -> CommandSink {
    let sink = CommandSink::new(&sb.root);
    sink.write_config(
        &sb.root,
        "quiet_secs = 0\nreasons = [\"permission\"]\nweb_public_url = \"https://phone.example/ccd/\"",
    );
    sink
}

/// The permission notifications of `sid` so far.
fn notified(out: &CommandSink, sid: &str) -> Vec<Value> {
    out.permissions()
        .into_iter()
        .filter(|j| j["session"] == sid)
        .collect()
}

/// POST `body` to a link route with this page's Origin and no cookie.
fn link_post(web: &Web, path: &str, body: &Value) -> http::Resp {
    let o = web.origin();
    web.req(
        "POST",
        path,
        &[("Origin", &o), ("Content-Type", "application/json")],
        Some(&body.to_string()),
    )
}

fn view(web: &Web, token: &str) -> http::Resp {
    link_post(web, "/api/link/view", &json!({"token": token}))
}

fn answer(web: &Web, token: &str, choice: &str) -> http::Resp {
    link_post(
        web,
        "/api/link/respond",
        &json!({"token": token, "choice": choice}),
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A token made with the sandbox's key file (as the daemon makes them).
fn mint(sb: &Sandbox, machine: &str, sid: &str, prompt: &str, exp: i64) -> String {
    let key = KeyFile::in_dir(&sb.state).load_or_create().unwrap();
    key.mint(&Claims {
        v: 1,
        m: machine.into(),
        s: sid.into(),
        p: prompt.into(),
        exp,
        n: ccd_notify::link::nonce(),
    })
}

fn screen_has(sb: &Sandbox, sid: &str, text: &str) -> Option<()> {
    sb.screen(sid).contains(text).then_some(())
}

/// Sends `text` to `sid` through the page (logged in), and waits for the
/// notification of its permission prompt; its prompt id and link token.
fn ask(web: &Web, cookie: &str, out: &CommandSink, sid: &str, text: &str) -> (String, String) {
    let before = notified(out, sid).len();
    let r = web.post(
        cookie,
        &format!("/api/session/{sid}/send"),
        &json!({ "text": text }).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let n = wait_for(T, "the prompt notified", || {
        notified(out, sid).get(before).cloned()
    });
    let link = n["link"].as_str().unwrap_or_else(|| panic!("a link: {n}"));
    let token = link
        .strip_prefix("https://phone.example/ccd/p#")
        .unwrap_or_else(|| panic!("the prompt link: {link}"));
    (
        n["prompt_id"].as_str().unwrap().to_string(),
        token.to_string(),
    )
}

#[test]
fn a_notified_link_answers_its_prompt_once_and_nothing_else() {
    let sb = Sandbox::new();
    let out = configure(&sb);
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let sid = sb.new_session("linked");
    let other = sb.new_session("other");
    let (prompt, token) = ask(&web, &cookie, &out, &sid, "perm touch a.txt");

    // The page, without a cookie, with the same security headers.
    let r = web.req("GET", "/p", &[], None);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("/static/link.js"), "{r:?}");
    http::assert_security_headers(&r);
    assert_eq!(web.req("GET", "/static/link.js", &[], None).status, 200);

    // The prompt it names.
    let r = view(&web, &token);
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    assert_eq!(v["session"], sid.as_str(), "{v}");
    assert_eq!(v["machine"], "local", "{v}");
    assert_eq!(v["prompt"]["id"], prompt.as_str(), "{v}");
    assert_eq!(v["prompt"]["detail"], "touch a.txt", "{v}");
    let keys: Vec<&str> = v["prompt"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["yes", "no"], "yes and no only: {v}");
    http::assert_security_headers(&r);

    // Host and Origin apply as everywhere.
    let r = web.req(
        "POST",
        "/api/link/view",
        &[("Content-Type", "application/json")],
        Some(&json!({"token": token}).to_string()),
    );
    assert_eq!(r.status, 403, "no Origin: {r:?}");
    let r = http::request(
        &web.addr,
        "POST",
        "/api/link/view",
        &[
            ("Host", "evil.example"),
            ("Origin", &web.origin()),
            ("Content-Type", "application/json"),
        ],
        Some(&json!({"token": token}).to_string()),
    );
    assert_eq!(r.status, 403, "a foreign Host: {r:?}");

    // The token grants nothing else: not "always", not a message, not
    // another session named beside it, not as a cookie or a login.
    assert_eq!(answer(&web, &token, "always").status, 400);
    let r = link_post(
        &web,
        "/api/link/respond",
        &json!({"token": token, "choice": "no", "message": "do this instead"}),
    );
    assert_eq!(r.status, 400, "{r:?}");
    let r = link_post(
        &web,
        "/api/link/respond",
        &json!({"token": token, "choice": "yes", "session": other}),
    );
    assert_eq!(r.status, 400, "{r:?}");
    let as_cookie = format!("ccd_web={token}");
    let o = web.origin();
    for (method, path) in [
        ("GET", "/api/sessions".to_string()),
        ("POST", format!("/api/session/{sid}/send")),
        ("POST", format!("/api/session/{other}/respond")),
        ("POST", format!("/api/session/{sid}/keys")),
    ] {
        let r = web.req(
            method,
            &path,
            &[
                ("Cookie", &as_cookie),
                ("Origin", &o),
                ("Content-Type", "application/json"),
            ],
            Some("{\"text\":\"x\"}"),
        );
        assert_eq!(r.status, 401, "{method} {path}: {r:?}");
    }
    let r = web.req("GET", &format!("/?token={token}"), &[], None);
    assert_eq!(r.status, 401, "not a login: {r:?}");
    assert!(http::cookie_of(&r).is_none());

    // Approve: once.
    let r = answer(&web, &token, "yes");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["option"], "Yes", "{r:?}");
    wait_for(T, "the approved turn", || {
        screen_has(&sb, &sid, "echo: perm touch a.txt")
    });
    let r = answer(&web, &token, "yes");
    assert_eq!(r.status, 410, "a second use: {r:?}");
    assert_eq!(r.json()["code"], "used", "{r:?}");

    // The session's next prompt: the first prompt's link (even a fresh
    // one for it) neither shows nor answers it.
    let (second, token2) = ask(&web, &cookie, &out, &sid, "perm rm -rf build");
    assert_ne!(second, prompt);
    let old = mint(&sb, "local", &sid, &prompt, now_ms() + 60_000);
    let r = view(&web, &old);
    assert_eq!(r.status, 409, "{r:?}");
    assert_eq!(r.json()["code"], "stale", "{r:?}");
    let r = answer(&web, &old, "yes");
    assert_eq!(r.status, 409, "the daemon refuses a stale prompt: {r:?}");
    assert_eq!(r.json()["code"], -32013, "{r:?}");
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("nothing was typed"),
        "the daemon's words: {r:?}"
    );
    assert!(sb.screen(&sid).contains("rm -rf build"), "still asked");
    // Its own link denies it.
    let r = answer(&web, &token2, "no");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["choice"], "no", "{r:?}");
}

#[test]
fn expired_altered_forged_revoked_and_foreign_links_are_refused() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let sid = sb.new_session("asks");
    let r = web.post(
        &cookie,
        &format!("/api/session/{sid}/send"),
        &json!({"text": "perm touch b.txt"}).to_string(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let prompt = wait_for(T, "the prompt listed", || {
        let list = web.sessions(&cookie);
        list["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == sid.as_str())?["prompt"]["id"]
            .as_str()
            .map(String::from)
    });

    // Expired: 410, not counted as a failed attempt.
    let expired = mint(&sb, "local", &sid, &prompt, now_ms() - 1);
    let r = answer(&web, &expired, "yes");
    assert_eq!(r.status, 410, "{r:?}");
    assert_eq!(r.json()["code"], "expired", "{r:?}");
    // A machine this server does not serve.
    let r = view(
        &web,
        &mint(&sb, "elsewhere", &sid, &prompt, now_ms() + 60_000),
    );
    assert_eq!(r.status, 404, "{r:?}");

    // Altered: another session's id in the claims, the MAC kept.
    let good = mint(&sb, "local", &sid, &prompt, now_ms() + 60_000);
    let (body, mac) = good.split_once('.').unwrap();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: Value = serde_json::from_slice(&b64.decode(body).unwrap()).unwrap();
    claims["p"] = json!("0000000000000000");
    let altered = format!("{}.{mac}", b64.encode(claims.to_string()));
    let r = answer(&web, &altered, "yes");
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.json()["code"], "link", "{r:?}");
    // Forged with another key.
    let forged = ccd_notify::link::Key::random().mint(&Claims {
        v: 1,
        m: "local".into(),
        s: sid.clone(),
        p: prompt.clone(),
        exp: now_ms() + 60_000,
        n: ccd_notify::link::nonce(),
    });
    assert_eq!(answer(&web, &forged, "yes").status, 401);

    // Made before a revoke: refused (the key was rotated).
    assert_eq!(view(&web, &good).status, 200);
    sb.ok(&["web", "--revoke"]);
    let r = answer(&web, &good, "yes");
    assert_eq!(r.status, 401, "{r:?}");
    assert!(sb.screen(&sid).contains("touch b.txt"), "still asked");
    // One made after it works.
    let after = mint(&sb, "local", &sid, &prompt, now_ms() + 60_000);
    assert_eq!(view(&web, &after).status, 200);

    // Failed attempts are limited as logins are (three so far).
    for _ in 0..2 {
        assert_eq!(view(&web, "junk").status, 401);
    }
    let r = view(&web, &after);
    assert_eq!(r.status, 429, "{r:?}");
}

/// A link naming another machine `ccd web` serves (as `ccd notify` mints
/// it for a `--host` machine) shows and answers that machine's prompt; the
/// same session named on this machine is not found there.
#[test]
fn a_link_naming_another_machine_answers_its_prompt_there() {
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    http::stand_in_ssh(&mut near, &far);
    let there = far.new_session("farproj");
    std::fs::write(
        near.root.join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\"]\n",
    )
    .unwrap();
    let web = Web::start(&near, &[]);
    let cookie = web.login();
    let r = wait_for(T, "the far machine reached", || {
        let r = web.post(
            &cookie,
            &format!("/api/m/far/session/{there}/send"),
            &json!({"text": "perm touch far.txt"}).to_string(),
        );
        (r.status == 200).then_some(r)
    });
    assert_eq!(r.json()["ok"], true, "{r:?}");
    let prompt = wait_for(T, "the far prompt listed", || {
        let list = web.sessions(&cookie);
        list["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == there.as_str())?["prompt"]["id"]
            .as_str()
            .map(String::from)
    });
    // Named on this machine: not there.
    let wrong = mint(&near, "local", &there, &prompt, now_ms() + 60_000);
    assert_eq!(view(&web, &wrong).status, 404);
    let token = mint(&near, "far", &there, &prompt, now_ms() + 60_000);
    let r = view(&web, &token);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["machine"], "far", "{r:?}");
    assert_eq!(r.json()["prompt"]["detail"], "touch far.txt", "{r:?}");
    let r = answer(&web, &token, "yes");
    assert_eq!(r.status, 200, "{r:?}");
    wait_for(T, "the far turn approved", || {
        far.screen(&there)
            .contains("echo: perm touch far.txt")
            .then_some(())
    });
}
