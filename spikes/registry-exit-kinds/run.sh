#!/usr/bin/env bash
# Registry entry: its fields after trust, and its removal per exit kind.
# See README.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
spike_init registry-exit-kinds "${1:-}"
start_mock

proj="$SB/proj"
F="registry"

# 1. Fields of a fresh entry (first session: also passes the trust dialog).
if ! start_session s0 "$proj"; then
    verdict FAIL "$F written" "no registry entry / prompt ($SCREEN_SEEN): $(screen s0 | grep -v '^ *$' | head -5 | paste -sd'|')"
    spike_finish
fi
pid="$SPID"; rf="$(reg_file "$pid")"
verdict PASS "$F written" "sessions/$pid.json after the trust dialog (keys: $(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))))' "$rf"))"
[ "$(reg_get "$pid" pid)" = "$pid" ] && verdict PASS "$F pid" "= $pid" || verdict FAIL "$F pid" "'$(reg_get "$pid" pid)' != $pid"
sid="$(reg_get "$pid" sessionId)"
if [[ "$sid" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]]; then verdict PASS "$F sessionId" "$sid"
else verdict FAIL "$F sessionId" "not a uuid: '$sid'"; fi
ps="$(reg_get "$pid" procStart)"; real="$(proc_start "$pid")"
if [ "$ps" = "$real" ]; then verdict PASS "$F procStart" "\"$ps\" = field 22 of /proc/$pid/stat"
else verdict FAIL "$F procStart" "\"$ps\" != field 22 of /proc/$pid/stat ($real)"; fi
dom="$(reg_get "$pid" pidDomain)"
mine="linux:$(cat /etc/machine-id 2>/dev/null):pid:$(readlink /proc/self/ns/pid | sed 's/^pid://')"
if [ -z "$dom" ]; then verdict INFO "$F pidDomain" "absent (optional; 2.1.173 has none)"
elif [ "$dom" = "$mine" ]; then verdict PASS "$F pidDomain" "$dom (= linux:<machine-id>:pid:<our pid ns>)"
else verdict FAIL "$F pidDomain" "'$dom', ours would be '$mine'"; fi
st="$(reg_get "$pid" status)"
case "$st" in
    idle) verdict PASS "$F status" "idle at the prompt" ;;
    "") verdict INFO "$F status" "absent" ;;
    *) verdict FAIL "$F status" "'$st' at the prompt" ;;
esac
[ "$(reg_get "$pid" cwd)" = "$proj" ] && verdict PASS "$F cwd" "$proj" || verdict FAIL "$F cwd" "'$(reg_get "$pid" cwd)' != $proj"
verdict INFO "$F kind/version" "kind=$(reg_get "$pid" kind) version=$(reg_get "$pid" version) startedAt=$(reg_get "$pid" startedAt)"

# Leftovers of a pid: its .json, its .key files, its messaging socket.
leftovers() {
    local p="$1" out=""
    [ -f "$(reg_file "$p")" ] && out="$out $p.json"
    compgen -G "$SB_CONFIG/sessions/$p.*.key" >/dev/null && out="$out $p.*.key"
    [ -S "$SB_TMP/cc-socks/$p.sock" ] && out="$out cc-socks/$p.sock"
    echo "${out# }"
}
before="$(leftovers "$pid")"
verdict INFO "$F files of a live session" "${before:-none}"

# 2. Exit kinds. SIGKILL first, so later sessions get a chance to
# garbage-collect its stale entry.
# exit_kind <label> <expected-status or -> <how>
exit_kind() {
    local label="$1" want="$2" how="$3" w="x-${1//\//}"
    if [ "$label" = SIGKILL ]; then w=s0; else
        start_session "$w" "$proj" || { verdict FAIL "$F exit $label" "session did not start ($SCREEN_SEEN)"; return; }
    fi
    local p="$SPID"
    [ "$label" = SIGKILL ] && p="$pid"
    local files; files="$(leftovers "$p")"
    case "$how" in
        /exit) slash "$w" /exit ;;
        close) kill_window "$w" ;;
        *) kill "-$how" "$p" ;;
    esac
    if ! wait_pid_gone "$p" 30; then
        verdict FAIL "$F exit $label" "pid $p still alive 30 s later (state $(proc_field "$p" 3), entry: ${left:-$(leftovers "$p")}); killed with SIGKILL"
        kill -9 "$p" 2>/dev/null
        return
    fi
    local st="n/a (window gone)"
    [ "$how" = close ] || { sleep 0.3; st="$(exit_status "$w")"; }
    sleep 1
    local left; left="$(leftovers "$p")"
    if [ "$how" = KILL ]; then
        if [ -n "$left" ]; then verdict PASS "$F exit $label" "status $st; left behind: $left (had: $files)"
        else verdict FAIL "$F exit $label" "status $st; nothing left behind (the facts: entry stays)"; fi
        KILLED_PID="$p"; KILLED_LEFT="$left"
        return
    fi
    local ok=0 why=""
    [ -z "$left" ] || { ok=1; why="left behind: $left"; }
    if [ "$want" != - ] && [ "$st" != "$want" ]; then ok=1; why="$why status $st, expected $want"; fi
    if [ "$ok" = 0 ]; then verdict PASS "$F exit $label" "status $st, entry removed (had: $files)"
    else verdict FAIL "$F exit $label" "${why# }"; fi
}
exit_kind SIGKILL 137 KILL        # s0, the session of part 1
exit_kind /exit 0 /exit
exit_kind SIGTERM 143 TERM
exit_kind SIGHUP 129 HUP
exit_kind SIGINT-idle 0 INT
exit_kind close-terminal - close

# 3. Is the SIGKILLed session's entry garbage-collected by later sessions?
if [ -n "${KILLED_PID:-}" ]; then
    now="$(leftovers "$KILLED_PID")"
    verdict INFO "$F stale entry after 5 later sessions" "of SIGKILLed pid $KILLED_PID: ${now:-all removed (garbage-collected)} (was: $KILLED_LEFT)"
fi
spike_finish
