//! `ccd web`'s content search (`POST /api/search`, issue 55): guarded as
//! every other API route (the cookie, this page's `Origin`, the query's
//! length), answered from every machine's `sessions.search` at once and
//! merged: a phrase planted in a transcript on this machine and one on
//! another machine (a second sandbox reached through a stand-in for ssh,
//! as http_hosts.rs does) both found, each with its machine, folder, state
//! and a snippet whose match is the phrase; a machine that cannot be
//! reached named with why, the others' hits still given; one that stalls
//! named after its wait (10 s) while this machine's hits are given, and
//! searches at once bounded (4: a fifth is refused with 429, not queued);
//! a `--read-only` page may search (a read), while its actions are refused.
//! The page's choices reach every machine's search and filter it: a dead
//! and a held conversation saying the same thing, `scope` dead giving only
//! the dead one (live only the held one), `regex` matching by pattern, a
//! bad pattern 400 with the daemon's words, `roles` narrowing to the
//! user's words (a prompt's phrase not found among Claude's); an unknown scope, role or a non-boolean `regex` 400.
//! And the list's
//! tokens and dollars (`usage`, from the daemon's usage board): a planted
//! conversation's tokens on its row and in the list's total.
//!
//! Every process is the sandboxes' own (ended by their handles).

mod http;

use http::{stand_in_ssh, wait_for, Sandbox, Web, T};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The sandbox's Claude config dir (`CLAUDE_CONFIG_DIR` of its env).
fn config(sb: &Sandbox) -> std::path::PathBuf {
    sb.env
        .iter()
        .find(|(k, _)| k == "CLAUDE_CONFIG_DIR")
        .map(|(_, v)| v.into())
        .expect("CLAUDE_CONFIG_DIR in the sandbox's env")
}

/// A dead conversation in `folder` whose first prompt says `said`; its id.
fn plant(sb: &Sandbox, n: u64, folder: &str, said: &str) -> String {
    let sid = ccd_testkit::gen::sid(n);
    let cwd = sb.work.join(folder);
    std::fs::create_dir_all(&cwd).unwrap();
    let mut w =
        ccd_testkit::gen::TranscriptWriter::create(&config(sb), &sid, cwd.to_str().unwrap());
    w.turn("an unrelated first question", 1000, 10);
    w.turn(said, 1200, 10);
    sid
}

fn search(web: &Web, cookie: &str, query: &str) -> http::Resp {
    web.post(
        cookie,
        "/api/search",
        &json!({ "query": query }).to_string(),
    )
}

fn hit<'a>(answer: &'a Value, sid: &str) -> Option<&'a Value> {
    answer["hits"]
        .as_array()?
        .iter()
        .find(|h| h["session"] == sid)
}

#[test]
fn search_needs_the_cookie_and_this_pages_origin_and_bounds_the_query() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let body = json!({"query": "anything"}).to_string();
    let origin = web.origin();
    let c = format!("ccd_web={cookie}");

    // No cookie: 401, nothing searched.
    let r = web.req(
        "POST",
        "/api/search",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        Some(&body),
    );
    assert_eq!(r.status, 401, "{r:?}");
    http::assert_security_headers(&r);
    // Another origin's page (the cookie would go along on the same site),
    // or no Origin at all: 403.
    for bad in [Some("http://evil.example"), None] {
        let mut h = vec![("Cookie", c.as_str()), ("Content-Type", "application/json")];
        if let Some(o) = bad {
            h.push(("Origin", o));
        }
        let r = web.req("POST", "/api/search", &h, Some(&body));
        assert_eq!(r.status, 403, "{bad:?}: {r:?}");
        assert!(r.body.contains("Origin"), "{r:?}");
        http::assert_security_headers(&r);
    }
    // A forged Host: 403.
    let r = http::request(
        &web.addr,
        "POST",
        "/api/search",
        &[
            ("Host", "evil.example"),
            ("Cookie", &c),
            ("Origin", &origin),
            ("Content-Type", "application/json"),
        ],
        Some(&body),
    );
    assert_eq!(r.status, 403, "{r:?}");
    // Not a GET route (a search is asked with this page's Origin).
    let r = web.get(&cookie, "/api/search?query=anything");
    assert_eq!(r.status, 405, "{r:?}");
    // The query: bounded, not empty; unknown fields refused.
    let r = search(&web, &cookie, &"x".repeat(513));
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["code"], "query", "{r:?}");
    let r = search(&web, &cookie, "   ");
    assert_eq!(r.status, 400, "{r:?}");
    let r = web.post(
        &cookie,
        "/api/search",
        &json!({"query": "x", "limit": 101}).to_string(),
    );
    assert_eq!(r.status, 400, "{r:?}");
    let r = web.post(
        &cookie,
        "/api/search",
        &json!({"query": "x", "sql": "1"}).to_string(),
    );
    assert_eq!(r.status, 400, "{r:?}");
}

