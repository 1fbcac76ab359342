#!/usr/bin/env bash
# In-TUI resume of another conversation (`/resume <id>` typed at the
# prompt of a running session): registry, transcripts, status, screen.
# See README.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
spike_init tui-resume "${1:-}"
start_mock
F="tui-resume"
proj="$SB/proj"
snippet() { screen "$1" | grep -v '^ *$' | grep -vE '^[─ ]+$' | sed -E 's/^ +//; s/ +$//' | head -"${2:-6}" | paste -sd'|'; }
nfiles() { find "$SB_CONFIG/projects" -name '*.jsonl' 2>/dev/null | wc -l; }
nlines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# types <file> <from-line>: the record types after line n, comma-separated
types() { tail -n +"$(($2 + 1))" "$1" 2>/dev/null | python3 -c '
import json, sys
out = []
for l in sys.stdin:
    try: out.append(json.loads(l).get("type", "?"))
    except Exception: out.append("bad")
print(",".join(out) or "nothing")'; }

# 1. Session A: one turn, then /exit.
if ! start_session a "$proj"; then
    verdict FAIL "$F setup" "session A did not start ($SCREEN_SEEN)"; spike_finish
fi
apid="$SPID"; A="$(reg_get "$apid" sessionId)"
turn a "$apid" "turn in A" || { verdict FAIL "$F setup" "no reply in A"; spike_finish; }
slash a /exit
wait_exit a 15 || verdict FAIL "$F setup" "A did not exit on /exit"
TA="$(transcript "$A")"

# 2. Session B, fresh, one turn.
if ! start_session b "$proj"; then
    verdict FAIL "$F setup" "session B did not start ($SCREEN_SEEN)"; spike_finish
fi
bpid="$SPID"; B="$(reg_get "$bpid" sessionId)"
turn b "$bpid" "turn in B" || { verdict FAIL "$F setup" "no reply in B"; spike_finish; }
TB="$(transcript "$B")"
verdict INFO "$F setup" "A=$A (exited), B=$B pid $bpid"
ps0="$(reg_get "$bpid" procStart)"; name0="$(reg_get "$bpid" name)"; st0="$(reg_get "$bpid" startedAt)"
la0="$(nlines "$TA")"; lb0="$(nlines "$TB")"; nf0="$(nfiles)"

# 3. /resume <A> at B's prompt. Sample the registry every 0.1 s.
slash b "/resume $A"
t0=$(date +%s%3N); switched=""; statuses=""
end=$((SECONDS + 15))
while [ $SECONDS -lt $end ]; do
    s="$(reg_get "$bpid" status)"
    case ",$statuses," in *",$s,"*) ;; *) statuses="$statuses,$s" ;; esac
    if [ -z "$switched" ] && [ "$(reg_get "$bpid" sessionId)" = "$A" ]; then
        switched=$(($(date +%s%3N) - t0))
    fi
    [ -n "$switched" ] && [ $(($(date +%s%3N) - t0)) -gt 3000 ] && break
    sleep 0.1
done
wait_stable b 1000 10
statuses="${statuses#,}"
if [ -n "$switched" ] && [ "$(reg_get "$bpid" procStart)" = "$ps0" ]; then
    verdict PASS "$F registry switch" "sessions/$bpid.json says $A ${switched} ms after Enter; same pid, same procStart"
else
    verdict FAIL "$F registry switch" "sessionId '$(reg_get "$bpid" sessionId)' (A=$A, B=$B), procStart $(reg_get "$bpid" procStart) (was $ps0)"
fi
if [ "$statuses" = idle ]; then verdict PASS "$F status" "only 'idle' seen during the switch"
else verdict INFO "$F status" "statuses seen during the switch: $statuses"; fi
verdict INFO "$F other fields" "name $name0 -> $(reg_get "$bpid" name), startedAt $( [ "$(reg_get "$bpid" startedAt)" = "$st0" ] && echo kept || echo changed)"
verdict INFO "$F screen" "$(screen b | grep -v '^ *$' | grep -vE '^[─ ]+$' | sed -E 's/^ +//; s/ +$//' | tail -6 | paste -sd'|')"
if screen b | grep -qF "turn in A" && ! screen b | grep -qF "turn in B"; then
    verdict INFO "$F screen shows A" "A's conversation on screen, B's gone"
