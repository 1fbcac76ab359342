#!/usr/bin/env python3
"""spikes/trim-lossless/tx.py: the transcript side of the trim-lossless spike.

    tx.py inventory  <transcript>                       -> one line per candidate
    tx.py transform  <transcript> <candidate> <relink>   (in place; prints a summary)
    tx.py extract    <mock-log> <from-line> <out.json>   (first Messages request with tools)
    tx.py compare    <base.json> <other.json>            -> "same" or a diff summary

A candidate is what one run drops:
    type:<t>            every record whose `type` is <t>
    system:<subtype>    every `system` record with that subtype
    attachment:<type>   every `attachment` record whose attachment.type is that
    bookkeeping         every record that is not `user`/`assistant`
    dead-branch         every uuid-carrying record not on the chain that ends at
                        the newest user/assistant record (by timestamp), nor an
                        ancestor of it
    field:<name>        not a record: the field <name> removed from every record
    set:<a>+<b>+...     all of these at once (fields stripped, records dropped)
    edit:leaf-to-dead   not a drop: every last-prompt's leafUuid set to the
                        newest record of a dead branch (does resume follow it?)
<relink> is 0 (kept records keep their parentUuid, even if it now names a
dropped record) or 1 (a kept record whose parent was dropped is re-pointed at
the nearest kept ancestor).
"""
import json
import re
import sys

CONV = ("user", "assistant")


def load(path):
    recs = []
    with open(path, "rb") as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                recs.append((json.loads(raw), raw))
            except ValueError:
                recs.append((None, raw))
    return recs


def keys_of(r):
    """The candidate names a record belongs to."""
    t = r.get("type", "?")
    out = [f"type:{t}"]
    if t == "system":
        out.append(f"system:{r.get('subtype', '?')}")
    if t == "attachment":
        out.append(f"attachment:{(r.get('attachment') or {}).get('type', '?')}")
    if t not in CONV:
        out.append("bookkeeping")
    return out


def main_chain(recs):
    by = {r["uuid"]: r for r, _ in recs if r and r.get("uuid")}
    conv = [r for r, _ in recs if r and r.get("type") in CONV and r.get("uuid")]
    if not conv:
        return set()
    tip = max(conv, key=lambda r: r.get("timestamp", ""))
    chain, u = set(), tip["uuid"]
    while u and u in by and u not in chain:
        chain.add(u)
        u = by[u].get("parentUuid")
    return chain


def selects(cand, r, chain):
    if r is None:
        return False
    if cand.startswith("set:"):
        return any(selects(c, r, chain) for c in cand[4:].split("+") if not c.startswith("field:"))
    if cand == "dead-branch":
        return bool(r.get("uuid")) and r["uuid"] not in chain
    return cand in keys_of(r)


def inventory(path):
    recs = load(path)
    chain = main_chain(recs)
    stats = {}
    for r, raw in recs:
        if r is None:
            continue
        for k in keys_of(r) + (["dead-branch"] if r.get("uuid") and r["uuid"] not in chain else []):
            s = stats.setdefault(k, [0, 0, 0])
            s[0] += 1
            s[1] += len(raw)
            s[2] += 1 if r.get("uuid") else 0
    for k in sorted(stats):
        n, b, u = stats[k]
        print(f"{k} {n} {b} {u}")
    total = sum(len(raw) for _, raw in recs)
    print(f"total {len(recs)} {total} {sum(1 for r, _ in recs if r and r.get('uuid'))}")


