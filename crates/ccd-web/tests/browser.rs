//! `ccd web` in a real browser: Debian's Chromium, headless, driven through
//! chromedriver by `fantoccini`, against `ccd web --listen 127.0.0.1:0` on
//! a sandboxed daemon whose sessions run the fake claude.
//!
//! Covered: the token login (the cookie's flags, the token gone from the
//! address bar), a wrong or missing token refused, the list with held and
//! outside sessions, a permission prompt appearing without a reload and
//! approved with one tap, an approve carrying a prompt id that is no longer
//! shown refused with the daemon's words (the page then shows the new
//! prompt), deny with a message, a prompt sent, keys typed in attach mode
//! reaching the session, another origin's page (same site, so the cookie
//! goes along) refused the WebSocket, the list and a post, a rebound host
//! name refused, a `--read-only` page that shows the screen but has its
//! send refused, `ccd web --revoke` ending the page's cookie, a new
//! session in a folder found by completion, a kill that asks first, and a
//! phone's viewport (390×844, touch) in one column; a conversation's tokens
//! and dollars on its row and the list's total; the search box (words
//! typed, the hits of a dead and a held conversation shown with the match
//! marked and a transcript's markup shown as text, a hit tapped opening
//! its session as a list row does: the tail and Resume for the dead one,
//! the live screen for the held one; Regex ticked finding both by a
//! pattern, "Dead" picked showing only the dead one, a bad pattern the
//! daemon's words); and on the real CLI
//! (both pinned versions, against `ccd-mock-api`) a Bash permission prompt
//! approved from the page and the command run; a notification's prompt
//! link opened on a phone without a login, its prompt approved with one
//! tap, and the link spent.
//!
//! Without Chromium and chromedriver each test fails when `CI` is set and
//! skips loudly otherwise (`harness::browser_or_skip`).

#[path = "browser/harness.rs"]
mod harness;

use harness::{
    browser_or_skip, foreign_page, real_claude_or_skip, real_sandbox, real_versions, wait_for,
    Browser, Device, MockApi, Sandbox, Web, T,
};
use serde_json::{json, Value};

/// Waits for the daemon's model of `sid` to show `needle`.
fn wait_screen(sb: &Sandbox, sid: &str, needle: &str) -> String {
    wait_for(T, needle, || {
        let s = sb.screen(sid);
        s.contains(needle).then_some(s)
    })
}

/// Asks the page's search again (its form submitted) until the hit of
/// `sid` shows: a daemon's index may still be catching up on what was
/// just written.
async fn search_until_hit(b: &Browser, sid: &str) {
    let deadline = std::time::Instant::now() + T;
    let shown = format!("return !!document.querySelector('#hits .item[data-session=\"{sid}\"]');");
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        if b.js(&shown, vec![]).await == json!(true) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no hit of {sid}; the page says: {}",
            b.js(
                "return document.getElementById('search-results').innerText",
                vec![]
            )
            .await
        );
        b.js(
            "document.getElementById('search-form').requestSubmit(); return true",
            vec![],
        )
        .await;
    }
}

