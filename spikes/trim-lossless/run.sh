#!/usr/bin/env bash
# Which transcript records `claude --resume <sid>` does not need: for each
# candidate (a record type, a system subtype, an attachment type, a dead
# branch, a bulky field), drop it from a copy of a real session's transcript,
# resume that copy, send one prompt, and compare the first Messages request
# (system prompt and messages) with the one from resuming the untouched copy.
# See README.md.
#
# Env: TRIM_ONLY="cand ..." runs only these candidates (names as printed by
# the inventory); TRIM_NO_BRANCH=1 skips making a dead branch;
# CCD_TRIM_CMD="<ccd-bench> __trim" adds the candidate `ccd-trim` (ccd's own
# trim with its default rules).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TX() { python3 "$HERE/tx.py" "$@"; }
spike_init trim-lossless "${1:-}"
start_mock --log-bodies

P="$SB/proj"
F="trim"
# Tools run without a dialog (the same choice as tests/real-cli/record-background.sh).
case "$CLAUDE_VERSION" in
    2.1.1[0-9][0-9]) BUILD_ARGS=(--allowed-tools=Bash,Write) ;;
    *) BUILD_ARGS=(--permission-mode acceptEdits --allowed-tools=Bash,Write) ;;
esac
RESUME_PROMPT="after resume"
snippet() { screen "$1" | grep -v '^ *$' | grep -vE '^[─ ]+$' | head -"${2:-4}" | sed -E 's/^ +//' | paste -sd'|'; }

# tool_turn <window> <pid> <text>: a prompt the mock answers with a tool use;
# done once one more assistant "done" is in the transcript and the status is idle.
n_done() { grep '"type":"assistant"' "$1" 2>/dev/null | grep -c '"text":"done"'; }
tool_turn() {
    local w="$1" pid="$2" text="$3" sid f n0 end
    sid="$(reg_get "$pid" sessionId)"; f="$(transcript "$sid")"
    n0="$(n_done "$f")"
    prompt "$w" "$text"
    end=$((SECONDS + 40))
    while [ $SECONDS -lt $end ]; do
        if [ "$(n_done "$f")" -gt "$n0" ]; then wait_status "$pid" idle 10; return 0; fi
        sleep 0.3
    done
    return 1
}
stop() { kill -TERM "$1" 2>/dev/null; wait_pid_gone "$1" 15; }

# ---------------------------------------------------------------- 1. the session
start_session s "$P" "${BUILD_ARGS[@]}" || { verdict FAIL "$F setup" "no session ($SCREEN_SEEN): $(snippet s)"; spike_finish; }
spid="$SPID"; S="$(reg_get "$spid" sessionId)"
turn s "$spid" "hello one" || { verdict FAIL "$F setup" "turn 1 got no reply"; spike_finish; }
tool_turn s "$spid" "TOOL:for i in 1 2 3; do echo \$i; sleep 1; done" || verdict FAIL "$F setup" "Bash tool turn did not finish: $(snippet s 8)"
tool_turn s "$spid" "WRITE:$P/new.txt" || verdict FAIL "$F setup" "Write tool turn did not finish: $(snippet s 8)"
# rewind_last <window> <text>: double Esc, the Rewind list, Up onto <text>
# (the turn just taken), Enter, "1. Restore conversation", Enter, then the
# restored prompt text cleared (C-u). Every key after a check of the screen.
rewind_last() {
    local w="$1" text="$2"
    send_keys "$w" Escape; sleep 0.3; send_keys "$w" Escape
    wait_screen "$w" "Restore the code and/or conversation" 8 || return 1
    wait_stable "$w" 800 5
    send_keys "$w" Up
    wait_screen "$w" "^ +❯ $text" 5 || return 1
    send_keys "$w" Enter
    wait_screen "$w" "❯ 1\. Restore conversation" 5 || return 1
    wait_stable "$w" 800 5
    send_keys "$w" Enter
    wait_screen_gone "$w" "Restore conversation" 8 || return 1
    wait_stable "$w" 800 5
    send_keys "$w" C-u
    wait_screen_gone "$w" "❯ $text" 5
}
if [ "${TRIM_NO_BRANCH:-}" != 1 ]; then
    # A dead branch made by /rewind: a turn, then Esc Esc → Restore
    # conversation to before it; the next prompt hangs from the turn before.
    if turn s "$spid" "rewound away"; then
        rewind_last s "rewound away" || verdict FAIL "$F setup" "rewind did not go through: $(snippet s 8)"
    else
        verdict FAIL "$F setup" "the turn to rewind got no reply"
    fi
    # A branch that resume does not follow: a second process resumes the live
    # session and takes one turn; the first then takes the newest turn, so
    # the second's turn hangs off the chain (see resume-fork, "live interleave").
    if start_session b "$P" --resume "$S" "${BUILD_ARGS[@]}"; then
        bpid="$SPID"
        turn b "$bpid" "on a side branch" || verdict FAIL "$F setup" "side-branch turn got no reply"
        stop "$bpid"
    else
        verdict FAIL "$F setup" "side-branch resume did not start ($SCREEN_SEEN)"
    fi
