//! `ccd web`'s doors, over plain HTTP: the token login and its cookie, a
//! wrong or missing token refused and rate-limited, forged `Host` and
//! `Origin` refused (HTTP and WebSocket upgrade), the security headers on
//! every response, `--revoke` ending a live cookie, `--read-only`, and
//! listening beyond loopback without TLS refused.

mod http;

use http::{assert_security_headers, cookie_of, request, upgrade_status, Sandbox, Web};

#[test]
fn the_token_logs_in_with_a_strict_cookie_and_leaves_the_address_bar() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let r = web.req("GET", &format!("/?token={}", web.token), &[], None);
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(r.header("location"), Some("/"));
    let set = r.header("set-cookie").unwrap();
    let parts: Vec<&str> = set.split(';').map(str::trim).collect();
    assert!(parts[0].starts_with("ccd_web="), "{set}");
    assert_eq!(parts[0].len(), "ccd_web=".len() + 64, "{set}");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(parts.contains(&attr), "{set}");
    }
    assert!(!parts.contains(&"Secure"), "plain http: {set}");
    assert_security_headers(&r);
    let cookie = cookie_of(&r).unwrap();

    let page = web.get(&cookie, "/");
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page.body.contains("/static/app.js"), "{}", page.body);
    let js = web.get(&cookie, "/static/app.js");
    assert_eq!(js.status, 200);
    assert!(js
        .header("content-type")
        .unwrap()
        .starts_with("text/javascript"));
    let list = web.sessions(&cookie);
    assert_eq!(list["machines"][0]["name"], "local", "{list}");
    assert!(list["machines"][0]["error"].is_null(), "{list}");
    assert_eq!(list["read_only"], false, "{list}");
    assert!(list["sessions"].is_array(), "{list}");
    // Another login gets another cookie; both work.
    let second = web.login();
    assert_ne!(second, cookie);
    assert_eq!(web.get(&cookie, "/api/sessions").status, 200);
    assert_eq!(web.get(&second, "/api/sessions").status, 200);
}

#[test]
fn no_cookie_no_page_and_wrong_tokens_are_rate_limited() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    // No cookie: the login-needed page, a JSON error for the API, the
    // assets too.
    let r = web.req("GET", "/", &[], None);
    assert_eq!(r.status, 401);
    assert!(!r.body.contains(&web.token));
    assert_security_headers(&r);
    let r = web.req("GET", "/api/sessions", &[], None);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"], "log in first");
    assert_eq!(web.req("GET", "/static/app.js", &[], None).status, 401);
    let r = web.req(
        "GET",
        "/api/sessions",
        &[("Cookie", "ccd_web=forged")],
        None,
    );
    assert_eq!(r.status, 401);
    assert_eq!(web.req("GET", "/?token=", &[], None).status, 401);

    // Wrong tokens: refused with no detail, then rate-limited (the right
    // one too, while the address is blocked).
    let mut wrong = web.token.clone();
    wrong.replace_range(0..1, if wrong.starts_with('a') { "b" } else { "a" });
    for i in 0..5 {
        let r = web.req("GET", &format!("/?token={wrong}"), &[], None);
        assert_eq!(r.status, 401, "attempt {i}: {r:?}");
        assert!(r.header("set-cookie").is_none());
        assert!(!r.body.contains("token"), "no detail: {}", r.body);
    }
    let r = web.req("GET", &format!("/?token={wrong}"), &[], None);
    assert_eq!(r.status, 429, "{r:?}");
    assert_security_headers(&r);
    let r = web.req("GET", &format!("/?token={}", web.token), &[], None);
    assert_eq!(r.status, 429, "blocked for the minute: {r:?}");
    assert!(r.header("set-cookie").is_none());
}

