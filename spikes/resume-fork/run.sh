#!/usr/bin/env bash
# Resume and fork: live resume (interleave), fork safety, dead resume,
# resume from another cwd, unknown id, --session-id in use. See README.md.
# Runs in a throwaway sandbox: the live resume splits a conversation.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
spike_init resume-fork "${1:-}"
start_mock

A="$SB/projA"
B="$SB/projB"
F="resume"
sha() { sha256sum "$1" 2>/dev/null | cut -c1-16; }
snippet() { screen "$1" | grep -v '^ *$' | grep -vE '^[─ ]+$' | head -"${2:-4}" | sed -E 's/^ +//' | paste -sd'|'; }

# 0. The original session S, one turn.
if ! start_session s "$A"; then
    verdict FAIL "$F setup" "session did not start ($SCREEN_SEEN): $(snippet s)"
    spike_finish
fi
spid="$SPID"; S="$(reg_get "$spid" sessionId)"
if [ -z "$(transcript "$S")" ]; then verdict PASS "$F transcript lazy" "no $S.jsonl before the first turn"
else verdict FAIL "$F transcript lazy" "$S.jsonl exists before any turn"; fi
turn s "$spid" "first turn" || { verdict FAIL "$F setup" "first turn got no reply"; spike_finish; }
TS="$(transcript "$S")"
verdict INFO "$F setup" "session $S, transcript ${TS#"$SB_CONFIG"/}"

# 1. Fork of the LIVE session.
h0="$(sha "$TS")"
if start_session f "$A" --resume "$S" --fork-session; then
    fpid="$SPID"; FS="$(reg_get "$fpid" sessionId)"
    if [ -n "$FS" ] && [ "$FS" != "$S" ]; then verdict PASS "$F fork id" "new id $FS in the registry at once"
    else verdict FAIL "$F fork id" "registry sessionId '$FS' (original $S)"; fi
    if [ -z "$(transcript "$FS")" ]; then verdict INFO "$F fork file" "no $FS.jsonl before the fork's first turn"
    else verdict INFO "$F fork file" "$FS.jsonl exists before the fork's first turn"; fi
    if turn f "$fpid" "in the fork"; then
        FS2="$(reg_get "$fpid" sessionId)"; TF="$(transcript "$FS2")"
        h1="$(sha "$TS")"
        if [ "$h0" = "$h1" ]; then verdict PASS "$F fork original untouched" "$S.jsonl byte-identical after a turn in the fork"
        else verdict FAIL "$F fork original untouched" "$S.jsonl changed (sha $h0 -> $h1)"; fi
        if [ -n "$TF" ] && [ "$TF" != "$TS" ] && grep -q "ACK: first turn" "$TF"; then
            verdict PASS "$F fork copy" "$FS2.jsonl holds the history (first turn) and the fork's turn"
        else
            verdict FAIL "$F fork copy" "fork transcript '${TF:-none}' lacks the history"
        fi
    else
        verdict FAIL "$F fork turn" "no reply in the fork"
    fi
    kill -TERM "$fpid"; wait_pid_gone "$fpid" 15
else
    verdict FAIL "$F fork" "--resume $S --fork-session did not start ($SCREEN_SEEN): $(snippet f)"
fi

# 2. Resume of the LIVE session: not refused, two entries, one file.
if start_session r "$A" --resume "$S"; then
    rpid="$SPID"
    n="$(reg_list | awk -v s="$S" '$2 == s' | wc -l)"
    if [ "$(reg_get "$rpid" sessionId)" = "$S" ] && [ "$n" -ge 2 ]; then
        verdict PASS "$F live not refused" "second process runs, $n registry entries with sessionId $S"
    else
        verdict FAIL "$F live not refused" "resumer has sessionId '$(reg_get "$rpid" sessionId)', $n entries with $S"
    fi
    turn r "$rpid" "from the resumer"; turn s "$spid" "from the original"
    split="$(python3 - "$TS" <<'EOF2'
import json, sys
recs = []
for line in open(sys.argv[1]):
    try: recs.append(json.loads(line))
    except Exception: pass
by = {r["uuid"]: r for r in recs if r.get("uuid")}
def chain(text):
    tip = [r for r in recs if r.get("type") == "assistant" and text in json.dumps(r.get("message", {}))]
    if not tip: return None
    out, u = set(), tip[-1]["uuid"]
    while u and u in by and u not in out:
        out.add(u); u = by[u].get("parentUuid")
    return out
a, b = chain("ACK: from the resumer"), chain("ACK: from the original")
if a is None or b is None:
    print("missing", "resumer" if a is None else "original")