fi
turn s "$spid" "hello two" || verdict FAIL "$F setup" "last turn got no reply"
stop "$spid"
TS="$(transcript "$S")"
[ -n "$TS" ] || { verdict FAIL "$F setup" "no transcript for $S"; spike_finish; }
sleep 1
cp -a "$SB_HOME" "$SB/base-home"
verdict INFO "$F setup" "session $S, $(wc -l <"$TS") records, $(wc -c <"$TS") bytes"

# ---------------------------------------------------------------- 2. inventory
TX inventory "$TS" >"$SB/inventory"
while read -r k n b u; do
    verdict INFO "$F inventory" "$k: $n records, $b bytes, $u with uuid"
done <"$SB/inventory"
cp "$TS" "$SB/original.jsonl"

# ---------------------------------------------------------------- 3. resumes
RUN_N=0
# resume_run <label> <candidate|none> <relink 0|1>: fresh copy of the config,
# the candidate dropped, `claude --resume <sid>` in $P, one prompt; the first
# request with tools saved in $SB/req-<label>.json. Sets RUN_NOTE, TX_NOTE.
resume_run() {
    local label="$1" cand="$2" relink="$3" w mark rpid tx="" ext
    RUN_N=$((RUN_N + 1)); w="r$RUN_N"; RUN_NOTE=""
    rm -rf "$SB_HOME" "$SB_TMP"; cp -a "$SB/base-home" "$SB_HOME"; mkdir -p "$SB_TMP"
    [ "$cand" = none ] || tx="$(TX transform "$TS" "$cand" "$relink")"
    cp "$TS" "$SB/tx-$label.jsonl"
    mark="$(wc -l <"$MOCK_LOG")"
    if ! start_session "$w" "$P" --resume "$S"; then
        RUN_NOTE="did not load ($SCREEN_SEEN): $(snippet "$w" 3)"
        kill_window "$w"; TX_NOTE="$tx"; return 1
    fi
    rpid="$SPID"
    if screen_all "$w" | grep -qF "ACK: hello one"; then RUN_NOTE="history shown"; else RUN_NOTE="history NOT shown"; fi
    if ! turn "$w" "$rpid" "$RESUME_PROMPT"; then RUN_NOTE="$RUN_NOTE; no reply: $(snippet "$w" 3)"; fi
    ext="$(TX extract "$MOCK_LOG" "$mark" "$SB/req-$label.json")"
    RUN_NOTE="$RUN_NOTE; request: $ext"
    stop "$rpid"; kill_window "$w"
    TX_NOTE="$tx"
}

resume_run base none 0
verdict INFO "$F base" "$RUN_NOTE"
resume_run base2 none 0
if [ -f "$SB/req-base.json" ] && [ -f "$SB/req-base2.json" ]; then
    verdict INFO "$F determinism" "base vs base2: $(TX compare "$SB/req-base.json" "$SB/req-base2.json")"
else
    verdict FAIL "$F base" "no request from the untouched copy"; spike_finish
fi

# picker_run <label> <candidate|none>: fresh copy of the config, the
# candidate dropped (relinked), a NEW `claude` in $P, `/resume`: the picker's
# line for the session (the one under ❯) in PICKER_LINE; screen in $SB/picker-<label>.txt.
picker_run() {
    local label="$1" cand="$2" w
    RUN_N=$((RUN_N + 1)); w="p$RUN_N"; PICKER_LINE=""
    rm -rf "$SB_HOME" "$SB_TMP"; cp -a "$SB/base-home" "$SB_HOME"; mkdir -p "$SB_TMP"
    [ "$cand" = none ] || TX transform "$TS" "$cand" 1 >/dev/null
    if start_session "$w" "$P"; then
        slash "$w" "/resume"
        wait_screen "$w" "Resume" 10; wait_stable "$w" 1500 10
        screen "$w" >"$SB/picker-$label.txt"
        PICKER_LINE="$(awk '/❯/ {n = NR} {l[NR] = $0} END {if (n) print l[n] "|" l[n + 1]}' "$SB/picker-$label.txt" | sed -E 's/ +/ /g; s/^ //; s/ $//')"
        stop "$SPID"
    else
        PICKER_LINE="(no session: $SCREEN_SEEN)"
    fi
    kill_window "$w"
}