#[test]
fn a_forged_host_is_refused_for_pages_and_websockets() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let c = format!("ccd_web={cookie}");
    let port = web.addr.rsplit(':').next().unwrap().to_string();
    let evil = format!("evil.example:{port}");
    for host in [evil.as_str(), "127.0.0.1", "evil.example"] {
        let r = request(
            &web.addr,
            "GET",
            "/api/sessions",
            &[("Host", host), ("Cookie", &c)],
            None,
        );
        assert_eq!(r.status, 403, "Host {host}: {r:?}");
        assert!(r.body.starts_with("forbidden: Host"), "{}", r.body);
        assert_security_headers(&r);
        // A DNS-rebound login is refused too (no cookie is set).
        let r = request(
            &web.addr,
            "GET",
            &format!("/?token={}", web.token),
            &[("Host", host)],
            None,
        );
        assert_eq!(r.status, 403, "{r:?}");
        let o = web.origin();
        let r = upgrade_status(&web.addr, &[("Host", host), ("Cookie", &c), ("Origin", &o)]);
        assert_eq!(r.status, 403, "WebSocket with Host {host}: {r:?}");
    }
    // No Host at all.
    let r = request(&web.addr, "GET", "/api/sessions", &[("Cookie", &c)], None);
    assert_eq!(r.status, 403, "{r:?}");
    // localhost:<port> names this server.
    let lh = format!("localhost:{port}");
    let r = request(
        &web.addr,
        "GET",
        "/api/sessions",
        &[("Host", &lh), ("Cookie", &c)],
        None,
    );
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn a_forged_origin_is_refused_for_actions_and_websockets() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    let c = format!("ccd_web={cookie}");
    let body = r#"{"text":"hello"}"#;
    let path = "/api/session/0000/send";
    for origin in [
        Some("http://evil.example"),
        Some("null"),
        Some("https://127.0.0.1:1"),
        None,
    ] {
        let mut h = vec![("Cookie", c.as_str()), ("Content-Type", "application/json")];
        if let Some(o) = origin {
            h.push(("Origin", o));
        }
        let r = web.req("POST", path, &h, Some(body));
        assert_eq!(r.status, 403, "Origin {origin:?}: {r:?}");
        assert!(r.body.starts_with("forbidden: Origin"), "{}", r.body);
        assert_security_headers(&r);
        let mut h = vec![("Host", web.addr.as_str()), ("Cookie", c.as_str())];
        if let Some(o) = origin {
            h.push(("Origin", o));
        }
        let r = upgrade_status(&web.addr, &h);
        assert_eq!(r.status, 403, "WebSocket with Origin {origin:?}: {r:?}");
    }
    // The page's own origin passes the door (the daemon then answers).
    let r = web.post(&cookie, path, body);
    assert_ne!(r.status, 403, "{r:?}");
    assert!(r.json()["error"].is_string(), "{r:?}");
    let o = web.origin();
    let r = upgrade_status(
        &web.addr,
        &[("Host", &web.addr), ("Cookie", &c), ("Origin", &o)],
    );
    assert_eq!(r.status, 101, "{r:?}");
    // Without the cookie, the right Origin is not enough.
    let r = upgrade_status(&web.addr, &[("Host", &web.addr), ("Origin", &o)]);
    assert_eq!(r.status, 401, "{r:?}");
}

#[test]
fn every_response_carries_the_security_headers() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    for path in [
        "/",
        "/static/app.js",
        "/static/app.css",
        "/api/sessions",
        "/nope",
        "/api/complete?prefix=/",
    ] {
        let r = web.get(&cookie, path);
        assert_security_headers(&r);
        assert!(r.status == 200 || r.status == 404, "{path}: {r:?}");
    }
    let r = web.post(&cookie, "/api/new", "not json");
    assert_eq!(r.status, 400, "{r:?}");
    assert_security_headers(&r);
    // A preflight gets no CORS answer either.
    let r = web.req(
        "OPTIONS",
        "/api/sessions",
        &[
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        None,
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_security_headers(&r);
}

#[test]
fn revoke_ends_the_cookies_of_a_running_server() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let cookie = web.login();
    assert_eq!(web.get(&cookie, "/api/sessions").status, 200);
    let mut ws = web.ws(&cookie);
    assert_eq!(ws.next()["t"], "sessions");
    let out = sb.ok(&["web", "--revoke"]);
    assert!(out.contains("ended"), "{out}");
    assert_eq!(web.get(&cookie, "/api/sessions").status, 401);
    assert_eq!(web.get(&cookie, "/").status, 401);
    // An open page's socket is told and closed (within the re-check).
    let e = ws.until("the logout", |m| m["t"] == "error");
    assert_eq!(e["message"], "logged out");
    let closed = http::wait_for(http::T, "the socket closed", || match ws.0.read() {
        Ok(tungstenite::Message::Close(_)) | Err(_) => Some(true),
        Ok(_) => None,
    });
    assert!(closed);
    // The token still logs in; the new cookie works.
    let again = web.login();
    assert_eq!(web.get(&again, "/api/sessions").status, 200);
    assert_eq!(web.get(&cookie, "/api/sessions").status, 401);
}