else:
    ua = {u for u in a if by[u].get("type") == "assistant" and "ACK: from the original" in json.dumps(by[u].get("message", {}))}
    ub = {u for u in b if by[u].get("type") == "assistant" and "ACK: from the resumer" in json.dumps(by[u].get("message", {}))}
    print("split" if not ua and not ub else "linear", len(a & b))
EOF2
)"
    case "$split" in
        split*) verdict PASS "$F live interleave" "both turns appended to $S.jsonl on two branches (parentUuid chains share ${split#split } records)" ;;
        linear*) verdict INFO "$F live interleave" "both turns in $S.jsonl, one chain (no split)" ;;
        *) verdict FAIL "$F live interleave" "$split not in $S.jsonl" ;;
    esac
    kill -TERM "$rpid"; wait_pid_gone "$rpid" 15
else
    verdict FAIL "$F live not refused" "--resume of a live session did not start ($SCREEN_SEEN): $(snippet r)"
fi
kill -TERM "$spid"; wait_pid_gone "$spid" 15

# 3. Resume of the DEAD session: same id, same file.
sleep 0.5
if start_session d "$A" --resume "$S"; then
    dpid="$SPID"
    [ "$(reg_get "$dpid" sessionId)" = "$S" ] && verdict PASS "$F dead keeps id" "registry sessionId $S" ||
        verdict FAIL "$F dead keeps id" "registry sessionId $(reg_get "$dpid" sessionId), original $S"
    if turn d "$dpid" "after death" && grep -q "ACK: after death" "$TS"; then
        verdict PASS "$F dead same file" "the new turn is appended to $S.jsonl"
    else
        verdict FAIL "$F dead same file" "'ACK: after death' not in $S.jsonl but in: $(files_with_reply "after death")"
    fi
    kill -TERM "$dpid"; wait_pid_gone "$dpid" 15
else
    verdict FAIL "$F dead" "--resume of a dead session did not start ($SCREEN_SEEN): $(snippet d)"
fi

# 4. Resume from ANOTHER cwd.
start_session o "$B" --resume "$S"; rc=$?
if [ "$rc" = 0 ]; then
    opid="$SPID"
    ocwd="$(reg_get "$opid" cwd)"
    turn o "$opid" "from another cwd"
    where="$(files_with_reply "from another cwd")"
    if [ "$ocwd" = "$B" ] && [ "$where" = "${TS#"$SB_CONFIG"/}" ]; then
        verdict PASS "$F other cwd" "runs (as 2.1.332): registry cwd projB, sessionId $(reg_get "$opid" sessionId), the turn appended to the ORIGINAL file ${where}"
    else
        verdict FAIL "$F other cwd" "runs, but registry cwd $ocwd, sessionId $(reg_get "$opid" sessionId), the turn went to: ${where:-nowhere}"
    fi
    kill -TERM "$opid"; wait_pid_gone "$opid" 15
else
    wait_exit o 15
    msg="$(screen_all o | grep -o "No conversation found with session ID: [0-9a-f-]*" | head -1)"
    if [ -n "$msg" ]; then
        verdict PASS "$F other cwd" "refused (as 2.1.173): '$msg', exit status $(exit_status o) (screens: $SCREEN_SEEN)"
    else
        verdict FAIL "$F other cwd" "neither ran nor said 'No conversation found' ($SCREEN_SEEN): $(snippet o)"
    fi
fi

# 5. Unknown id.
U="$(python3 -c 'import uuid; print(uuid.uuid4())')"
launch u "$A" --resume "$U" >/dev/null
if wait_exit u 30; then
    st="$(exit_status u)"
    msg="$(screen_all u | grep -o "No conversation found with session ID: [0-9a-f-]*" | head -1)"
    if [ "$st" = 1 ] && [ "$msg" = "No conversation found with session ID: $U" ]; then verdict PASS "$F unknown id" "'$msg', exit status 1"
    else verdict FAIL "$F unknown id" "exit status $st, message '${msg:-none}': $(snippet u)"; fi
else
    verdict FAIL "$F unknown id" "still running 30 s later: $(snippet u)"
fi

# 6. --session-id with an id that has a transcript.
launch i "$A" --session-id "$S" >/dev/null
if wait_exit i 30; then
    st="$(exit_status i)"
    msg="$(screen_all i | grep -o "Session ID [0-9a-f-]* is already in use\.\?" | head -1)"
    if [ "$st" = 1 ] && [ -n "$msg" ]; then verdict PASS "$F session-id in use" "'$msg', exit status 1"
    else verdict FAIL "$F session-id in use" "exit status $st, message '${msg:-none}': $(snippet i)"; fi
else
    verdict FAIL "$F session-id in use" "still running 30 s later: $(snippet i)"
fi

spike_finish