def transform(path, cand, relink):
    if cand == "ccd-trim":
        # ccd's own trim (CCD_TRIM_CMD <transcript> <backup dir>, e.g.
        # `target/x86_64-unknown-linux-gnu/release/ccd-bench __trim`), with its default rules.
        import os, shlex, subprocess, tempfile
        before = os.path.getsize(path)
        n_before = sum(1 for _ in open(path, "rb"))
        out = subprocess.run(shlex.split(os.environ["CCD_TRIM_CMD"]) + [path, tempfile.mkdtemp()],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"dropped 0 records, 0 bytes; ccd trim failed: {out.stderr.strip()}; broken links 0")
            return
        n_after = sum(1 for _ in open(path, "rb"))
        print(f"dropped {n_before - n_after} records, {before - os.path.getsize(path)} bytes; ccd trim; broken links 0")
        return
    recs = load(path)
    chain = main_chain(recs)
    if cand.startswith("set:"):
        # Fields first (a record that stays keeps its place), then records.
        for c in cand[4:].split("+"):
            if c.startswith("field:"):
                transform(path, c, relink)
        recs = load(path)
    if cand == "edit:leaf-to-dead":
        dead = [r for r, _ in recs if r and r.get("uuid") and r["uuid"] not in chain
                and r.get("type") in CONV]
        if not dead:
            print("edited 0 records, 0 bytes; no dead branch; broken links 0")
            return
        leaf = max(dead, key=lambda r: r.get("timestamp", ""))["uuid"]
        out, n = [], 0
        for r, raw in recs:
            if r is not None and r.get("type") == "last-prompt" and "leafUuid" in r:
                r["leafUuid"] = leaf
                raw = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                n += 1
            out.append(raw)
        with open(path, "wb") as f:
            f.writelines(out)
        print(f"edited {n} records, 0 bytes; leafUuid -> {leaf[:8]}; broken links 0")
        return
    if cand.startswith("field:"):
        name = cand[len("field:"):]
        out, n, saved = [], 0, 0
        for r, raw in recs:
            if r is not None and name in r:
                del r[name]
                new = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                saved += len(raw) - len(new)
                n += 1
                out.append(new)
            else:
                out.append(raw)
        with open(path, "wb") as f:
            f.writelines(out)
        print(f"stripped {name} from {n} records, {saved} bytes; broken links 0")
        return
    parent = {r["uuid"]: r.get("parentUuid") for r, _ in recs if r and r.get("uuid")}
    dropped = {r["uuid"] for r, _ in recs if selects(cand, r, chain) and r.get("uuid")}

    def resolve(u):
        seen = set()
        while u in dropped and u not in seen:
            seen.add(u)
            u = parent.get(u)
        return u

    out, n, nbytes, relinked = [], 0, 0, 0
    for r, raw in recs:
        if selects(cand, r, chain):
            n += 1
            nbytes += len(raw)
            continue
        if relink and r is not None and r.get("parentUuid") in dropped:
            r["parentUuid"] = resolve(r["parentUuid"])
            relinked += 1
            raw = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        out.append(raw)
    kept = {json.loads(raw).get("uuid") for raw in out if raw.strip()} - {None}
    broken = 0
    for raw in out:
        r = json.loads(raw)
        p = r.get("parentUuid")
        if p and p not in kept:
            broken += 1
    with open(path, "wb") as f:
        f.writelines(out)
    print(f"dropped {n} records, {nbytes} bytes; relinked {relinked}; broken links {broken}")


def extract(log, start, out):
    with open(log) as f:
        lines = f.readlines()[int(start):]
    reqs = []
    for line in lines:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if not str(v.get("kind", "")).startswith("messages"):
            continue
        reqs.append(v)
    turn = [v for v in reqs if (v.get("full_body") or {}).get("tools")]
    if not turn:
        print(f"none ({len(reqs)} messages requests, none with tools)")
        return 1
    b = turn[0]["full_body"]
    with open(out, "w") as f:
        json.dump({"system": b.get("system"), "messages": b.get("messages"),
                   "tools": [t.get("name") for t in b.get("tools") or []],
                   "n_requests": len(reqs)}, f, indent=1, ensure_ascii=False)
    print(f"ok ({len(reqs)} messages requests, {len(b.get('messages') or [])} messages)")
    return 0


def blocks(m):
    c = m.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return c or []


def short(m):
    parts = []
    for b in blocks(m):
        t = b.get("type")
        if t == "text":
            parts.append("text:" + b.get("text", "")[:50].replace("\n", " "))
        else:
            parts.append(t)
    return f"{m.get('role')}[{', '.join(parts)}]"


BILLING = re.compile(r"(cc_version=[0-9.]+?\.|cch=)[0-9a-f]+;")


def compare(a_path, b_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    diffs = []
    if a["system"] != b["system"]:
        # The first system block is a billing header whose cc_version suffix
        # (both versions) and cch= (2.1.173) are derived from the request:
        # they change when the messages do.
        norm = lambda s: BILLING.sub(r"\1*;", json.dumps(s))
        diffs.append("system prompt differs" if norm(a["system"]) != norm(b["system"])
                     else "billing header differs")
    ma, mb = a["messages"] or [], b["messages"] or []
    if ma != mb:
        diffs.append(f"messages {len(ma)} -> {len(mb)}")
        for i in range(max(len(ma), len(mb))):
            x = ma[i] if i < len(ma) else None
            y = mb[i] if i < len(mb) else None
            if x != y:
                diffs.append(f"first diff at #{i}: {short(x) if x else '-'} -> {short(y) if y else '-'}")
                break
        ta = [short(m) for m in ma]
        tb = [short(m) for m in mb]
        gone = [t for t in ta if t not in tb]
        new = [t for t in tb if t not in ta]
        if gone:
            diffs.append("missing: " + "; ".join(gone[:4]))
        if new:
            diffs.append("extra: " + "; ".join(new[:4]))
    if a.get("tools") != b.get("tools"):
        diffs.append("tool list differs")
    print("same" if not diffs else " | ".join(diffs))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "inventory":
        inventory(*args)
    elif cmd == "transform":
        transform(args[0], args[1], args[2] == "1")
    elif cmd == "extract":
        sys.exit(extract(*args))
    elif cmd == "compare":
        compare(*args)
    else:
        sys.exit(f"tx.py: unknown command {cmd}")
