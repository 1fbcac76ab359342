// ccd web: the page. No framework, no third-party code, nothing from
// elsewhere: it talks to its own origin only (/api/* and the WebSocket
// /api/ws), under a CSP that allows scripts and styles from 'self' only.
//
// Every string the server sends is put in the page with textContent (never
// innerHTML); colours go through the CSSOM (element.style), which the CSP
// allows, not through style attributes in markup.
//
// Views (hash routing): #/ the list, #/s/<sid> a session, #/new a new
// session. The list comes from GET /api/sessions once, then from the
// WebSocket's {"t":"sessions"} messages; a session view sends
// {"t":"watch","session":sid} and draws {"t":"screen"} (held sessions) or
// {"t":"tail"} (the others). The WebSocket reconnects with backoff.
//
// The search box above the list asks POST /api/search (every machine the
// list shows); a hit is a link to its session's view, as a list row is:
// the view then offers what fits (the live screen and typing for a held
// session, the tail and a fork for one running elsewhere, a resume for a
// dead one). Under the box: which sessions (all, live, dead), whose words
// (anyone, the user's, Claude's, tools') and a regex toggle, sent along
// (the server checks them); a changed choice searches again. A refused
// search (a bad regex) shows the server's words as the status. A
// snippet's text goes in with textContent, its match in a <mark>.
"use strict";