/// The list item of `sid` exists on the page.
fn item(sid: &str) -> String {
    format!("return !!document.querySelector('#sessions .item[data-session=\"{sid}\"]');")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_login_sets_a_strict_cookie_and_leaves_the_token_out_of_the_address_bar() {
    let Some((chromium, driver)) = browser_or_skip("token_login") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("login");
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;

    // No cookie yet: the page is not served, the API says 401.
    b.client
        .goto(&format!("{}/", web.origin))
        .await
        .expect("opening /");
    let shown = b
        .js(
            "var l = document.getElementById('view-list'); return !!(l && !l.hidden) || document.body.innerText.indexOf('login') >= 0 && !!document.querySelector('.item');",
            vec![],
        )
        .await;
    assert_eq!(shown, json!(false), "the list is not shown without a login");
    b.client
        .goto(&format!("{}/api/sessions", web.origin))
        .await
        .expect("opening /api/sessions");
    let body = b.js("return document.body.innerText", vec![]).await;
    let body = body.as_str().unwrap_or_default();
    assert!(body.contains("\"error\""), "{body}");
    assert!(
        !body.contains(&sid),
        "no session leaks without a login: {body}"
    );

    // A wrong token and a missing one are refused, with no detail.
    for url in [
        format!("{}/?token={}", web.origin, "0".repeat(64)),
        format!("{}/?token=", web.origin),
    ] {
        b.client.goto(&url).await.expect("opening a bad login URL");
        let text = b.js("return document.body.innerText", vec![]).await;
        let text = text.as_str().unwrap_or_default().to_string();
        assert!(!text.contains(&sid), "{text}");
        assert!(
            !text.contains(web.token()),
            "the real token is never shown: {text}"
        );
        let cookies = b.client.get_all_cookies().await.expect("cookies");
        assert!(
            cookies.iter().all(|c| c.name() != "ccd_web"),
            "a refused login sets no cookie"
        );
    }

    // The right token: redirected to / with the cookie, the token gone.
    let at = b.login(&web.login_url).await;
    assert_eq!(
        at,
        format!("{}/", web.origin),
        "the address bar after login"
    );
    assert!(!at.contains("token"), "{at}");
    let history = b.js("return window.history.length", vec![]).await;
    assert!(history.as_u64().is_some(), "{history}");
    let cookies = b.client.get_all_cookies().await.expect("cookies");
    let c = cookies
        .iter()
        .find(|c| c.name() == "ccd_web")
        .expect("the session cookie");
    assert_eq!(c.http_only(), Some(true), "{c:?}");
    assert_eq!(format!("{:?}", c.same_site()), "Some(Strict)", "{c:?}");
    assert_eq!(c.value().len(), 64, "a 256-bit id in hex: {c:?}");
    assert_ne!(c.value(), web.token(), "the cookie is not the token");
    let js_sees = b.js("return document.cookie", vec![]).await;
    assert_eq!(
        js_sees,
        json!(""),
        "scripts cannot read the HttpOnly cookie"
    );
    b.until("the held session in the list", &item(&sid)).await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_a_prompt_approved_in_one_tap_a_stale_answer_refused_deny_with_a_message_and_a_prompt_sent(
) {
    let Some((chromium, driver)) = browser_or_skip("prompt_flow") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("asks");
    let outside = sb.outside_session("elsewhere", 7);
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;

    // The list: the held session and the one ccd does not hold.
    b.until("the held session in the list", &item(&sid)).await;
    b.until("the outside session in the list", &item(&outside))
        .await;
    let held = b
        .js(
            "return document.querySelector('#sessions .item[data-session=\"' + arguments[0] + '\"]').innerText",
            vec![json!(sid)],
        )
        .await;
    assert!(held.as_str().unwrap_or_default().contains("asks"), "{held}");

    // Into the session; a marker that a reload would lose.
    b.tap(&format!("#sessions .item[data-session=\"{sid}\"]"))
        .await;
    b.until(
        "the session view",
        "return !document.getElementById('view-session').hidden && location.hash.indexOf('#/s/') === 0",
    )
    .await;
    b.js("window.__not_reloaded = 1; return true", vec![]).await;
    // Everything the page does from here runs under the CSP: any
    // violation (an inline style or script, a foreign URL) is noted.
    b.js(
        "window.__csp = []; document.addEventListener('securitypolicyviolation', function (e) { window.__csp.push(e.violatedDirective + ' ' + e.blockedURI); }); return true",
        vec![],
    )
    .await;
    b.until(
        "the live screen",
        "return document.getElementById('screen').children.length > 0",
    )
    .await;

    // A permission prompt appears without a reload; one tap approves it.
    sb.ok(&["send", &sid, "perm touch approved.txt"]);
    b.until(
        "the prompt's detail",
        "var p = document.getElementById('prompt'); return !p.hidden && document.getElementById('p-detail').textContent.indexOf('touch approved.txt') >= 0",
    )
    .await;
    let first = b
        .js(
            "return document.getElementById('prompt').getAttribute('data-prompt')",
            vec![],
        )
        .await;
    let first = first.as_str().unwrap_or_default().to_string();
    assert_eq!(first.len(), 16, "the prompt's id: {first}");
    b.tap("#p-yes").await;
    wait_screen(&sb, &sid, "echo: perm touch approved.txt");
    b.until(
        "the prompt gone from the page",
        "return document.getElementById('prompt').hidden",
    )
    .await;
    assert_eq!(
        b.js("return window.__not_reloaded === 1", vec![]).await,
        json!(true),
        "the page was not reloaded"
    );
    // The screen on the page follows the session.
    b.until(
        "the reply on the page's screen",
        "return document.getElementById('screen').textContent.indexOf('echo: perm touch approved.txt') >= 0",
    )
    .await;

    // A stale page: it still carries the answered prompt's id when the
    // session shows another. The tap is refused with the daemon's words,
    // nothing is typed, and the page shows the new prompt.
    sb.ok(&["send", &sid, "perm rm -rf build"]);
    b.until(
        "the second prompt",
        "return document.getElementById('p-detail').textContent.indexOf('rm -rf build') >= 0",
    )
    .await;
    let second = b
        .js(
            "return document.getElementById('prompt').getAttribute('data-prompt')",
            vec![],
        )
        .await;
    assert_ne!(
        second.as_str(),
        Some(first.as_str()),
        "another prompt, another id"
    );
    b.js(
        "document.getElementById('prompt').setAttribute('data-prompt', arguments[0]); document.getElementById('p-yes').click(); return true",
        vec![json!(first)],
    )
    .await;
    let notice = b
        .until(
            "the refusal",
            "var n = document.getElementById('notice'); return !n.hidden && n.textContent.indexOf('answered or changed') >= 0 ? n.textContent : ''",
        )
        .await;
    let notice = notice.as_str().unwrap_or_default();
    assert!(
        notice.contains(&first),
        "the daemon's words name the stale prompt: {notice}"
    );
    b.until(
        "the new prompt still shown",
        "var p = document.getElementById('prompt'); return !p.hidden && document.getElementById('p-detail').textContent.indexOf('rm -rf build') >= 0 && p.getAttribute('data-prompt') === arguments[0]"
            .replace("arguments[0]", &serde_json::to_string(second.as_str().unwrap_or_default()).unwrap_or_default())
            .as_str(),
    )
    .await;
    std::thread::sleep(std::time::Duration::from_millis(300));
    let s = sb.screen(&sid);
    assert!(
        !s.contains("echo: perm rm -rf build"),
        "nothing was typed:\n{s}"
    );

    // Deny it with a message: the refusal, then the message is the next
    // prompt.
    b.type_into("#p-message", "list the files instead").await;
    b.tap("#p-no").await;
    let s = wait_screen(&sb, &sid, "echo: list the files instead");
    assert!(s.contains("User rejected"), "{s}");
    assert!(!s.contains("echo: perm rm -rf build"), "{s}");

    // A prompt sent from the text field stays text.
    b.type_into("#send-text", "say $(hi) *now*").await;
    b.tap("#send-btn").await;
    wait_screen(&sb, &sid, "echo: say $(hi) *now*");
    b.until(
        "the sent prompt's reply on the page",
        "return document.getElementById('screen').textContent.indexOf('echo: say $(hi) *now*') >= 0",
    )
    .await;

    assert_eq!(
        b.js("return window.__csp", vec![]).await,
        json!([]),
        "CSP violations while the page drew screens and prompts"
    );
    // The check can fail: a style attribute in markup is one.
    b.js(
        "var d = document.createElement('div'); d.innerHTML = '<b style=\"color:red\">x</b>'; document.body.appendChild(d); return true",
        vec![],
    )
    .await;
    b.until(
        "the control's violation noted",
        "return window.__csp.length > 0",
    )
    .await;

    // The outside session shows its transcript's tail, no attach keys.
    b.client
        .goto(&format!("{}/#/s/{outside}", web.origin))
        .await
        .expect("the outside session");
    b.until(
        "the outside session's view",
        "return !document.getElementById('view-session').hidden",
    )
    .await;
    let attach_hidden = b
        .js("return document.getElementById('attach').hidden", vec![])
        .await;
    assert_eq!(
        attach_hidden,
        json!(true),
        "no keys for a session ccd does not hold"
    );
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_box_finds_what_was_said_and_a_hit_opens_its_session() {
    let Some((chromium, driver)) = browser_or_skip("search") else {
        return;
    };
    let sb = Sandbox::new();
    // A dead conversation whose prompt carries markup (shown as text, never
    // made elements), and a held one told something through the daemon.
    let dead = ccd_testkit::gen::sid(7001);
    let folder = sb.work.join("oldproj");
    std::fs::create_dir_all(&folder).expect("a folder");
    let mut w = ccd_testkit::gen::TranscriptWriter::create(
        &sb.config,
        &dead,
        folder.to_str().expect("UTF-8"),
    );
    w.turn("an unrelated first question", 1000, 10);
    w.turn(
        "fix the <img src=x onerror=\"window.__pwned=1\"> quokka lattice now",
        1200,
        10,
    );
    drop(w);
    let held = sb.new_session("liveproj");
    sb.ok(&["send", &held, "remember the wombat protocol"]);
    wait_screen(&sb, &held, "echo: remember the wombat protocol");
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;
    b.until("the held session in the list", &item(&held)).await;
    // What the dead conversation cost, on its row and in the total (its
    // two turns: 4,414 tokens, written as `ccd ls` writes them).
    b.until(
        "the dead conversation's tokens on its row",
        &format!("var e = document.querySelector('#sessions .item[data-session=\"{dead}\"] .usage'); return !!e && /^4k tokens · \\$\\d+\\.\\d\\d\\+?$/.test(e.textContent)"),
    )
    .await;
    b.until(
        "the list's total",
        "var t = document.getElementById('usage-total'); return !t.hidden && t.textContent.indexOf('Total: ') === 0",
    )
    .await;

    // Words typed in the box: the dead conversation's hit, the match
    // marked, its markup text only.
    b.type_into("#search-q", "\"quokka lattice\"").await;
    search_until_hit(&b, &dead).await;
    let sel = format!("#hits .item[data-session=\"{dead}\"]");
    let shown = b
        .js(
            "var e = document.querySelector(arguments[0]); return {text: e.innerText, mark: e.querySelector('mark').textContent, imgs: document.querySelectorAll('#hits img').length, pwned: window.__pwned === 1};",
            vec![json!(sel)],
        )
        .await;
    assert_eq!(
        shown["mark"].as_str().map(str::to_lowercase),
        Some("quokka lattice".into()),
        "{shown}"
    );
    let text = shown["text"].as_str().unwrap_or_default();
    assert!(text.contains("<img src=x"), "markup shown as text: {shown}");
    assert!(text.contains("oldproj") && text.contains("dead"), "{shown}");
    assert_eq!(shown["imgs"], json!(0), "no element made of a transcript");
    assert_eq!(shown["pwned"], json!(false), "no script ran");

    // Tapping the hit opens its session as a list row does: a dead one
    // shows its tail and offers Resume.
    b.tap(&sel).await;
    b.until(
        "the dead session's view",
        &format!("return !document.getElementById('view-session').hidden && location.hash === '#/s/{dead}'"),
    )
    .await;
    b.until(
        "its tail, with what was said",
        "var t = document.getElementById('tail'); return !t.hidden && t.textContent.indexOf('quokka lattice') >= 0",
    )
    .await;
    b.until(
        "Resume offered",
        "return !document.getElementById('a-resume').hidden && document.getElementById('attach').hidden",
    )
    .await;

    // Back to the list: the held conversation found by what it was told;
    // its hit opens the live screen.
    b.tap("#view-session .back").await;
    b.js(
        "var f = document.getElementById('search-q'); f.value = ''; return true",
        vec![],
    )
    .await;
    b.type_into("#search-q", "wombat protocol").await;
    search_until_hit(&b, &held).await;
    b.tap(&format!("#hits .item[data-session=\"{held}\"]"))
        .await;
    b.until(
        "the held session's live screen",
        &format!("return location.hash === '#/s/{held}' && document.getElementById('screen').textContent.indexOf('wombat protocol') >= 0 && !document.getElementById('attach').hidden"),
    )
    .await;

    // The choices under the box: a regex (Regex ticked) finds both; "Dead"
    // picked shows only the dead one; a bad pattern shows the daemon's
    // words as the status.
    b.tap("#view-session .back").await;
    b.js(
        "var f = document.getElementById('search-q'); f.value = ''; return true",
        vec![],
    )
    .await;
    b.tap("label[for=search-regex]").await;
    b.type_into("#search-q", "quokka|wombat").await;
    search_until_hit(&b, &dead).await;
    search_until_hit(&b, &held).await;
    b.js(
        "var s = document.getElementById('search-scope'); s.value = 'dead'; s.dispatchEvent(new Event('change')); return true",
        vec![],
    )
    .await;
    let only_dead = format!(
        "var hs = document.querySelectorAll('#hits .item'); return hs.length === 1 && hs[0].getAttribute('data-session') === '{dead}' && /^1 conversation/.test(document.getElementById('search-status').textContent)"
    );
    b.until("only the dead conversation's hit", &only_dead)
        .await;
    b.type_into("#search-q", "(").await;
    b.until(
        "the bad pattern's words",
        "var t = document.getElementById('search-status').textContent; return t.indexOf('regex') >= 0 && document.querySelectorAll('#hits .item').length === 0",
    )
    .await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_typed_in_attach_mode_reach_the_session() {
    let Some((chromium, driver)) = browser_or_skip("attach_keys") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("typed");
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;
    b.client
        .goto(&format!("{}/#/s/{sid}", web.origin))
        .await
        .expect("the session");
    b.until(
        "the key row",
        "return !document.getElementById('attach').hidden",
    )
    .await;

    // Text goes as a paste (not interpreted); Enter is a key of its own.
    b.type_into("#type-text", "typed from the page").await;
    b.tap("#type-btn").await;
    wait_screen(&sb, &sid, "typed from the page");
    let s = sb.screen(&sid);
    assert!(
        !s.contains("echo: typed from the page"),
        "not submitted yet:\n{s}"
    );
    b.tap("[data-key=\"enter\"]").await;
    wait_screen(&sb, &sid, "echo: typed from the page");

    // Ctrl-C clears a draft (at the fake claude's prompt): type, Ctrl-C,
    // type, Enter: only the second text is submitted.
    b.type_into("#type-text", "draft").await;
    b.tap("#type-btn").await;
    wait_screen(&sb, &sid, "draft");
    b.tap("[data-key=\"ctrl-c\"]").await;
    b.type_into("#type-text", "second").await;
    b.tap("#type-btn").await;
    b.tap("[data-key=\"enter\"]").await;
    let s = wait_screen(&sb, &sid, "echo: second");
    assert!(!s.contains("draftsecond"), "Ctrl-C cleared the draft:\n{s}");

    // `ccd web --revoke` while it serves: the page's next call is refused,
    // nothing is typed, and the page asks for a login.
    sb.ok(&["web", "--revoke"]);
    b.type_into("#type-text", "after the revoke").await;
    b.tap("#type-btn").await;
    b.until(
        "the sign-in view",
        "return !document.getElementById('view-login').hidden && document.getElementById('view-session').hidden",
    )
    .await;
    std::thread::sleep(std::time::Duration::from_millis(300));
    let s = sb.screen(&sid);
    assert!(
        !s.contains("after the revoke"),
        "a revoked cookie typed:\n{s}"
    );
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_from_a_completed_folder_then_killed_after_asking() {
    let Some((chromium, driver)) = browser_or_skip("new_and_kill") else {
        return;
    };
    let sb = Sandbox::new();
    let _first = sb.new_session("first");
    let folder = sb.work.join("newproject");
    std::fs::create_dir_all(folder.join("sub")).expect("a folder");
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;

    // The folder field completes through the daemon (`dirs.complete`).
    b.tap("#new-link").await;
    b.until(
        "the new-session view",
        "return !document.getElementById('view-new').hidden",
    )
    .await;
    b.js(
        "var f = document.getElementById('new-cwd'); f.value = ''; return true",
        vec![],
    )
    .await;
    let typed = format!("{}/newp", sb.work.display());
    b.type_into("#new-cwd", &typed).await;
    let want = format!("{}/", folder.display());
    let sel = serde_json::to_string(&want).unwrap_or_default();
    b.until(
        "the completion",
        &format!(
            "return Array.prototype.some.call(document.querySelectorAll('#completions .btn'), function (e) {{ return e.textContent === {sel}; }})"
        ),
    )
    .await;
    b.tap("#completions .btn").await;
    let field = b
        .js("return document.getElementById('new-cwd').value", vec![])
        .await;
    assert_eq!(field, json!(want), "the completion taken");
    b.tap("#new-btn").await;
    let hash = b
        .until(
            "the new session's view",
            "return location.hash.indexOf('#/s/') === 0 && !document.getElementById('view-session').hidden ? location.hash : ''",
        )
        .await;
    let sid = hash
        .as_str()
        .and_then(|h| h.strip_prefix("#/s/"))
        .map(str::to_string)
        .expect("a session id in the address");
    wait_for(T, "the new session's screen", || {
        let o = sb.cmd(&["screen", &sid]).output().ok()?;
        o.status.success().then_some(())
    });
    let row = b
        .until(
            "the new session in the list, in its folder",
            &format!(
                "var e = document.querySelector('#sessions .item[data-session=\"{sid}\"]'); return e ? e.innerText : ''"
            ),
        )
        .await;
    assert!(
        row.as_str().unwrap_or_default().contains("newproject"),
        "{row}"
    );

    // Kill asks first: the first tap only asks, Cancel keeps it.
    b.tap("#a-kill").await;
    b.until(
        "the question",
        "return !document.getElementById('kill-confirm').hidden",
    )
    .await;
    b.tap("#kill-no").await;
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        sb.cmd(&["screen", &sid])
            .output()
            .is_ok_and(|o| o.status.success()),
        "a cancelled kill kills nothing"
    );
    b.tap("#a-kill").await;
    b.tap("#kill-yes").await;
    wait_for(T, "the session killed", || {
        let o = sb.cmd(&["screen", &sid]).output().ok()?;
        (!o.status.success()).then_some(())
    });
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_origins_page_and_a_rebound_host_get_nothing() {
    let Some((chromium, driver)) = browser_or_skip("foreign") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("target");
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;
    b.until("the list", &item(&sid)).await;

    // A page of another origin on the same site (127.0.0.1, another port):
    // the browser sends the cookie with its requests, the server must
    // refuse them by their Origin. It opens the WebSocket, reads the list,
    // and posts a prompt.
    let w = &web.origin;
    let ws = w.replacen("http://", "ws://", 1);
    let html = format!(
        r#"<!doctype html><script>
window.result = {{ws: "pending", read: "pending", post: "pending"}};
var s = new WebSocket("{ws}/api/ws");
s.onopen = function () {{ result.ws = "open"; }};
s.onmessage = function (e) {{ result.ws = "message " + String(e.data).slice(0, 80); }};
s.onclose = function (e) {{ if (result.ws === "pending") result.ws = "closed " + e.code; }};
fetch("{w}/api/sessions", {{credentials: "include"}})
  .then(function (r) {{ return r.text(); }})
  .then(function (t) {{ result.read = "read " + t.slice(0, 80); }}, function () {{ result.read = "blocked"; }});
fetch("{w}/api/session/{sid}/send", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{text: "from another site"}})}})
  .then(function () {{ result.post = "done"; }}, function () {{ result.post = "error"; }});
</script>"#
    );
    let foreign = foreign_page(html);
    b.client
        .goto(&format!("{foreign}/"))
        .await
        .expect("the foreign page");
    let r = b
        .until(
            "the foreign page's attempts to settle",
            "var r = window.result; return r && r.ws !== 'pending' && r.read !== 'pending' && r.post !== 'pending' ? r : null",
        )
        .await;
    let ws_result = r["ws"].as_str().unwrap_or_default();
    assert!(
        ws_result.starts_with("closed"),
        "the WebSocket upgrade was refused: {r}"
    );
    assert_eq!(
        r["read"], "blocked",
        "the list is not readable cross-origin: {r}"
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    let s = sb.screen(&sid);
    assert!(
        !s.contains("from another site"),
        "a cross-origin post typed:\n{s}"
    );

    // DNS rebinding: a name that resolves to 127.0.0.1 is not this
    // server's name; the token login and the page are refused, no cookie.
    let port = w.rsplit(':').next().unwrap_or_default();
    for path in [format!("/?token={}", web.token()), "/".to_string()] {
        b.client
            .goto(&format!("http://rebind.test:{port}{path}"))
            .await
            .expect("the rebound name");
        let text = b.js("return document.body.innerText", vec![]).await;
        let text = text.as_str().unwrap_or_default();
        assert!(
            text.to_ascii_lowercase().contains("host"),
            "refused for its Host: {text}"
        );
        assert!(!text.contains(&sid), "{text}");
        let cookies = b.client.get_all_cookies().await.expect("cookies");
        assert!(
            cookies.iter().all(|c| c.name() != "ccd_web"),
            "no cookie for the rebound name: {cookies:?}"
        );
    }
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_page_looks_but_cannot_act() {
    let Some((chromium, driver)) = browser_or_skip("read_only") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("looked-at");
    let web = Web::start(&sb, &["--read-only"]);
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;
    b.until("the list", &item(&sid)).await;
    b.client
        .goto(&format!("{}/#/s/{sid}", web.origin))
        .await
        .expect("the session");
    // It looks: the live screen is drawn.
    b.until(
        "the live screen",
        "return document.getElementById('screen').textContent.length > 0",
    )
    .await;
    // It cannot act, and shows it: the server tells the page it is
    // read-only (`read_only` in the list), and the page shows a
    // permission prompt but no button, field or form to act with.
    sb.ok(&["send", &sid, "perm touch looked.txt"]);
    b.until(
        "the prompt shown",
        "var p = document.getElementById('prompt'); return !p.hidden && document.getElementById('p-detail').textContent.indexOf('touch looked.txt') >= 0",
    )
    .await;
    let shown = b
        .js(
            "return Array.prototype.filter.call(document.querySelectorAll('#view-session button, #view-session input, #view-session form'), function (e) { return e.getClientRects().length > 0; }).map(function (e) { return e.id || e.textContent; })",
            vec![],
        )
        .await;
    assert_eq!(shown, json!([]), "action controls shown read-only");
    b.client
        .goto(&format!("{}/#/", web.origin))
        .await
        .expect("the list");
    b.until("the list again", &item(&sid)).await;
    assert_eq!(
        b.js(
            "return document.getElementById('new-link').getClientRects().length",
            vec![]
        )
        .await,
        json!(0),
        "no New session link read-only"
    );
    // Whatever the page shows, the server refuses: a send from the page's
    // own script is 403.
    let r = b
        .client
        .execute_async(
            "var done = arguments[arguments.length - 1]; fetch('/api/session/' + arguments[0] + '/send', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({text: 'typed while read-only'})}).then(function (r) { done(r.status); }, function () { done(0); });",
            vec![json!(sid)],
        )
        .await
        .expect("a fetch from the page");
    assert_eq!(r, json!(403), "a read-only server refuses actions");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let s = sb.screen(&sid);
    assert!(!s.contains("typed while read-only"), "{s}");
    b.close().await;
}

/// A notification's prompt link (`/p#<token>`, made with the state dir's
/// link key as the daemon makes it) on a phone, with no login: the prompt
/// shown (textContent only, under the CSP), one tap approves it, and the
/// link opened again does not show it any more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_link_opens_its_prompt_without_a_login_and_approves_it_once() {
    let Some((chromium, driver)) = browser_or_skip("prompt_link") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("linked");
    let web = Web::start(&sb, &[]);
    sb.ok(&["send", &sid, "perm touch <b>linked</b>.txt"]);
    let prompt = wait_for(T, "the prompt's id", || {
        let v: Value = serde_json::from_str(&sb.ok(&["ls", "--json"])).ok()?;
        v.as_array()?
            .iter()
            .find(|s| s["session_id"] == sid.as_str())?["ccd"]["permission_prompt"]
            .as_str()
            .map(String::from)
    });
    let key = ccd_notify::link::KeyFile::in_dir(&sb.state)
        .load_or_create()
        .unwrap();
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        + 60_000;
    let token = key.mint(&ccd_notify::link::Claims {
        v: 1,
        m: "local".into(),
        s: sid.clone(),
        p: prompt,
        exp,
        n: ccd_notify::link::nonce(),
    });
    let b = Browser::start(&chromium, &driver, Device::Phone).await;
    b.client
        .goto(&format!("{}/p#{token}", web.origin))
        .await
        .expect("opening the link");
    b.js(
        "window.__csp = []; document.addEventListener('securitypolicyviolation', function (e) { window.__csp.push(e.violatedDirective); }); return true",
        vec![],
    )
    .await;
    b.until(
        "the prompt shown",
        "return !document.getElementById('prompt').hidden && document.getElementById('p-detail').textContent.indexOf('touch <b>linked</b>.txt') >= 0",
    )
    .await;
    assert_eq!(
        b.js(
            "return document.querySelectorAll('#p-detail b').length",
            vec![]
        )
        .await,
        json!(0),
        "text, never markup"
    );
    let meta = b
        .js(
            "return document.getElementById('l-meta').textContent",
            vec![],
        )
        .await;
    assert!(
        meta.as_str().unwrap_or_default().contains("linked"),
        "the session's folder: {meta}"
    );
    b.tap("#p-yes").await;
    b.until(
        "approved",
        "return document.getElementById('notice').textContent === 'Approved.'",
    )
    .await;
    wait_screen(&sb, &sid, "echo: perm touch <b>linked</b>.txt");
    assert_eq!(
        b.js("return location.hash", vec![]).await,
        json!(""),
        "the spent token left the address bar"
    );
    assert_eq!(b.js("return window.__csp", vec![]).await, json!([]));
    // Opened again: the prompt is gone, and the page says so.
    b.client
        .goto(&format!("{}/p#{token}", web.origin))
        .await
        .expect("opening the link again");
    b.until(
        "refused",
        "return document.getElementById('notice').textContent.indexOf('answered or went') >= 0",
    )
    .await;
    assert_eq!(
        b.js("return document.getElementById('prompt').hidden", vec![])
            .await,
        json!(true)
    );
    b.close().await;
}

/// The real CLI, both pinned versions: its Bash permission prompt shows on
/// the page and one tap on Approve runs the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_cli_a_permission_prompt_approved_from_the_page_runs_the_command() {
    let Some((chromium, driver)) = browser_or_skip("real_cli") else {
        return;
    };
    for version in real_versions() {
        let Some(claude) = real_claude_or_skip(&version) else {
            continue;
        };
        let mock = MockApi::start();
        let sb = real_sandbox(&mock, &claude, &version);
        let dir = sb.work.join("asked");
        std::fs::create_dir_all(&dir).expect("a folder");
        // 2.1.332's default mode asks nothing; 2.1.1xx asks by default.
        let mut args = vec!["new", "--detach", "--cwd", dir.to_str().unwrap_or_default()];
        if !version.starts_with("2.1.1") {
            args.extend(["--", "--permission-mode", "manual"]);
        }
        let sid = sb.ok(&args).trim().to_string();
        let web = Web::start(&sb, &[]);
        let b = Browser::start(&chromium, &driver, Device::Desktop).await;
        b.login(&web.login_url).await;
        b.client
            .goto(&format!("{}/#/s/{sid}", web.origin))
            .await
            .expect("the session");
        b.until(
            "the live screen",
            "return document.getElementById('screen').textContent.length > 0",
        )
        .await;
        sb.ok(&["send", &sid, "TOOL:echo approved > approved.txt"]);
        let tool = b
            .until(
                &format!("[{version}] the prompt on the page"),
                "var p = document.getElementById('prompt'); return !p.hidden && document.getElementById('p-detail').textContent.indexOf('echo approved > approved.txt') >= 0 ? document.getElementById('p-tool').textContent : ''",
            )
            .await;
        assert_eq!(tool, json!("Bash command"), "[{version}]");
        assert!(
            !dir.join("approved.txt").exists(),
            "[{version}] not before the tap"
        );
        b.tap("#p-yes").await;
        wait_for(T, "approved.txt", || {
            std::fs::read_to_string(dir.join("approved.txt"))
                .ok()
                .filter(|t| t.contains("approved"))
        });
        b.until(
            &format!("[{version}] the prompt gone from the page"),
            "return document.getElementById('prompt').hidden",
        )
        .await;
        b.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_sized_touch_viewport_shows_one_column() {
    let Some((chromium, driver)) = browser_or_skip("phone") else {
        return;
    };
    let sb = Sandbox::new();
    let sid = sb.new_session("phone");
    let _other = sb.new_session("phone2");
    let web = Web::start(&sb, &[]);
    let b = Browser::start(&chromium, &driver, Device::Phone).await;
    b.login(&web.login_url).await;
    b.until("the session in the list", &item(&sid)).await;

    let m = b
        .js(
            r#"
            var items = Array.prototype.slice.call(document.querySelectorAll('#sessions .item'));
            var rects = items.map(function (e) { return e.getBoundingClientRect(); });
            return {
              w: window.innerWidth, h: window.innerHeight,
              touch: navigator.maxTouchPoints > 0 && ('ontouchstart' in window),
              scroll: document.documentElement.scrollWidth,
              lefts: rects.map(function (r) { return Math.round(r.left); }),
              widths: rects.map(function (r) { return Math.round(r.width); }),
              tops: rects.map(function (r) { return Math.round(r.top); }),
              heights: rects.map(function (r) { return Math.round(r.height); }),
              newh: document.getElementById('new-link').getBoundingClientRect().height
            };"#,
            vec![],
        )
        .await;
    assert_eq!(m["w"], 390, "{m}");
    assert_eq!(m["h"], 844, "{m}");
    assert_eq!(m["touch"], true, "touch emulation: {m}");
    assert!(
        m["scroll"].as_u64().unwrap_or(9999) <= 390,
        "no sideways scroll: {m}"
    );
    let lefts = m["lefts"].as_array().cloned().unwrap_or_default();
    assert!(lefts.len() >= 2, "{m}");
    assert!(lefts.windows(2).all(|w| w[0] == w[1]), "one column: {m}");
    let tops: Vec<i64> = m["tops"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    assert!(tops.windows(2).all(|w| w[0] < w[1]), "stacked: {m}");
    for w in m["widths"].as_array().cloned().unwrap_or_default() {
        assert!(w.as_i64().unwrap_or(0) >= 340, "full width: {m}");
    }
    for h in m["heights"].as_array().cloned().unwrap_or_default() {
        assert!(h.as_i64().unwrap_or(0) >= 44, "a touch target: {m}");
    }
    assert!(m["newh"].as_f64().unwrap_or(0.0) >= 44.0, "{m}");

    // A session is one screen too: its screen fits the width, every
    // button is a touch target.
    b.tap(&format!("#sessions .item[data-session=\"{sid}\"]"))
        .await;
    b.until(
        "the live screen",
        "return document.getElementById('screen').children.length > 0",
    )
    .await;
    let s = b
        .js(
            r#"
            var btns = Array.prototype.slice.call(document.querySelectorAll('#view-session .btn'))
              .filter(function (e) { return e.offsetParent !== null; });
            var wrap = document.getElementById('screen-wrap');
            return {
              scroll: document.documentElement.scrollWidth,
              small: btns.filter(function (e) { var r = e.getBoundingClientRect(); return r.height < 44 || r.width < 44; })
                         .map(function (e) { return e.textContent; }),
              count: btns.length,
              screen: document.getElementById('screen').scrollWidth,
              wrap: wrap.clientWidth
            };"#,
            vec![],
        )
        .await;
    assert!(
        s["scroll"].as_u64().unwrap_or(9999) <= 390,
        "no sideways scroll: {s}"
    );
    assert!(s["count"].as_u64().unwrap_or(0) >= 10, "{s}");
    assert_eq!(s["small"], json!([]), "buttons under 44px: {s}");
    assert!(
        s["screen"].as_u64().unwrap_or(9999) <= s["wrap"].as_u64().unwrap_or(0) + 1,
        "the session's columns fit the width: {s}"
    );
    b.close().await;
}

/// `ss`'s byte counters (`bytes_sent`, `bytes_received`) summed over the
/// established TCP connections whose local port is `port` (the server's
/// side: what it sent is what the page received).
fn tcp_bytes(port: u16) -> (u64, u64) {
    let out = std::process::Command::new("ss")
        .args([
            "-tinH",
            "state",
            "established",
            &format!("( sport = :{port} )"),
        ])
        .output()
        .expect("running ss (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> u64 {
        text.split_whitespace()
            .filter_map(|w| w.strip_prefix(name))
            .filter_map(|v| v.parse::<u64>().ok())
            .sum()
    };
    (field("bytes_sent:"), field("bytes_received:"))
}

/// The page-load benchmark (issue 52's figures), run by hand:
/// `cargo test -p ccd-web --release --test browser bench -- --ignored --nocapture`.
/// 1,000 sessions listed (transcripts as Claude Code writes them, plus one
/// held session): the time from opening `/` to the 1,000th list item in the
/// DOM, on loopback; the bytes an idle open page moves in a minute (TCP
/// counters of the server's side, `ss`); the delay from a key typed into
/// the held session (`session.input`) to its echo drawn on the page (an
/// upper bound of PTY output → WebSocket frame: it includes the input's
/// way in), p50 over 50 keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by hand with --ignored --nocapture"]
async fn bench_page_load_idle_bytes_and_screen_latency() {
    let Some((chromium, driver)) = browser_or_skip("bench") else {
        return;
    };
    let sb = Sandbox::new();
    for n in 0..1000u64 {
        let dir = sb.work.join(format!("p{}", n % 50));
        std::fs::create_dir_all(&dir).expect("a folder");
        ccd_testkit::gen::transcript(
            &sb.config,
            &ccd_testkit::gen::sid(n),
            dir.to_str().expect("UTF-8"),
            2,
        );
    }
    let sid = sb.new_session("bench");
    let web = Web::start(&sb, &[]);
    let port: u16 = web
        .origin
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the port");
    let b = Browser::start(&chromium, &driver, Device::Desktop).await;
    b.login(&web.login_url).await;
    b.until(
        "1,000 sessions listed",
        "return document.querySelectorAll('#sessions .item').length >= 1001",
    )
    .await;

    // Page load: a fresh navigation (the cookie kept) to 1,001 items drawn.
    let mut loads = Vec::new();
    for _ in 0..5 {
        b.client.goto("about:blank").await.expect("blank");
        let t0 = std::time::Instant::now();
        b.client
            .goto(&format!("{}/", web.origin))
            .await
            .expect("the page");
        b.until(
            "the list",
            "return document.querySelectorAll('#sessions .item').length >= 1001",
        )
        .await;
        loads.push(t0.elapsed());
    }
    loads.sort();
    println!(
        "page load to 1,001 sessions listed: p50 {:?} (min {:?}, max {:?}) over {}",
        loads[loads.len() / 2],
        loads[0],
        loads[loads.len() - 1],
        loads.len()
    );

    // Idle: the list open, nothing changing, for a minute.
    b.until(
        "the socket open",
        "return document.getElementById('conn').getAttribute('data-state') === 'open'",
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let (s0, r0) = tcp_bytes(port);
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    let (s1, r1) = tcp_bytes(port);
    assert!(s1 > 0, "ss saw the page's connections (port {port})");
    println!(
        "idle open page, 60 s: {} bytes to the page, {} bytes from it (the connections' totals: {s1} sent, {r1} received)",
        s1.saturating_sub(s0),
        r1.saturating_sub(r0)
    );

    // Screen latency: a key typed, its echo on the page.
    b.client
        .goto(&format!("{}/#/s/{sid}", web.origin))
        .await
        .expect("the session");
    b.until(
        "the live screen",
        "return document.getElementById('screen').textContent.length > 0",
    )
    .await;
    let mut lat = Vec::new();
    let mut c = ccd_client::Client::connect(&ccd_client::SocketDir::new(&sb.sock), "bench/0")
        .expect("the daemon");
    let mut typed = String::new();
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    };
    for i in 0..50u32 {
        let ch = char::from(b'a' + u8::try_from(i % 26).unwrap_or(0));
        typed.push(ch);
        // The page notes when the text first shows (a MutationObserver,
        // the page's own clock: the machine's), so no poll adds to it.
        b.js(
            "window.__want = arguments[0]; window.__seen = 0; var box = document.getElementById('screen');\
             if (!window.__obs) { window.__obs = new MutationObserver(function () {\
               if (!window.__seen && box.textContent.indexOf(window.__want) >= 0) window.__seen = Date.now(); });\
               window.__obs.observe(box, {childList: true, subtree: true, characterData: true}); }\
             return true;",
            vec![json!(typed)],
        )
        .await;
        let t0 = now_ms();
        c.call_value(
            "session.input",
            json!({"session": sid, "data": ccd_protocol::b64::encode(ch.to_string().as_bytes())}),
        )
        .expect("session.input");
        let seen = b.until("the key's echo", "return window.__seen").await;
        let seen = seen.as_i64().unwrap_or(t0);
        lat.push(std::time::Duration::from_millis(
            u64::try_from(seen - t0).unwrap_or(0),
        ));
    }
    lat.sort();
    println!(
        "key typed → echo drawn on the page: p50 {:?}, p90 {:?} over {} (ms clock)",
        lat[lat.len() / 2],
        lat[lat.len() * 9 / 10],
        lat.len()
    );
    b.close().await;
}