#[test]
fn read_only_looks_but_does_not_act() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &["--read-only"]);
    let cookie = web.login();
    let list = web.get(&cookie, "/api/sessions");
    assert_eq!(list.status, 200);
    // The page is told, so it shows no action (tests/browser.rs).
    assert!(list.body.contains("\"read_only\":true"), "{}", list.body);
    for (path, body) in [
        ("/api/session/0000/send", r#"{"text":"x"}"#),
        (
            "/api/session/0000/respond",
            r#"{"prompt_id":"p","choice":"yes"}"#,
        ),
        ("/api/session/0000/keys", r#"{"keys":["esc"]}"#),
        ("/api/session/0000/interrupt", "{}"),
        ("/api/session/0000/kill", "{}"),
        ("/api/session/0000/fork", "{}"),
        ("/api/session/0000/resume", "{}"),
        ("/api/new", r#"{"cwd":"/tmp"}"#),
    ] {
        let r = web.post(&cookie, path, body);
        assert_eq!(r.status, 403, "{path}: {r:?}");
        assert!(r.body.contains("read-only"), "{}", r.body);
    }
}

#[test]
fn beyond_loopback_without_tls_is_refused_and_a_readable_token_file_too() {
    let sb = Sandbox::new();
    let o = sb.run(&["web", "--listen", "0.0.0.0:0"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("without TLS"), "{err}");
    assert!(o.stdout.is_empty(), "nothing served, no URL printed");
    let o = sb.run(&[
        "web",
        "--listen",
        "0.0.0.0:0",
        "--behind-proxy",
        "http://box",
    ]);
    assert!(!o.status.success());

    // `--print-url` makes the token file (0600); group-readable, it is refused.
    let url = sb.ok(&["web", "--print-url"]);
    assert!(url.starts_with("http://127.0.0.1:7878/?token="), "{url}");
    let file = sb.state.join("web-token");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = sb.run(&["web", "--print-url"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("refusing"),
        "{o:?}"
    );
}

#[test]
fn behind_a_proxy_its_host_and_https_origin_are_the_pages() {
    let sb = Sandbox::new();
    let proxy = "https://box.example.ts.net";
    let web = Web::start(&sb, &["--behind-proxy", proxy]);
    let host = [("Host", "box.example.ts.net")];
    let r = request(
        &web.addr,
        "GET",
        &format!("/?token={}", web.token),
        &host,
        None,
    );
    assert_eq!(r.status, 303, "{r:?}");
    let set = r.header("set-cookie").unwrap();
    assert!(
        set.split(';').any(|p| p.trim() == "Secure"),
        "https to the browser: {set}"
    );
    let cookie = cookie_of(&r).unwrap();
    let c = format!("ccd_web={cookie}");
    let post = |origin: &str| {
        request(
            &web.addr,
            "POST",
            "/api/session/0000/send",
            &[
                ("Host", "box.example.ts.net"),
                ("Cookie", &c),
                ("Origin", origin),
                ("Content-Type", "application/json"),
            ],
            Some(r#"{"text":"x"}"#),
        )
    };
    assert_ne!(post(proxy).status, 403);
    assert_eq!(post("http://box.example.ts.net").status, 403);
    assert_eq!(post("https://other.example.ts.net").status, 403);
    let r = request(
        &web.addr,
        "GET",
        "/api/sessions",
        &[("Host", "other.example.ts.net"), ("Cookie", &c)],
        None,
    );
    assert_eq!(r.status, 403, "{r:?}");
    // The loopback address still names it (the proxy may pass its own Host).
    assert_eq!(web.get(&cookie, "/api/sessions").status, 200);
}