#[test]
fn hits_from_every_machine_merged_with_an_unreachable_one_named() {
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    stand_in_ssh(&mut near, &far);
    let here = plant(
        &near,
        501,
        "nearproj",
        "where did we fix the zanzibar handshake",
    );
    let there = plant(
        &far,
        502,
        "farproj",
        "the zanzibar handshake fails on arm64",
    );
    let other = plant(&near, 503, "otherproj", "nothing to see here");
    std::fs::write(
        near.root.join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://far\", \"ssh://nowhere\"]\n",
    )
    .unwrap();
    let web = Web::start(&near, &[]);
    let cookie = web.login();

    // The daemons may still be indexing: asked again until both are found.
    let answer = wait_for(T, "both planted conversations found", || {
        // A quoted phrase: the words together, the whole phrase marked.
        let r = search(&web, &cookie, "\"zanzibar handshake\"");
        assert_eq!(r.status, 200, "{r:?}");
        let a = r.json();
        (hit(&a, &here).is_some() && hit(&a, &there).is_some()).then_some(a)
    });
    assert!(hit(&answer, &other).is_none(), "{answer}");
    let h = hit(&answer, &here).unwrap();
    assert_eq!(h["machine"], "local", "{h}");
    assert_eq!(h["state"], "dead", "{h}");
    assert!(h["folder"].as_str().unwrap().ends_with("/nearproj"), "{h}");
    assert_eq!(
        h["snippet"]["matched"].as_str().unwrap().to_lowercase(),
        "zanzibar handshake",
        "{h}"
    );
    assert!(
        h["snippet"]["before"]
            .as_str()
            .unwrap()
            .ends_with("where did we fix the "),
        "{h}"
    );
    assert!(
        h["timestamp"].as_str().unwrap().starts_with("2026-11-"),
        "{h}"
    );
    let t = hit(&answer, &there).unwrap();
    assert_eq!(t["machine"], "far", "{t}");
    assert!(t["folder"].as_str().unwrap().ends_with("/farproj"), "{t}");
    assert_eq!(
        t["snippet"]["after"].as_str().unwrap(),
        " fails on arm64",
        "{t}"
    );
    // Every machine named; the unreachable one with ssh's words.
    let machines = answer["machines"].as_array().unwrap();
    let names: Vec<&str> = machines
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local", "far", "nowhere"], "{answer}");
    assert!(machines[0]["error"].is_null(), "{answer}");
    assert!(machines[1]["error"].is_null(), "{answer}");
    assert!(
        machines[2]["error"]
            .as_str()
            .unwrap()
            .contains("Could not resolve hostname nowhere"),
        "{answer}"
    );
    // Best first across machines.
    let scores: Vec<f64> = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{answer}");
}

#[test]
fn the_list_carries_each_conversations_tokens_and_dollars_and_their_total() {
    let sb = Sandbox::new();
    // Two turns: (1000 + 100 + 1000 + 7) + (1200 + 100 + 1000 + 7) tokens.
    let sid = plant(&sb, 601, "costly", "what does this cost");
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let list = wait_for(T, "the planted conversation's usage listed", || {
        let l = web.sessions(&cookie);
        let has = l["sessions"]
            .as_array()?
            .iter()
            .any(|s| s["id"] == sid.as_str() && s["usage"].is_object());
        has.then_some(l)
    });
    let row = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == sid.as_str())
        .unwrap();
    assert_eq!(row["usage"]["tokens"], 4414, "{row}");
    assert!(row["usage"]["cost_usd"].as_f64().is_some(), "{row}");
    assert!(row["usage"]["unpriced"].is_boolean(), "{row}");
    let total = &list["usage"];
    assert!(
        total["tokens"].as_u64().is_some_and(|t| t >= 4414),
        "{list}"
    );
}

#[test]
fn a_stalled_machine_is_named_after_its_wait_and_searches_at_once_are_bounded() {
    let far = Sandbox::new();
    let mut near = Sandbox::new();
    stand_in_ssh(&mut near, &far);
    let here = plant(&near, 701, "nearproj", "the marmoset cache eviction");
    std::fs::write(
        near.root.join("ccd.toml"),
        "ui_hosts = [\"local\", \"ssh://stall\"]\n",
    )
    .unwrap();
    let web = Web::start(&near, &[]);
    let cookie = web.login();

    // Four searches hold every slot while the stalled machine is waited
    // for; a fifth meanwhile is refused at once, not queued.
    std::thread::scope(|s| {
        let held: Vec<_> = (0..4)
            .map(|_| s.spawn(|| search(&web, &cookie, "\"marmoset cache\"")))
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        let r = search(&web, &cookie, "anything");
        assert_eq!(r.status, 429, "{r:?}");
        assert_eq!(r.json()["code"], "busy", "{r:?}");
        for h in held {
            let r = h.join().unwrap();
            assert_eq!(r.status, 200, "{r:?}");
            let a = r.json();
            assert!(a["machines"][0]["error"].is_null(), "{a}");
            assert!(
                a["machines"][1]["error"]
                    .as_str()
                    .unwrap()
                    .contains("stall did not answer within 10 s"),
                "{a}"
            );
        }
    });
    // The slots are free again; this machine's hit is given whatever the
    // stalled one does, never after much more than its wait.
    wait_for(T * 3, "this machine's hit beside the stalled one", || {
        let t = Instant::now();
        let r = search(&web, &cookie, "\"marmoset cache\"");
        assert!(t.elapsed() < Duration::from_secs(16), "{:?}", t.elapsed());
        assert_eq!(r.status, 200, "{r:?}");
        let a = r.json();
        assert_eq!(a["machines"][1]["name"], "stall", "{a}");
        assert!(a["machines"][1]["error"].is_string(), "{a}");
        hit(&a, &here).map(|_| ())
    });
}

