# shellcheck shell=bash
# spikes/lib.sh: helpers shared by every spikes/<name>/run.sh. Source it,
# then call `spike_init <name> <path-to-claude>`.
#
# What it gives a spike:
#   - an isolated sandbox: $SB (temp dir), $SB_HOME, $SB_CONFIG
#     (= $SB_HOME/.claude, used as CLAUDE_CONFIG_DIR), $SB_TMP (TMPDIR),
#     $SB_HOME/.claude.json and $SB_CONFIG/.claude.json seeded for $CLAUDE_VERSION;
#   - ccd-mock-api on loopback ($MOCK_URL, log in $SB/mock-*.log);
#   - claude in windows of a tmux server on a PRIVATE socket ($SB/tmux.sock,
#     `-f /dev/null`), remain-on-exit on, so a dead pane keeps its last
#     screen and its exit status;
#   - waits that are always bounded, a trust-dialog answerer that reads the
#     screen before every key, registry/transcript lookups, verdict lines;
#   - cleanup of everything on exit (trap + a watchdog in case the script
#     itself is SIGKILLed): the private tmux server (and so every claude it
#     runs), the mock by pid, the sandbox dir. Nothing outside $SB is
#     touched; no process is killed by name.
#
# Verdict lines (stdout): `PASS|FAIL|INFO <fact>: <detail>`.
#   PASS = agrees with docs/claude-cli-compat.md, FAIL = disagrees (or could not be
#   established), INFO = an observation with no fixed expectation.
#
# Environment:
#   CCD_MOCK_API   path of a built ccd-mock-api (else built with cargo into
#                  the repo's target/)
#   SPIKE_KEEP=1   keep the sandbox dir (printed) for inspection
#   SPIKE_DEBUG=1  log what the helpers do on stderr

SPIKES_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SPIKES_DIR/.." && pwd)"
API_KEY="sk-ant-test-0123456789abcdefghijklmnop"
API_KEY_TAIL="${API_KEY: -20}"
SPIKE_FAILS=0
SB=""
TMUX_SOCK=""
MOCK_PID=""
WATCHDOG_PID=""
BG_PIDS=()   # background helpers a spike started: killed on exit
TMUX_SESSION="spike"

log() { [ "${SPIKE_DEBUG:-}" = 1 ] && echo "  [$(date +%T)] $*" >&2; return 0; }
die() {
    echo "FAIL ${SPIKE_NAME:-spike}: $*"
    exit 2
}

# verdict PASS|FAIL|INFO <fact> <detail...>
verdict() {
    local kind="$1" fact="$2"
    shift 2
    [ "$kind" = FAIL ] && SPIKE_FAILS=$((SPIKE_FAILS + 1))
    printf '%s %s: %s\n' "$kind" "$fact" "$*"
}
# check <cond-exit-status> <fact> <detail-if-pass> <detail-if-fail>
check() {
    if [ "$1" = 0 ]; then verdict PASS "$2" "$3"; else verdict FAIL "$2" "$4"; fi
}

spike_finish() {
    if [ "$SPIKE_FAILS" -gt 0 ]; then exit 1; fi
    exit 0
}

# ---------------------------------------------------------------- cleanup

cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -n "$TMUX_SOCK" ] && [ -S "$TMUX_SOCK" ]; then
        tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
    fi
    # Give the claudes the SIGHUP from their closed terminals a moment.
    sleep 0.3
    local b
    for b in "${BG_PIDS[@]}"; do kill "$b" 2>/dev/null; done
    if [ -n "$MOCK_PID" ]; then kill "$MOCK_PID" 2>/dev/null; wait "$MOCK_PID" 2>/dev/null; fi
    # Processes started in the sandbox that survived (e.g. a SIGSTOPped
    # one): kill them by pid, found by their environment pointing at $SB.
    if [ -n "$SB" ]; then
        local p
        for p in $(sandbox_pids); do kill -9 "$p" 2>/dev/null; done
    fi
    if [ -n "$WATCHDOG_PID" ]; then kill "$WATCHDOG_PID" 2>/dev/null; fi
    if [ -n "$SB" ] && [ -d "$SB" ]; then
        if [ "${SPIKE_KEEP:-}" = 1 ]; then
            echo "INFO sandbox: kept at $SB" >&2
        else
            rm -rf "$SB"
        fi
    fi
    exit "$rc"
}