fi
la1="$(nlines "$TA")"; lb1="$(nlines "$TB")"
verdict INFO "$F B at switch" "$((lb1 - lb0)) records appended to B's file: $(types "$TB" "$lb0")"
verdict INFO "$F A at switch" "$((la1 - la0)) records appended to A's file: $(types "$TA" "$la0")"
verdict INFO "$F files at switch" "$nf0 -> $(nfiles) transcript files"

# 4. The next turn: A's file, no new one.
turn b "$bpid" "after resume" || verdict FAIL "$F next turn" "no reply to 'after resume'"
where="$(files_with_reply "after resume")"
if [ "$where" = "${TA#"$SB_CONFIG"/}" ]; then
    verdict PASS "$F next turn" "appended to A's existing file ($(types "$TA" "$la1" | tr , '\n' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'))"
else
    verdict FAIL "$F next turn" "reply in '${where:-none}', A's file is ${TA#"$SB_CONFIG"/}"
fi
if [ "$(nfiles)" = "$nf0" ]; then verdict PASS "$F no new file" "still $nf0 transcript files"
else verdict FAIL "$F no new file" "$nf0 -> $(nfiles) transcript files"; fi
lb2="$(nlines "$TB")"
verdict INFO "$F B after" "$((lb2 - lb1)) records appended to B's file by the next turn"
rec="$(grep -F 'after resume' "$TA" | grep -m1 '"type":"user"' | python3 -c 'import json,sys; r=json.loads(sys.stdin.read() or "{}"); print(r.get("sessionId"), r.get("cwd"))' 2>/dev/null)"
verdict INFO "$F record ids" "the new user record in A's file: sessionId/cwd = $rec"
if [ "$(reg_get "$bpid" sessionId)" = "$A" ]; then verdict PASS "$F registry after turn" "still $A"
else verdict FAIL "$F registry after turn" "now $(reg_get "$bpid" sessionId)"; fi

# 5. Unknown id: error text, nothing changed.
U="$(python3 -c 'import uuid; print(uuid.uuid4())')"
nf1="$(nfiles)"; la2="$(nlines "$TA")"
slash b "/resume $U"
wait_stable b 1500 10
verdict INFO "$F unknown id screen" "$(screen b | grep -v '^ *$' | grep -vE '^[─ ]+$' | sed -E 's/^ +//; s/ +$//' | tail -6 | paste -sd'|')"
if [ "$(reg_get "$bpid" sessionId)" = "$A" ] && [ "$(nfiles)" = "$nf1" ]; then
    verdict PASS "$F unknown id" "registry still $A, no file created"
else
    verdict FAIL "$F unknown id" "registry $(reg_get "$bpid" sessionId), files $nf1 -> $(nfiles)"
fi
verdict INFO "$F unknown id records" "appended to the current (A's) file: $(types "$TA" "$la2")"
send_keys b Escape; sleep 0.5

# 6. The picker: /resume alone (screen only), then Esc.
send_keys b C-u; sleep 0.3
slash b "/resume"
wait_stable b 1500 10
verdict INFO "$F picker" "$(screen b | grep -v '^ *$' | grep -vE '^[─ ]+$' | sed -E 's/^ +//; s/ +$//' | tail -12 | paste -sd'|')"
# The only other conversation in this project is B: Enter on the picker
# (its ❯ is on the first entry) resumes it.
if screen b | grep -qE "❯ +turn in B"; then
    send_keys b Enter
    end=$((SECONDS + 10))
    while [ $SECONDS -lt $end ] && [ "$(reg_get "$bpid" sessionId)" != "$B" ]; do sleep 0.1; done
    if [ "$(reg_get "$bpid" sessionId)" = "$B" ]; then verdict PASS "$F picker enter" "Enter on 'turn in B' switched the registry back to $B"
    else verdict FAIL "$F picker enter" "registry $(reg_get "$bpid" sessionId) after Enter on B"; fi
else
    verdict INFO "$F picker enter" "B is not the selected entry; not driven"
    send_keys b Escape
fi
spike_finish