(function () {
  var $ = function (id) { return document.getElementById(id); };

  var state = {
    machines: [],
    sessions: [],
    readOnly: false,
    current: null, // the session id shown, or null
    watched: null, // the session id the socket watches
    screen: null, // {session, cols, rows, cursor, lines: [runs]}
    socket: null,
    backoff: 500,
    reconnectTimer: null,
    authed: true,
    usage: null, // every listed session's tokens and dollars, added
    hits: [], // the last search's hits
    searchSeq: 0,
  };

  // ---- helpers ---------------------------------------------------------

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function basename(path) {
    if (!path) return "";
    var p = String(path).replace(/\/+$/, "");
    var i = p.lastIndexOf("/");
    return i >= 0 ? p.slice(i + 1) || "/" : p;
  }

  function fmtBytes(n) {
    if (typeof n !== "number" || !isFinite(n)) return null;
    var units = ["B", "KB", "MB", "GB", "TB"];
    var u = 0;
    while (n >= 1024 && u < units.length - 1) { n /= 1024; u++; }
    return (u === 0 ? n.toFixed(0) : n.toFixed(n < 10 ? 1 : 0)) + " " + units[u];
  }

  function findSession(sid) {
    for (var i = 0; i < state.sessions.length; i++) {
      if (state.sessions[i].id === sid) return state.sessions[i];
    }
    // A search hit the list does not show (past its bound): what the hit
    // says of it, so the view acts on its own machine.
    for (var j = 0; j < state.hits.length; j++) {
      var h = state.hits[j];
      if (h.session === sid) {
        return { id: sid, machine: h.machine, title: h.title, cwd: h.folder, state: h.state, held: false, needs: null, prompt: null, usage: null };
      }
    }
    return null;
  }

  // Tokens as `ccd ls` writes them: 950, 12k, 1.2M, 34M, 1.2G.
  function fmtTokens(n) {
    if (typeof n !== "number" || !isFinite(n) || n < 0) return null;
    if (n < 1e3) return String(Math.floor(n));
    if (n < 1e6) return Math.floor(n / 1e3) + "k";
    if (n < 1e7) return (n / 1e6).toFixed(1) + "M";
    if (n < 1e9) return Math.floor(n / 1e6) + "M";
    return (n / 1e9).toFixed(1) + "G";
  }

  // Dollars as `ccd ls` writes them ($0.42, $1234), "+" after them when a
  // model has no price (the figure is a lower bound).
  function fmtUsd(usd, lowerBound) {
    if (typeof usd !== "number" || !isFinite(usd)) usd = 0;
    return "$" + (usd >= 1000 ? usd.toFixed(0) : usd.toFixed(2)) + (lowerBound ? "+" : "");
  }

  // A session's (or the total's) tokens and dollars, or null.
  function usageText(u) {
    if (!u || typeof u.tokens !== "number") return null;
    return fmtTokens(u.tokens) + " tokens · " + fmtUsd(u.cost_usd, !!u.unpriced);
  }

  function needsRank(s) { return s.needs ? 0 : 1; }

  function sorted(list) {
    // The server sorts (needs-you first); keep its order otherwise.
    return list
      .map(function (s, i) { return { s: s, i: i }; })
      .sort(function (a, b) { return needsRank(a.s) - needsRank(b.s) || a.i - b.i; })
      .map(function (x) { return x.s; });
  }

  function showNotice(node, text) {
    if (!text) { node.hidden = true; node.textContent = ""; return; }
    node.textContent = text;
    node.hidden = false;
  }

  // POST a JSON body to the page's own origin. Resolves to
  // {status, body} (body parsed, or {} when it is not JSON).
  function post(path, body) {
    return fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body || {}),
    }).then(readReply, netError);
  }

  function get(path) {
    return fetch(path, { credentials: "same-origin" }).then(readReply, netError);
  }

  function readReply(res) {
    return res.text().then(function (t) {
      var body = {};
      try { body = t ? JSON.parse(t) : {}; } catch (e) { body = { error: t }; }
      if (res.status === 401) loggedOut();
      return { status: res.status, body: body || {} };
    });
  }

  function netError(e) {
    return { status: 0, body: { error: "network error: " + (e && e.message ? e.message : e) } };
  }

  function errorText(r) {
    var b = r.body || {};
    var msg = typeof b.error === "string" ? b.error : (b.error && b.error.message) || "";
    if (!msg) msg = "request failed (" + r.status + ")";
    return msg;
  }

  function loggedOut() {
    state.authed = false;
    if (state.socket) { try { state.socket.close(); } catch (e) { /* closing */ } }
    route();
  }

  // ---- the list --------------------------------------------------------

  function applySessions(msg) {
    state.machines = Array.isArray(msg.machines) ? msg.machines : [];
    state.usage = msg.usage || null;
    state.sessions = sorted(Array.isArray(msg.sessions) ? msg.sessions : []);
    if (typeof msg.read_only === "boolean") state.readOnly = msg.read_only;
    renderList();
    if (state.current) renderSessionInfo();
  }

  function renderList() {
    var machines = $("machines");
    clear(machines);
    state.machines.forEach(function (m) {
      if (m && m.error) {
        machines.appendChild(el("div", "machine-error", (m.name || "?") + ": " + m.error));
      }
    });
    var ul = $("sessions");
    clear(ul);
    state.sessions.forEach(function (s) {
      var li = el("li");
      var a = el("a", "item" + (s.needs ? " needs" : ""));
      a.href = "#/s/" + encodeURIComponent(s.id);
      a.setAttribute("data-session", s.id);
      var top = el("div", "top");
      top.appendChild(el("span", "folder", (s.machine || "local") + " · " + basename(s.cwd)));
      if (s.needs) top.appendChild(el("span", "badge", s.needs));
      a.appendChild(top);
      a.appendChild(el("div", "title", s.title || s.id));
      var bottom = el("div", "bottom");
      bottom.appendChild(el("span", "state state-" + String(s.state || "").replace(/[^a-z_-]/gi, ""), s.state || ""));
      if (s.held) bottom.appendChild(el("span", "held", "held"));
      if (typeof s.context_pct === "number") bottom.appendChild(el("span", "ctx", Math.round(s.context_pct) + "% context"));
      var mem = fmtBytes(s.mem_bytes);
      if (mem) bottom.appendChild(el("span", "mem", mem));
      var used = usageText(s.usage);
      if (used) bottom.appendChild(el("span", "usage", used));
      a.appendChild(bottom);
      li.appendChild(a);
      ul.appendChild(li);
    });
    var total = usageText(state.usage);
    $("usage-total").textContent = total ? "Total: " + total : "";
    $("usage-total").hidden = !total;
    $("empty").hidden = state.sessions.length > 0;
    $("new-link").hidden = state.readOnly;
  }

  function loadList() {
    return get("/api/sessions").then(function (r) {
      if (r.status === 200) { state.authed = true; applySessions(r.body); connect(); }
    });
  }

  // ---- the search ------------------------------------------------------

  var searchTimer = null;

  function when(ts) {
    if (typeof ts !== "string" || !ts) return "";
    // "2026-11-01T10:00:00Z" -> "2026-11-01 10:00"
    return ts.slice(0, 16).replace("T", " ");
  }

  function clearSearch() {
    state.searchSeq++;
    state.hits = [];
    clear($("hits"));
    clear($("search-machines"));
    $("search-status").textContent = "";
    $("search-results").hidden = true;
    $("search-clear").hidden = !$("search-q").value;
  }

  function search() {
    var q = $("search-q").value.trim();
    $("search-clear").hidden = !$("search-q").value;
    if (!q) { clearSearch(); return; }
    var seq = ++state.searchSeq;
    $("search-results").hidden = false;
    $("search-status").textContent = "Searching…";
    var ask = { query: q };
    var scope = $("search-scope").value;
    if (scope && scope !== "all") ask.scope = scope;
    var role = $("search-role").value;
    if (role) ask.roles = [role];
    if ($("search-regex").checked) ask.regex = true;
    post("/api/search", ask).then(function (r) {
      if (seq !== state.searchSeq) return; // a newer search is under way
      if (r.status !== 200) {
        state.hits = [];
        clear($("hits"));
        clear($("search-machines"));
        $("search-status").textContent = errorText(r);
        return;
      }
      renderHits(r.body || {});
    });
  }

  function renderHits(body) {
    var hits = Array.isArray(body.hits) ? body.hits : [];
    state.hits = hits;
    var machines = $("search-machines");
    clear(machines);
    (Array.isArray(body.machines) ? body.machines : []).forEach(function (m) {
      if (m && m.error) machines.appendChild(el("div", "machine-error", (m.name || "?") + ": " + m.error));
    });
    $("search-status").textContent = hits.length === 0 ? "No conversation says that."
      : hits.length + (body.truncated ? "+" : "") + (hits.length === 1 ? " conversation" : " conversations");
    var ul = $("hits");
    clear(ul);
    hits.forEach(function (h) {
      if (!h || typeof h.session !== "string") return;
      var li = el("li");
      var a = el("a", "item hit");
      a.href = "#/s/" + encodeURIComponent(h.session);
      a.setAttribute("data-session", h.session);
      var top = el("div", "top");
      top.appendChild(el("span", "folder", (h.machine || "local") + " · " + basename(h.folder)));
      top.appendChild(el("span", "when", when(h.timestamp)));
      a.appendChild(top);
      a.appendChild(el("div", "title", h.title || h.session));
      var snip = el("div", "snippet");
      var sn = h.snippet || {};
      snip.appendChild(document.createTextNode(sn.before || ""));
      snip.appendChild(el("mark", null, sn.matched || ""));
      snip.appendChild(document.createTextNode(sn.after || ""));
      a.appendChild(snip);
      var bottom = el("div", "bottom");
      bottom.appendChild(el("span", "state state-" + String(h.state || "").replace(/[^a-z_-]/gi, ""), h.state || ""));
      var listed = findSession(h.session);
      if (listed && listed.held) bottom.appendChild(el("span", "held", "held"));
      if (h.role) bottom.appendChild(el("span", "role", h.role));
      if (typeof h.matches === "number" && h.matches > 1) bottom.appendChild(el("span", "matches", h.matches + " messages"));
      a.appendChild(bottom);
      li.appendChild(a);
      ul.appendChild(li);
    });
  }

  function bindSearch() {
    $("search-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearTimeout(searchTimer);
      search();
    });
    $("search-q").addEventListener("input", function () {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(search, 300);
    });
    ["search-scope", "search-role", "search-regex"].forEach(function (id) {
      $(id).addEventListener("change", function () {
        clearTimeout(searchTimer);
        if ($("search-q").value.trim()) search();
      });
    });
    $("search-clear").addEventListener("click", function () {
      $("search-q").value = "";
      clearSearch();
      $("search-q").focus();
    });
  }

  // ---- a session -------------------------------------------------------

  var shownPromptId = null;

  function renderSessionInfo() {
    var s = findSession(state.current);
    var held = !!(s && s.held);
    $("s-title").textContent = s ? (s.title || s.id) : state.current;
    var meta = [];
    if (s) {
      meta.push((s.machine || "local") + " · " + (s.cwd || ""));
      if (s.state) meta.push(s.state);
      if (typeof s.context_pct === "number") meta.push(Math.round(s.context_pct) + "% context");
      var mem = fmtBytes(s.mem_bytes);
      if (mem) meta.push(mem);
      var used = usageText(s.usage);
      if (used) meta.push(used);
    }
    $("s-meta").textContent = meta.join(" · ");

    var p = s && s.prompt;
    $("prompt").hidden = !p;
    if (p) {
      if (p.id !== shownPromptId) {
        $("p-message").value = "";
      }
      shownPromptId = p.id;
      $("prompt").setAttribute("data-prompt", p.id);
      $("p-tool").textContent = p.tool || "";
      $("p-detail").textContent = p.detail || "";
      var ul = $("p-options");
      clear(ul);
      var hasAlways = false;
      (p.options || []).forEach(function (o) {
        ul.appendChild(el("li", null, o.label || o.key));
        if (o.key === "always") hasAlways = true;
      });
      $("p-always").hidden = !hasAlways && (p.options || []).length > 0;
    } else {
      shownPromptId = null;
      $("prompt").removeAttribute("data-prompt");
    }

    // Dead or archived: a resume brings it back (in its own folder).
    var dead = !!(s && (s.state === "dead" || s.state === "archived"));
    var ro = state.readOnly;
    $("attach").hidden = ro || !held;
    $("send-form").hidden = ro || dead;
    $("a-interrupt").hidden = ro || !held;
    $("a-kill").hidden = ro || dead;
    $("a-resume").hidden = ro || !dead;
    $("a-fork").hidden = ro;
    ["p-yes", "p-always", "p-no", "p-message"].forEach(function (id) { $(id).disabled = ro; });
    // A read-only page shows the prompt but no way to answer it.
    ["p-yes", "p-no", "p-message"].forEach(function (id) { $(id).hidden = ro; });
    if (ro) $("p-always").hidden = true;
  }

  function openSession(sid) {
    if (state.current !== sid) {
      state.current = sid;
      state.screen = null;
      clear($("screen"));
      clear($("tail"));
      $("tail").hidden = true;
      $("screen-wrap").hidden = false;
      showNotice($("notice"), null);
      $("kill-confirm").hidden = true;
      $("send-text").value = "";
      $("type-text").value = "";
    }
    renderSessionInfo();
    watch();
  }

  function watch() {
    var ws = state.socket;
    if (!ws || ws.readyState !== 1) return;
    if (state.current && state.watched !== state.current) {
      var s = findSession(state.current);
      ws.send(JSON.stringify({ t: "watch", session: state.current, machine: s ? s.machine : undefined }));
      state.watched = state.current;
    } else if (!state.current && state.watched) {
      ws.send(JSON.stringify({ t: "unwatch" }));
      state.watched = null;
    }
  }

  // -- the screen: rows of runs, the cursor drawn as a cell.

  function cellCount(run) {
    var n = Array.from(run.s).length;
    return run.w ? 2 * n : n;
  }

  function applyRun(span, run) {
    var cls = [];
    if (run.b) cls.push("b");
    if (run.i) cls.push("i");
    if (run.u) cls.push("u");
    if (run.d) cls.push("d");
    if (run.w) cls.push("w");
    if (cls.length) span.className = cls.join(" ");
    var fg = run.fg, bg = run.bg;
    if (run.r) {
      fg = run.bg || "var(--sbg)";
      bg = run.fg || "var(--sfg)";
    }
    if (fg) span.style.color = fg;
    if (bg) span.style.backgroundColor = bg;
  }

  function drawRow(i) {
    var sc = state.screen;
    var box = $("screen");
    var rowEl = box.children[i];
    if (!rowEl) return;
    clear(rowEl);
    var runs = sc.lines[i] || [];
    var cur = sc.cursor && sc.cursor.visible && sc.cursor.row === i ? sc.cursor.col : -1;
    var col = 0;
    var drewCursor = false;
    runs.forEach(function (run) {
      var n = cellCount(run);
      if (cur >= col && cur < col + n && !drewCursor) {
        // Split the run around the cursor's cell.
        var chars = Array.from(run.s);
        var per = run.w ? 2 : 1;
        var at = Math.floor((cur - col) / per);
        var parts = [chars.slice(0, at).join(""), chars[at], chars.slice(at + 1).join("")];
        parts.forEach(function (text, k) {
          if (!text) return;
          var sp = el("span", null, text);
          applyRun(sp, run);
          if (k === 1) sp.classList.add("cur");
          rowEl.appendChild(sp);
        });
        drewCursor = true;
      } else {
        var sp = el("span", null, run.s);
        applyRun(sp, run);
        rowEl.appendChild(sp);
      }
      col += n;
    });
    if (cur >= col && !drewCursor) {
      if (cur > col) rowEl.appendChild(el("span", null, " ".repeat(cur - col)));
      rowEl.appendChild(el("span", "cur", " "));
    }
  }

  function applyScreen(msg) {
    if (msg.session !== state.current) return;
    var box = $("screen");
    var sc = state.screen;
    var resized = !sc || sc.cols !== msg.cols || sc.rows !== msg.rows;
    if (resized) {
      sc = state.screen = { session: msg.session, cols: msg.cols, rows: msg.rows, cursor: null, lines: [] };
      clear(box);
      for (var i = 0; i < msg.rows; i++) {
        sc.lines.push([]);
        box.appendChild(el("div", "r"));
      }
      fitScreen();
    }
    $("screen-wrap").hidden = false;
    $("tail").hidden = true;
    var dirty = {};
    var oldCursor = sc.cursor;
    if (msg.full) {
      // Every row is in the message; a row left out is blank.
      for (var j = 0; j < sc.rows; j++) { sc.lines[j] = []; dirty[j] = true; }
    }
    Object.keys(msg.lines || {}).forEach(function (k) {
      var r = parseInt(k, 10);
      if (r >= 0 && r < sc.rows) {
        sc.lines[r] = Array.isArray(msg.lines[k]) ? msg.lines[k] : [];
        dirty[r] = true;
      }
    });
    sc.cursor = msg.cursor || null;
    if (oldCursor) dirty[oldCursor.row] = true;
    if (sc.cursor) dirty[sc.cursor.row] = true;
    Object.keys(dirty).forEach(function (r) { drawRow(parseInt(r, 10)); });
  }

  // Scale the font so the session's columns fit the screen's width.
  var charRatio = null;
  function fitScreen() {
    var sc = state.screen;
    if (!sc || !sc.cols) return;
    var box = $("screen");
    if (charRatio === null) {
      var probe = el("span", null, "MMMMMMMMMM");
      probe.style.fontSize = "100px";
      box.appendChild(probe);
      var w = probe.getBoundingClientRect().width;
      box.removeChild(probe);
      charRatio = w > 0 ? w / 1000 : 0.6;
    }
    var width = $("screen-wrap").clientWidth - 6;
    if (width <= 0) return;
    var size = Math.floor((width / (sc.cols * charRatio)) * 100) / 100;
    box.style.fontSize = Math.max(3, Math.min(size, 16)) + "px";
  }

  function applyTail(msg) {
    if (msg.session !== state.current) return;
    var ul = $("tail");
    clear(ul);
    (msg.items || []).forEach(function (it) {
      var li = el("li");
      li.appendChild(el("span", "kind", (it.kind || "") + (it.timestamp ? " · " + it.timestamp : "")));
      li.appendChild(document.createTextNode(it.text || ""));
      ul.appendChild(li);
    });
    ul.hidden = false;
    if (!state.screen) $("screen-wrap").hidden = true;
  }

  // -- actions

  // A session's routes name its machine (/api/m/<machine>/session/<sid>).
  function sessionPath(sid) {
    var s = findSession(sid);
    var m = s && s.machine ? "/api/m/" + encodeURIComponent(s.machine) : "/api";
    return m + "/session/" + encodeURIComponent(sid);
  }

  function act(path, body, okText) {
    var sid = state.current;
    return post(sessionPath(sid) + "/" + path, body).then(function (r) {
      if (r.status >= 200 && r.status < 300 && !(r.body && r.body.error)) {
        showNotice($("notice"), okText || null);
        return true;
      }
      showNotice($("notice"), errorText(r));
      return false;
    });
  }

  function respond(choice) {
    var s = findSession(state.current);
    var pid = $("prompt").getAttribute("data-prompt") || (s && s.prompt && s.prompt.id);
    if (!pid) return;
    var body = { prompt_id: pid, choice: choice };
    var msg = $("p-message").value;
    if (choice === "no" && msg) body.message = msg;
    var sid = state.current;
    ["p-yes", "p-always", "p-no"].forEach(function (id) { $(id).disabled = true; });
    post(sessionPath(sid) + "/respond", body).then(function (r) {
      ["p-yes", "p-always", "p-no"].forEach(function (id) { $(id).disabled = state.readOnly; });
      if (r.status === 409) {
        showNotice($("notice"), "This prompt was answered or changed: " + errorText(r));
        // Show the prompt the session shows now.
        return get("/api/sessions").then(function (l) {
          if (l.status === 200) applySessions(l.body);
        });
      }
      if (r.status >= 200 && r.status < 300) {
        showNotice($("notice"), choice === "no" ? "Denied." : "Approved.");
        $("p-message").value = "";
        var cur = findSession(sid);
        if (cur && cur.prompt && cur.prompt.id === pid) {
          cur.prompt = null;
          cur.needs = null;
          renderSessionInfo();
        }
      } else {
        showNotice($("notice"), errorText(r));
      }
    });
  }

  function bindSessionActions() {
    $("p-yes").addEventListener("click", function () { respond("yes"); });
    $("p-always").addEventListener("click", function () { respond("always"); });
    $("p-no").addEventListener("click", function () { respond("no"); });

    $("send-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var text = $("send-text").value;
      if (!text) return;
      act("send", { text: text }, "Sent.").then(function (ok) { if (ok) $("send-text").value = ""; });
    });
    $("type-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var text = $("type-text").value;
      if (!text) return;
      act("keys", { text: text }).then(function (ok) { if (ok) $("type-text").value = ""; });
    });
    $("keys").addEventListener("click", function (ev) {
      var b = ev.target.closest ? ev.target.closest("[data-key]") : null;
      if (!b) return;
      act("keys", { keys: [b.getAttribute("data-key")] });
    });
    $("a-interrupt").addEventListener("click", function () { act("interrupt", {}, "Interrupted."); });
    $("a-fork").addEventListener("click", function () {
      act("fork", {}).then(function () { /* the list shows the fork */ });
    });
    $("a-resume").addEventListener("click", function () { act("resume", {}, "Resuming."); });
    $("a-kill").addEventListener("click", function () { $("kill-confirm").hidden = false; });
    $("kill-no").addEventListener("click", function () { $("kill-confirm").hidden = true; });
    $("kill-yes").addEventListener("click", function () {
      $("kill-confirm").hidden = true;
      act("kill", {}, "Killed.");
    });
  }

  // ---- a new session ---------------------------------------------------

  var completeTimer = null;
  var completeSeq = 0;

  function complete() {
    var prefix = $("new-cwd").value;
    var seq = ++completeSeq;
    get("/api/complete?prefix=" + encodeURIComponent(prefix)).then(function (r) {
      if (seq !== completeSeq) return;
      var ul = $("completions");
      clear(ul);
      // dirs.complete: several matches are `choices` (full paths, each
      // ending in /); one is `input` itself, completed.
      var b = r.body || {};
      var list = Array.isArray(b.choices) ? b.choices.slice() : [];
      if (!list.length && typeof b.input === "string" && b.input !== prefix && /\/$/.test(b.input)) {
        list.push(b.input);
      }
      list.slice(0, 50).forEach(function (path) {
        if (typeof path !== "string" || !path) return;
        var li = el("li");
        var btn = el("button", "btn", path);
        btn.type = "button";
        btn.addEventListener("click", function () {
          $("new-cwd").value = path;
          $("new-cwd").focus();
          complete();
        });
        li.appendChild(btn);
        ul.appendChild(li);
      });
    });
  }

  function bindNew() {
    $("new-cwd").addEventListener("input", function () {
      clearTimeout(completeTimer);
      completeTimer = setTimeout(complete, 150);
    });
    $("new-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var cwd = $("new-cwd").value.trim();
      if (!cwd) return;
      post("/api/new", { cwd: cwd }).then(function (r) {
        if (r.status >= 200 && r.status < 300 && !(r.body && r.body.error)) {
          showNotice($("new-notice"), null);
          $("new-cwd").value = "";
          var sid = r.body.session || r.body.id;
          location.hash = sid ? "#/s/" + encodeURIComponent(sid) : "#/";
        } else {
          showNotice($("new-notice"), errorText(r));
        }
      });
    });
  }

  // ---- the WebSocket ---------------------------------------------------

  function setConn(s) {
    var c = $("conn");
    c.setAttribute("data-state", s);
    c.textContent = s === "open" ? "live" : s === "closed" ? "reconnecting" : "connecting";
  }

  function connect() {
    if (!state.authed) return;
    if (state.socket && state.socket.readyState <= 1) return;
    clearTimeout(state.reconnectTimer);
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/ws";
    var ws;
    try { ws = new WebSocket(url); } catch (e) { scheduleReconnect(); return; }
    state.socket = ws;
    state.watched = null;
    setConn("connecting");
    ws.onopen = function () {
      state.backoff = 500;
      setConn("open");
      state.screen = null; // a fresh watch starts with a full frame
      watch();
    };
    ws.onmessage = function (ev) {
      var msg;
      try { msg = JSON.parse(ev.data); } catch (e) { return; }
      if (!msg || typeof msg !== "object") return;
      switch (msg.t) {
        case "sessions": applySessions(msg); break;
        case "screen": applyScreen(msg); break;
        case "tail": applyTail(msg); break;
        case "error": if (state.current) showNotice($("notice"), String(msg.message || "error")); break;
        default: break;
      }
    };
    ws.onclose = function () {
      if (state.socket === ws) state.socket = null;
      state.watched = null;
      setConn("closed");
      scheduleReconnect();
    };
    ws.onerror = function () { /* onclose follows */ };
  }

  function scheduleReconnect() {
    if (!state.authed) return;
    clearTimeout(state.reconnectTimer);
    var wait = state.backoff;
    state.backoff = Math.min(state.backoff * 2, 30000);
    state.reconnectTimer = setTimeout(function () {
      // A dropped socket may mean the cookie went (revoked): ask first.
      get("/api/sessions").then(function (r) {
        if (r.status === 200) { applySessions(r.body); connect(); }
        else if (r.status !== 401) scheduleReconnect();
      });
    }, wait);
  }

  // ---- routing ---------------------------------------------------------

  function show(view) {
    ["login", "list", "session", "new"].forEach(function (v) {
      $("view-" + v).hidden = v !== view;
    });
  }

  function route() {
    if (!state.authed) {
      state.current = null;
      show("login");
      setConn("closed");
      return;
    }
    var h = location.hash || "#/";
    var m = /^#\/s\/(.+)$/.exec(h);
    if (m) {
      var sid;
      try { sid = decodeURIComponent(m[1]); } catch (e) { sid = m[1]; }
      show("session");
      openSession(sid);
      return;
    }
    state.current = null;
    state.screen = null;
    watch();
    if (h === "#/new" && !state.readOnly) {
      show("new");
      if (!$("new-cwd").value) $("new-cwd").value = "~/";
      complete();
      return;
    }
    show("list");
  }

  document.addEventListener("DOMContentLoaded", function () {
    bindSessionActions();
    bindNew();
    bindSearch();
    window.addEventListener("hashchange", route);
    window.addEventListener("resize", fitScreen);
    route();
    loadList().then(route);
  });
})();