# Pids whose environment has CLAUDE_CONFIG_DIR=<our sandbox>: only ours.
sandbox_pids() {
    local f pid
    for f in /proc/[0-9]*/environ; do
        pid="${f#/proc/}"; pid="${pid%/environ}"
        [ "$pid" = $$ ] && continue
        [ -O "$f" ] || continue
        if { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxF "CLAUDE_CONFIG_DIR=$SB_CONFIG"; then
            echo "$pid"
        fi
    done
}

# ---------------------------------------------------------------- setup

# spike_init <name> <path-to-claude>
spike_init() {
    SPIKE_NAME="$1"
    CLAUDE="${2:-}"
    [ -n "$CLAUDE" ] || { echo "usage: $0 <path-to-claude>" >&2; exit 2; }
    [ -x "$CLAUDE" ] || { echo "$0: $CLAUDE is not executable" >&2; exit 2; }
    CLAUDE="$(cd "$(dirname "$CLAUDE")" && pwd)/$(basename "$CLAUDE")"
    command -v tmux >/dev/null || { echo "$0: tmux is needed" >&2; exit 2; }
    command -v python3 >/dev/null || { echo "$0: python3 is needed" >&2; exit 2; }
    SB="$(mktemp -d "${TMPDIR:-/tmp}/ccd-spike-XXXXXX")"
    SB="$(cd "$SB" && pwd -P)"
    SB_HOME="$SB/home"
    SB_CONFIG="$SB_HOME/.claude"
    SB_TMP="$SB/tmp"
    TMUX_SOCK="$SB/tmux.sock"
    mkdir -p "$SB_HOME" "$SB_CONFIG" "$SB_TMP"
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    start_watchdog
    CLAUDE_VERSION="$(sandbox_env "$CLAUDE" --version 2>/dev/null </dev/null | awk '{print $1; exit}')"
    [ -n "$CLAUDE_VERSION" ] || die "'$CLAUDE --version' printed nothing"
    echo "# spike $SPIKE_NAME, claude $CLAUDE_VERSION ($CLAUDE), sandbox $SB"
    seed_claude_json approved
    tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s "$TMUX_SESSION" -n idle -x 160 -y 50 "cat" \
        || die "cannot start tmux"
    tmux -S "$TMUX_SOCK" set-option -g remain-on-exit on >/dev/null
    tmux -S "$TMUX_SOCK" set-option -g history-limit 5000 >/dev/null
}

# Kills our tmux server and mock if this script dies without running its
# trap (SIGKILL). Detached from our process group; only our own things.
start_watchdog() {
    local me=$$
    (
        trap '' HUP INT
        while kill -0 "$me" 2>/dev/null; do sleep 2; done
        tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
        [ -f "$SB/mock.pid" ] && kill "$(cat "$SB/mock.pid")" 2>/dev/null
        [ "${SPIKE_KEEP:-}" = 1 ] || rm -rf "$SB"
    ) </dev/null >/dev/null 2>&1 &
    WATCHDOG_PID=$!
    disown "$WATCHDOG_PID" 2>/dev/null || true
}

# seed_claude_json approved|unapproved [config-dir]
seed_claude_json() {
    local mode="$1"
    python3 - "$mode" "$CLAUDE_VERSION" "$API_KEY_TAIL" "$SB_CONFIG/.claude.json" "$SB_HOME/.claude.json" <<'EOF'
import json, sys
mode, version, tail, *paths = sys.argv[1:]
v = {"hasCompletedOnboarding": True, "lastOnboardingVersion": version, "theme": "dark"}
if mode == "approved":
    v["customApiKeyResponses"] = {"approved": [tail], "rejected": []}
for p in paths:
    with open(p, "w") as f:
        json.dump(v, f, indent=2)
EOF
}

# The mock binary: $CCD_MOCK_API, else built into the repo's target/.
mock_bin() {
    if [ -n "${CCD_MOCK_API:-}" ]; then
        [ -x "$CCD_MOCK_API" ] || die "CCD_MOCK_API=$CCD_MOCK_API is not executable"
        echo "$CCD_MOCK_API"
        return
    fi
    # Where cargo put it (under target/<triple>/ with the repo's
    # .cargo/config.toml): the path it reports.
    local bin
    bin="$(cd "$REPO_ROOT" && cargo build -q -p ccd-mock-api --message-format=json-render-diagnostics |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)" || die "building ccd-mock-api failed"
    [ -x "$bin" ] || die "building ccd-mock-api gave no executable"
    echo "$bin"
}

# start_mock [extra ccd-mock-api flags...]   sets MOCK_URL, MOCK_LOG
start_mock() {
    local bin
    bin="$(mock_bin)" || exit 2
    MOCK_LOG="$SB/mock.log"
    mkfifo "$SB/mock.out"
    "$bin" --port 0 --log "$MOCK_LOG" "$@" >"$SB/mock.out" 2>"$SB/mock.stderr" </dev/null &
    MOCK_PID=$!
    echo "$MOCK_PID" >"$SB/mock.pid"
    local line=""
    read -r -t 10 line <"$SB/mock.out" || true
    # Keep the fifo drained so the mock never blocks on stdout.
    (cat "$SB/mock.out" >/dev/null 2>&1 &)
    case "$line" in
        "listening on "*) MOCK_URL="http://${line#listening on }" ;;
        *) die "ccd-mock-api did not start: '$line' $(cat "$SB/mock.stderr")" ;;
    esac
    log "mock $MOCK_URL pid $MOCK_PID"
}