# ---------------------------------------------------------------- 4. candidates
CANDS=()
while read -r k n b u; do
    case "$k" in type:user | type:assistant | total) continue ;; esac
    CANDS+=("$k:$u")
done <"$SB/inventory"
CANDS+=("field:toolUseResult:0")
# ccd's own trim, when given (CCD_TRIM_CMD="target/x86_64-unknown-linux-gnu/release/ccd-bench __trim").
[ -n "${CCD_TRIM_CMD:-}" ] && CANDS+=("ccd-trim:0")
grep -q '"type":"last-prompt".*"leafUuid"' "$TS" && CANDS+=("edit:leaf-to-dead:0")
if [ "${TRIM_NO_PICKER:-}" != 1 ]; then
    picker_run base none
    verdict INFO "$F picker untouched" "$PICKER_LINE"
    while read -r k n b u; do
        case "$k" in type:ai-title | type:last-prompt | type:summary | type:custom-title | type:agent-name)
            picker_run "$k" "$k"; verdict INFO "$F picker without $k" "$PICKER_LINE" ;;
        esac
    done <"$SB/inventory"
fi
RESULTS="$SB/results.tsv"
printf 'candidate\trelink\trecords\tbytes\tbroken\tloads\tidentical\tdiff\n' >"$RESULTS"
for cu in "${CANDS[@]}"; do
    cand="${cu%:*}"; nuuid="${cu##*:}"
    if [ -n "${TRIM_ONLY:-}" ] && ! printf ' %s ' "$TRIM_ONLY" | grep -qF " $cand "; then continue; fi
    relinks=(0)
    [ "$nuuid" -gt 0 ] && [ "$cand" != dead-branch ] && relinks=(0 1)
    for rl in "${relinks[@]}"; do
        label="$(printf '%s' "$cand-$rl" | tr -c 'A-Za-z0-9_.-' '_')"
        rm -f "$SB/req-$label.json"
        if resume_run "$label" "$cand" "$rl"; then loads=yes; else loads=no; fi
        recs="$(printf '%s' "$TX_NOTE" | sed -nE 's/^(dropped|edited|stripped [^ ]+ from) ([0-9]+) records.*/\2/p')"
        bytes="$(printf '%s' "$TX_NOTE" | sed -nE 's/.*records, ([0-9]+) bytes.*/\1/p')"
        broken="$(printf '%s' "$TX_NOTE" | sed -nE 's/.*broken links ([0-9]+).*/\1/p')"
        if [ -f "$SB/req-$label.json" ]; then
            d="$(TX compare "$SB/req-base.json" "$SB/req-$label.json")"
        else
            d="no request"
        fi
        same=no; [ "$d" = same ] && same=yes
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cand" "$rl" "$recs" "$bytes" "$broken" "$loads" "$same" "$d" >>"$RESULTS"
        verdict INFO "$F drop $cand relink=$rl" "$TX_NOTE; $RUN_NOTE; first request vs untouched: $d"
    done
done
# Everything that was lossless on its own (relinked where it has uuids), at once.
if [ -z "${TRIM_ONLY:-}" ]; then
    set_cands="$(awk -F'\t' 'NR > 1 && $7 == "yes" && $1 != "bookkeeping" {print $1}' "$RESULTS" | sort -u | paste -sd+)"
    if [ -n "$set_cands" ]; then
        resume_run all-lossless "set:$set_cands" 1 && loads=yes || loads=no
        d="$(TX compare "$SB/req-base.json" "$SB/req-all-lossless.json" 2>/dev/null || echo "no request")"
        same=no; [ "$d" = same ] && same=yes
        recs="$(printf '%s' "$TX_NOTE" | tail -1 | sed -nE 's/^dropped ([0-9]+) records.*/\1/p')"
        bytes="$(printf '%s' "$TX_NOTE" | tail -1 | sed -nE 's/.*records, ([0-9]+) bytes.*/\1/p')"
        broken="$(printf '%s' "$TX_NOTE" | tail -1 | sed -nE 's/.*broken links ([0-9]+).*/\1/p')"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "all of the above that were identical" 1 "$recs" "$bytes" "$broken" "$loads" "$same" "$d" >>"$RESULTS"
        verdict INFO "$F drop all lossless at once" "$set_cands: $(printf '%s' "$TX_NOTE" | paste -sd' '); $RUN_NOTE; first request vs untouched: $d"
        verdict INFO "$F size" "$(wc -c <"$SB/original.jsonl") bytes -> $(wc -c <"$SB/tx-all-lossless.jsonl") bytes"
    fi
fi
echo
column -t -s "$(printf '\t')" "$RESULTS"
spike_finish
