// A notification's prompt link (/p#<token>): shows the one prompt the
// token names and answers it once (crate::link on the server). Every text
// from the server goes in through textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const token = location.hash.slice(1);
  let busy = false;

  function say(text) {
    const n = $("notice");
    n.textContent = text;
    n.hidden = false;
  }

  async function post(path, body) {
    let r;
    try {
      r = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        credentials: "same-origin",
        cache: "no-store",
      });
    } catch (e) {
      return { status: 0, body: { error: "ccd web cannot be reached" } };
    }
    let j = {};
    try {
      j = await r.json();
    } catch (e) {
      j = {};
    }
    return { status: r.status, body: j };
  }

  function refused(r) {
    const why = typeof r.body.error === "string" ? r.body.error : "refused (" + r.status + ")";
    say(why);
  }

  function show(v) {
    const sid = typeof v.session === "string" ? v.session : "";
    $("l-title").textContent = v.title || (v.cwd ? v.cwd.split("/").pop() : sid.slice(0, 8));
    $("l-meta").textContent = [v.machine, v.cwd].filter(Boolean).join(" · ");
    $("p-tool").textContent = v.prompt.tool || "";
    $("p-detail").textContent = v.prompt.detail || "";
    const ul = $("p-options");
    ul.textContent = "";
    for (const o of v.prompt.options || []) {
      const li = document.createElement("li");
      li.textContent = o.label;
      ul.appendChild(li);
    }
    $("prompt").hidden = false;
  }

  async function answer(choice) {
    if (busy) return;
    busy = true;
    $("p-yes").disabled = true;
    $("p-no").disabled = true;
    const r = await post("/api/link/respond", { token: token, choice: choice });
    if (r.status === 200) {
      $("prompt").hidden = true;
      say(choice === "yes" ? "Approved." : "Denied.");
      // Spent: out of the address bar and the history.
      history.replaceState(null, "", location.pathname);
    } else {
      refused(r);
      if (r.status === 0) {
        busy = false;
        $("p-yes").disabled = false;
        $("p-no").disabled = false;
      }
    }
  }

  async function load() {
    if (!token) {
      say("This link carries no token.");
      return;
    }
    const r = await post("/api/link/view", { token: token });
    if (r.status !== 200) {
      refused(r);
      return;
    }
    show(r.body);
  }

  // Another link opened in this tab only changes the fragment: start over.
  window.addEventListener("hashchange", () => location.reload());
  $("p-yes").addEventListener("click", () => answer("yes"));
  $("p-no").addEventListener("click", () => answer("no"));
  load();
})();