#[test]
fn a_read_only_page_may_search() {
    let sb = Sandbox::new();
    let sid = plant(&sb, 801, "ro", "the pangolin retry budget");
    let web = Web::start(&sb, &["--read-only"]);
    let cookie = web.login();
    // A search is a read: served, while actions are refused.
    let r = web.post(&cookie, "/api/new", &json!({"cwd": "/tmp"}).to_string());
    assert_eq!(r.status, 403, "{r:?}");
    wait_for(T, "the hit on a read-only page", || {
        let r = search(&web, &cookie, "\"pangolin retry\"");
        assert_eq!(r.status, 200, "{r:?}");
        hit(&r.json(), &sid).map(|_| ())
    });
}

fn ask(web: &Web, cookie: &str, body: Value) -> http::Resp {
    web.post(cookie, "/api/search", &body.to_string())
}

/// The sessions of a 200 answer's hits.
fn sessions_of(r: &http::Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["session"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn scope_regex_and_roles_reach_the_search_and_filter_it() {
    let sb = Sandbox::new();
    let dead = plant(&sb, 901, "oldproj", "the capybara ledger is off by one");
    let held = sb.new_session("liveproj");
    sb.ok(&["send", &held, "check the capybara ledger again"]);
    wait_for(T, "the held session's echo", || {
        sb.screen(&held)
            .contains("echo: check the capybara ledger again")
            .then_some(())
    });
    let web = Web::start(&sb, &[]);
    let cookie = web.login();

    // Every scope: both found (the daemon may still be indexing).
    wait_for(T, "both conversations found", || {
        let got = sessions_of(&search(&web, &cookie, "\"capybara ledger\""));
        (got.contains(&dead) && got.contains(&held)).then_some(())
    });
    // Dead only: no held session; live only: no dead one.
    let got = sessions_of(&ask(
        &web,
        &cookie,
        json!({"query": "\"capybara ledger\"", "scope": "dead"}),
    ));
    assert_eq!(got, std::slice::from_ref(&dead), "dead only");
    let got = sessions_of(&ask(
        &web,
        &cookie,
        json!({"query": "\"capybara ledger\"", "scope": "live"}),
    ));
    assert_eq!(got, std::slice::from_ref(&held), "live only");
    // A regex: matched as a pattern (as words it matches nothing), and
    // with the scope too.
    assert_eq!(
        sessions_of(&search(&web, &cookie, "capy[a-z]+ +led.er")),
        Vec::<String>::new()
    );
    let r = ask(
        &web,
        &cookie,
        json!({"query": "capy[a-z]+ +led.er", "regex": true}),
    );
    let got = sessions_of(&r);
    assert!(got.contains(&dead) && got.contains(&held), "{r:?}");
    let got = sessions_of(&ask(
        &web,
        &cookie,
        json!({"query": "capy[a-z]+ +led.er", "regex": true, "scope": "dead"}),
    ));
    assert_eq!(
        got,
        std::slice::from_ref(&dead),
        "a regex over dead sessions only"
    );
    // A bad pattern: 400 with the daemon's words.
    let r = ask(&web, &cookie, json!({"query": "capy(bara", "regex": true}));
    assert_eq!(r.status, 400, "{r:?}");
    let msg = r.json()["error"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("regex") && msg.contains("unclosed"), "{r:?}");
    // Roles: the user's words only.
    let r = ask(
        &web,
        &cookie,
        json!({"query": "\"capybara ledger\"", "roles": ["user"]}),
    );
    assert!(sessions_of(&r).contains(&dead), "{r:?}");
    for h in r.json()["hits"].as_array().unwrap() {
        assert_eq!(h["role"], "user", "{h}");
    }
    // Claude's words only: the dead conversation said it in a prompt.
    let r = ask(
        &web,
        &cookie,
        json!({"query": "\"capybara ledger\"", "roles": ["assistant"]}),
    );
    assert!(!sessions_of(&r).contains(&dead), "{r:?}");
    // Unknown values: 400, not forwarded.
    for bad in [
        json!({"query": "capybara", "scope": "held"}),
        json!({"query": "capybara", "scope": 1}),
        json!({"query": "capybara", "roles": ["system"]}),
        json!({"query": "capybara", "roles": ["user", "user"]}),
        json!({"query": "capybara", "roles": "user"}),
        json!({"query": "capybara", "regex": "yes"}),
    ] {
        let r = ask(&web, &cookie, bad.clone());
        assert_eq!(r.status, 400, "{bad}: {r:?}");
    }
    let r = ask(&web, &cookie, json!({"query": "capybara", "scope": "held"}));
    assert!(r.body.contains("scope is all, live or dead"), "{r:?}");
}
