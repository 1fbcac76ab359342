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

slash c /clear
wait_stable c 1000 15
sleep 1
sid1="$(reg_get "$pid" sessionId)"
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
    verdict INFO "$F registry follows" "DRIFT: registry says $sid2 but the turn went to $fsid.jsonl (the drift DESIGN §1 mentions)"
fi
# The witness DESIGN proposes: the newest transcript in the cwd's project
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
verdict INFO "$F new file content" "$(wc -l <"$where") records, cwd $first_cwd, holds 'before clear': $(grep -q 'before clear' "$where" && echo yes || echo no)"
spike_finish