# Runs a command with the sandbox environment only (env -i: nothing of the
# caller's ANTHROPIC_*/CLAUDE_* leaks in).
sandbox_env() {
    env -i PATH="/usr/local/bin:/usr/bin:/bin" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 \
        HOME="$SB_HOME" CLAUDE_CONFIG_DIR="$SB_CONFIG" TMPDIR="$SB_TMP" \
        ANTHROPIC_BASE_URL="${MOCK_URL:-http://127.0.0.1:9}" ANTHROPIC_API_KEY="$API_KEY" \
        DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "$@"
}

# ---------------------------------------------------------------- tmux

tm() { tmux -S "$TMUX_SOCK" "$@"; }

# launch <window-name> <cwd> [claude args...]   -> prints the claude pid
# The pane runs `exec env -i ... claude`, so the pane pid IS claude's pid
# and the dead pane keeps its exit status.
launch() {
    local name="$1" cwd="$2"
    shift 2
    mkdir -p "$cwd"
    local script="$SB/launch-$name.sh" a
    {
        echo '#!/bin/sh'
        printf 'exec env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8'
        printf ' %q' "HOME=$SB_HOME" "CLAUDE_CONFIG_DIR=$SB_CONFIG" "TMPDIR=$SB_TMP" \
            "ANTHROPIC_BASE_URL=$MOCK_URL" "ANTHROPIC_API_KEY=$API_KEY" \
            DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "$CLAUDE"
        for a in "$@"; do printf ' %q' "$a"; done
        echo
    } >"$script"
    chmod +x "$script"
    tm new-window -d -t "$TMUX_SESSION:" -n "$name" -c "$cwd" "$script" || die "tmux new-window failed"
    local pid
    pid="$(tm display-message -p -t "$TMUX_SESSION:$name" '#{pane_pid}')"
    echo "$pid" >"$SB/pid-$name"
    log "launched $name in $cwd: pid $pid, args: $*"
    echo "$pid"
}

