#!/usr/bin/env bash
# /clear: does the registry's sessionId follow the new conversation, and
# where does the next turn go? See README.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
spike_init clear "${1:-}"
start_mock
F="clear"
proj="$SB/proj"
if ! start_session c "$proj"; then
    verdict FAIL "$F start" "session did not start ($SCREEN_SEEN)"
    spike_finish
fi
pid="$SPID"
sid0="$(reg_get "$pid" sessionId)"; started="$(reg_get "$pid" startedAt)"
turn c "$pid" "before clear" || { verdict FAIL "$F start" "no reply to the first turn"; spike_finish; }
T0="$(transcript "$sid0")"

n0="$(wc -l <"$T0")"; nf0="$(find "$SB_CONFIG/projects" -name '*.jsonl' | wc -l)"
slash c /clear
t0=$(date +%s%3N); statuses=""; changed=""
end=$((SECONDS + 6))
while [ $SECONDS -lt $end ]; do
    s="$(reg_get "$pid" status)"
    case ",$statuses," in *",$s,"*) ;; *) statuses="$statuses,$s" ;; esac
    [ -z "$changed" ] && [ "$(reg_get "$pid" sessionId)" != "$sid0" ] && changed=$(($(date +%s%3N) - t0))
    sleep 0.1
done
wait_stable c 1000 15
sid1="$(reg_get "$pid" sessionId)"
verdict INFO "$F status" "statuses seen in the 6 s after /clear: ${statuses#,}; id changed after ${changed:-never} ms"
verdict INFO "$F screen" "$(screen c | grep -v '^ *$' | grep -vE '^[─ ]+$' | sed -E 's/^ +//; s/ +$//' | tail -5 | paste -sd'|')"
verdict INFO "$F old file at clear" "$(($(wc -l <"$T0") - n0)) records appended: $(tail -n +$((n0 + 1)) "$T0" | python3 -c 'import json,sys; print(",".join(json.loads(l).get("type","?") for l in sys.stdin if l.strip()) or "nothing")')"
if [ -n "$(transcript "$sid1")" ]; then verdict INFO "$F new file before turn" "$sid1.jsonl exists before the next turn: $(python3 -c '
import json, sys
out = []
for l in open(sys.argv[1]):
    r = json.loads(l); t = r.get("type", "?")
    c = (r.get("message") or {}).get("content")
    if isinstance(c, str): t += "(" + c[:60].replace("\n", " ") + ")"
    out.append(t)
print(", ".join(out))' "$(transcript "$sid1")")"
else verdict INFO "$F new file before turn" "no $sid1.jsonl before the next turn ($nf0 -> $(find "$SB_CONFIG/projects" -name '*.jsonl' | wc -l) files)"; fi
n1="$(wc -l <"$T0")"
if [ "$sid1" != "$sid0" ]; then verdict INFO "$F registry id" "changed at /clear: $sid0 -> $sid1"
else verdict INFO "$F registry id" "unchanged at /clear ($sid0)"; fi

# The next turn: which file gets it?
prompt c "after clear"
end=$((SECONDS + 40)); where=""
while [ $SECONDS -lt $end ]; do
    where="$(files_with_reply "after clear" | cut -d, -f1)"
    [ -n "$where" ] && where="$SB_CONFIG/$where"
    [ -n "$where" ] && break
    sleep 0.3
done
wait_status "$pid" idle 10
sid2="$(reg_get "$pid" sessionId)"
if [ -z "$where" ]; then
    verdict FAIL "$F next turn" "the reply to 'after clear' is in no transcript"
    spike_finish
fi
fsid="$(basename "$where" .jsonl)"
if [ "$fsid" = "$sid0" ]; then
    verdict INFO "$F new file" "none: the turn after /clear went to the old file $sid0.jsonl"
else
    verdict INFO "$F new file" "$fsid.jsonl (old: $sid0.jsonl, old file $( [ -f "$T0" ] && echo kept || echo gone))"
fi
if [ "$sid2" = "$fsid" ]; then
    verdict PASS "$F registry follows" "registry sessionId $sid2 = the file written after /clear (no drift)"
else
    verdict INFO "$F registry follows" "DRIFT: registry says $sid2 but the turn went to $fsid.jsonl (the drift docs/claude-cli-compat.md mentions)"
fi
# The witness docs/claude-cli-compat.md proposes: the newest transcript in the cwd's project
# folder written after startedAt.
newest="$(python3 - "$SB_CONFIG/projects/$(slug "$proj")" "$started" <<'EOF2'
import os, sys
d, started = sys.argv[1], int(sys.argv[2] or 0)
best = None
for n in os.listdir(d) if os.path.isdir(d) else []:
    if n.endswith(".jsonl"):
        m = os.stat(os.path.join(d, n)).st_mtime * 1000
        if m >= started and (best is None or m > best[0]):
            best = (m, n[:-6])
print(best[1] if best else "")
EOF2
)"
if [ "$newest" = "$fsid" ]; then verdict PASS "$F witness" "the newest transcript after startedAt in the project folder is $fsid (the live one)"
else verdict FAIL "$F witness" "newest transcript after startedAt is '${newest:-none}', the live one is $fsid"; fi
first_cwd="$(grep -m1 -o '"cwd":"[^"]*"' "$where" | cut -d'"' -f4)"
verdict INFO "$F old file after turn" "$(($(wc -l <"$T0") - n1)) records appended to $sid0.jsonl by the next turn"
verdict INFO "$F new file content" "$(wc -l <"$where") records, cwd $first_cwd, holds 'before clear': $(grep -q 'before clear' "$where" && echo yes || echo no)"
spike_finish