screen() { tm capture-pane -p -t "$TMUX_SESSION:$1" 2>/dev/null; }
# screen_all <window>: the scrollback and the screen, wrapped lines joined
# (a message printed on exit can be scrolled off or wrapped).
screen_all() { tm capture-pane -p -J -S - -t "$TMUX_SESSION:$1" 2>/dev/null; }
send_keys() { local w="$1"; shift; tm send-keys -t "$TMUX_SESSION:$w" "$@"; }
send_text() { tm send-keys -t "$TMUX_SESSION:$1" -l "$2"; }
kill_window() { tm kill-window -t "$TMUX_SESSION:$1" 2>/dev/null; }

# pane_dead <window>: 0 when the process in it has exited
pane_dead() { [ "$(tm display-message -p -t "$TMUX_SESSION:$1" '#{pane_dead}' 2>/dev/null)" = 1 ]; }
# exit_status <window>: the exit status (128+n for a signal), or "" if alive.
# tmux sometimes marks a pane dead (pty EOF) without reaping its process,
# which stays a zombie: then the status is read from /proc/<pid>/stat
# (field 52, exit_code, in waitpid form).
exit_status() {
    local w="$1" st sig pid code
    pane_dead "$w" || { echo ""; return; }
    st="$(tm display-message -p -t "$TMUX_SESSION:$w" '#{pane_dead_status}')"
    sig="$(tm display-message -p -t "$TMUX_SESSION:$w" '#{pane_dead_signal}' 2>/dev/null)"
    if [ -n "$st" ]; then echo "$st"; return; fi
    if [ -n "$sig" ]; then echo $((128 + sig)); return; fi
    pid="$(cat "$SB/pid-$w" 2>/dev/null)"
    code="$(proc_field "$pid" 52)"
    if [ -n "$code" ]; then
        if [ $((code & 127)) -ne 0 ]; then echo $((128 + (code & 127))); else echo $(((code >> 8) & 255)); fi
        return
    fi
    echo "?"
}
# proc_field <pid> <n>: field n of /proc/<pid>/stat (parsed after the last ')')
proc_field() {
    local s
    s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    s="${s##*) }"
    echo "$s" | awk -v n="$2" '{print $(n - 2)}'
}
# proc_alive <pid>: exists and is not a zombie
proc_alive() {
    local st
    st="$(proc_field "$1" 3)" || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}
# wait_exit <window> <timeout-s>: 0 once dead
wait_exit() {
    local w="$1" t="$2" end=$((SECONDS + $2))
    while [ $SECONDS -lt $end ]; do pane_dead "$w" && return 0; sleep 0.2; done
    return 1
}
# wait_pid_gone <pid> <timeout-s>: 0 once gone or a zombie
wait_pid_gone() {
    local end=$((SECONDS + $2))
    while [ $SECONDS -lt $end ]; do proc_alive "$1" || return 0; sleep 0.2; done
    return 1
}

# wait_screen <window> <ERE> <timeout-s>: 0 once the screen matches
wait_screen() {
    local w="$1" re="$2" end=$((SECONDS + $3))
    while [ $SECONDS -lt $end ]; do
        screen "$w" | grep -qE -- "$re" && return 0
        sleep 0.2
    done
    log "timeout waiting for /$re/ in $w; screen:"
    [ "${SPIKE_DEBUG:-}" = 1 ] && screen "$w" >&2
    return 1
}
# wait_screen_gone <window> <ERE> <timeout-s>
wait_screen_gone() {
    local w="$1" re="$2" end=$((SECONDS + $3))
    while [ $SECONDS -lt $end ]; do
        screen "$w" | grep -qE -- "$re" || return 0
        sleep 0.2
    done
    return 1
}
# wait_stable <window> <stable-ms> <timeout-s>: screen unchanged for stable-ms
wait_stable() {
    local w="$1" need="$2" end=$((SECONDS + $3)) last="" now since
    since=$(date +%s%3N)
    while [ $SECONDS -lt $end ]; do
        now="$(screen "$w")"
        if [ "$now" != "$last" ]; then
            last="$now"; since=$(date +%s%3N)
        elif [ $(( $(date +%s%3N) - since )) -ge "$need" ]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# ---------------------------------------------------------------- dialogs

# select_option <window> <ERE of the wanted option line>: moves ❯ onto the
# line matching the ERE by reading the screen before each key, never
# pressing Enter blind. 0 when ❯ is on it (Enter not pressed).
select_option() {
    local w="$1" re="$2" i scr want cur
    for i in 1 2 3 4 5 6 7 8; do
        scr="$(screen "$w")"
        want="$(printf '%s\n' "$scr" | grep -nE -- "$re" | head -1 | cut -d: -f1)"
        cur="$(printf '%s\n' "$scr" | grep -n '❯' | head -1 | cut -d: -f1)"
        [ -n "$want" ] || { log "option /$re/ not on screen"; return 1; }
        [ -n "$cur" ] || { log "no ❯ on screen"; return 1; }
        if [ "$want" = "$cur" ]; then return 0; fi
        if [ "$want" -gt "$cur" ]; then send_keys "$w" Down; else send_keys "$w" Up; fi
        sleep 0.4
    done
    return 1
}

# The option lines of the dialog on screen: the lines from the first one
# that starts (after spaces) with ❯ or a number, up to the footer.
dialog_options() {
    screen "$1" | grep -E -- "^[[:space:]]*(❯[[:space:]]*)?([0-9]+\.[[:space:]]*)?(Yes|No)" |
        sed -E 's/[[:space:]]+$//'
}
# The option the cursor is on (text after ❯).
dialog_selected() {
    screen "$1" | grep -m1 -- '❯' | sed -E 's/^[[:space:]]*❯[[:space:]]*//; s/[[:space:]]+$//'
}

TRUST_RE="trust this folder"
# answer_trust <window> [timeout-s]: waits for the trust dialog, moves to
# "Yes, I trust this folder", presses Enter, checks the dialog is gone.
answer_trust() {
    local w="$1" t="${2:-30}"
    wait_screen "$w" "$TRUST_RE" "$t" || { log "no trust dialog in $w"; return 1; }
    wait_stable "$w" 1000 10
    select_option "$w" "Yes, I trust this folder" || return 1
    send_keys "$w" Enter
    wait_screen_gone "$w" "Yes, I trust this folder" 10 || return 1
    log "trusted in $w"
}

# ---------------------------------------------------------------- registry

reg_file() { echo "$SB_CONFIG/sessions/$1.json"; }
# wait_registry <pid> <timeout-s>: 0 once sessions/<pid>.json parses
wait_registry() {
    local f end=$((SECONDS + $2))
    f="$(reg_file "$1")"
    while [ $SECONDS -lt $end ]; do
        [ -f "$f" ] && jget "$f" sessionId >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}
# jget <json-file> <key> : prints the value ("" if absent; JSON for non-strings)
jget() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    v = json.load(f)
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
if v is None:
    print("")
elif isinstance(v, str):
    print(v)
else:
    print(json.dumps(v))
EOF
}
reg_get() { local f; f="$(reg_file "$1")"; [ -f "$f" ] && jget "$f" "$2" 2>/dev/null; }
# The registry entries now, one line each: "<pid> <sessionId> <status>"
reg_list() {
    python3 - "$SB_CONFIG/sessions" <<'EOF'
import json, os, re, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
    if re.fullmatch(r"\d+\.json", n):
        try:
            v = json.load(open(os.path.join(d, n)))
            print(v.get("pid"), v.get("sessionId"), v.get("status"))
        except Exception:
            pass
EOF
}
# wait_status <pid> <status> <timeout-s>
wait_status() {
    local end=$((SECONDS + $3))
    while [ $SECONDS -lt $end ]; do
        [ "$(reg_get "$1" status)" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
# Field 22 (starttime) of /proc/<pid>/stat, parsed after the last ')'.
proc_start() { proc_field "$1" 22; }

# ---------------------------------------------------------------- transcripts

# transcript <sid>: the path of projects/*/<sid>.jsonl (first found), or ""
transcript() {
    local f
    for f in "$SB_CONFIG"/projects/*/"$1".jsonl; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    echo ""
    return 1
}
# wait_transcript_text <sid> <text> <timeout-s>: 0 once an assistant record
# of the transcript contains text
wait_transcript_text() {
    local end=$((SECONDS + $3)) f
    while [ $SECONDS -lt $end ]; do
        f="$(transcript "$1")"
        if [ -n "$f" ] && grep '"type":"assistant"' "$f" 2>/dev/null | grep -qF -- "$2"; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}
# files_with_reply <text>: transcripts (relative to the config dir) with an
# assistant record that contains "ACK: <text>", comma-separated
files_with_reply() {
    local f out=""
    for f in "$SB_CONFIG"/projects/*/*.jsonl; do
        [ -f "$f" ] || continue
        grep '"type":"assistant"' "$f" 2>/dev/null | grep -qF -- "ACK: $1" && out="$out,${f#"$SB_CONFIG"/}"
    done
    echo "${out#,}"
}
# The slug of a cwd: every UTF-16 unit outside [A-Za-z0-9] -> '-'
slug() { python3 -c 'import re,sys; print(re.sub(r"[^A-Za-z0-9]", "-", sys.argv[1]))' "$1"; }

# ---------------------------------------------------------------- turns

# wait_ready <window> <pid> [timeout-s]: registry entry present, prompt on
# screen, screen still for 1 s (input sent earlier can be lost, see
# docs/claude-cli-compat.md).
wait_ready() {
    local w="$1" pid="$2" t="${3:-30}"
    wait_registry "$pid" "$t" || return 1
    wait_screen "$w" '❯' 10 || return 1
    wait_stable "$w" 1000 10
}
# prompt <window> <text>: types text and submits it
prompt() {
    send_text "$1" "$2"
    sleep 0.5
    send_keys "$1" Enter
}
# turn <window> <pid> <text> [timeout-s]: submits text, waits for the reply
# "ACK: <text>" in the session's transcript (the sid read from the registry
# at the end, as it may change) and the status back to idle.
turn() {
    local w="$1" pid="$2" text="$3" t="${4:-40}" sid end
    prompt "$w" "$text"
    end=$((SECONDS + t))
    while [ $SECONDS -lt $end ]; do
        sid="$(reg_get "$pid" sessionId)"
        if [ -n "$sid" ] && wait_transcript_text "$sid" "ACK: $text" 1; then
            wait_status "$pid" idle 10
            return 0
        fi
        # A submit lost to the mount race: the text is still in the box.
        if [ $((end - SECONDS)) -lt $((t - 8)) ] && screen "$w" | grep -qF "❯ $text"; then
            log "resubmitting in $w"; send_keys "$w" Enter; sleep 1
        fi
    done
    return 1
}

# start_session <window> <cwd> [claude args...]: launches claude, answers
# the trust dialog if it shows, waits until ready. Sets SPID (the pid).
# Returns 0 ready, 1 timeout, 2 the process exited, 3 another screen
# blocks (API-key dialog). SCREEN_SEEN records what was seen on the way.
start_session() {
    local w="$1" cwd="$2" end
    shift 2
    SPID="$(launch "$w" "$cwd" "$@")"
    SCREEN_SEEN=""
    end=$((SECONDS + 40))
    while [ $SECONDS -lt $end ]; do
        if [ -f "$(reg_file "$SPID")" ]; then
            wait_ready "$w" "$SPID" 20 && return 0
            return 1
        fi
        pane_dead "$w" && { SCREEN_SEEN="$SCREEN_SEEN dead"; return 2; }
        local scr
        scr="$(screen "$w")"
        if printf '%s' "$scr" | grep -q "$TRUST_RE"; then
            SCREEN_SEEN="$SCREEN_SEEN trust"
            answer_trust "$w" 10 || return 1
        elif printf '%s' "$scr" | grep -q "Detected a custom API key"; then
            SCREEN_SEEN="$SCREEN_SEEN apikey"
            return 3
        fi
        sleep 0.2
    done
    return 1
}

# slash <window> <command>: types a slash command, checks it is in the box, Enter
slash() {
    send_text "$1" "$2"
    wait_screen "$1" "❯ *$2" 5
    sleep 0.5
    send_keys "$1" Enter
}
