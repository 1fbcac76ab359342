#!/usr/bin/env bash
# Records Claude Code's tool permission dialog from a real CLI, offline.
#
#   tests/real-cli/record-permission.sh <path-to-claude> [bash|write] [outdir]
#
# Writes <outdir>/permission-<kind>-<version>.bin (raw PTY output, 120x40,
# TERM=xterm-256color) and a .json beside it (version, rows, cols, keys,
# args, chunk_ends, total), the shape of the other recordings in
# tests/recordings/claude-cli/ (default outdir).
#
# Steps: a temp HOME/CLAUDE_CONFIG_DIR/TMPDIR seeded as in
# docs/claude-cli-compat.md ("Running the real CLI offline"), with the
# folder already trusted (so no trust dialog); ccd-mock-api on loopback,
# which answers `TOOL:<cmd>` with a Bash tool use and `WRITE:<path>` with a
# Write tool use; claude started in a fresh folder (2.1.332 and later with
# `--permission-mode manual`, since its default mode is auto). Once the
# prompt is up and quiet the prompt text is typed, then Enter; the output is
# kept until the screen has been quiet for 2.5 s (the dialog is stable). The
# CLI is then killed (by pid) and nothing after that point is kept.
#
# chunk_ends: [prompt up, text typed, dialog stable]. Env: CCD_MOCK_API (a
# built ccd-mock-api; else `cargo build -p ccd-mock-api`), RECORD_ARGS (the
# CLI's arguments, instead of the per-version default).
set -euo pipefail

CLAUDE="${1:?usage: $0 <path-to-claude> [bash|write] [outdir]}"
KIND="${2:-bash}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUTDIR="${3:-$REPO/tests/recordings/claude-cli}"
API_KEY="sk-ant-test-0123456789abcdefghijklmnop"

SB="$(mktemp -d "${TMPDIR:-/tmp}/ccd-record-XXXXXX")"
MOCK_PID=""
cleanup() {
    if [ -n "$MOCK_PID" ]; then kill "$MOCK_PID" 2>/dev/null || true; fi
    rm -rf "$SB"
}
trap cleanup EXIT

MOCK="${CCD_MOCK_API:-}"
if [ -z "$MOCK" ]; then
    (cd "$REPO" && cargo build -q -p ccd-mock-api)
    MOCK="$REPO/target/debug/ccd-mock-api"
fi

mkdir -p "$SB/home/.claude" "$SB/tmp" "$SB/proj"
PROJ="$(cd "$SB/proj" && pwd -P)"
VERSION="$(env -i PATH=/usr/bin:/bin HOME="$SB/home" CLAUDE_CONFIG_DIR="$SB/home/.claude" \
    TMPDIR="$SB/tmp" "$CLAUDE" --version </dev/null 2>/dev/null | awk '{print $1; exit}')"
[ -n "$VERSION" ] || { echo "$0: cannot read the version of $CLAUDE" >&2; exit 2; }

python3 - "$VERSION" "${API_KEY: -20}" "$PROJ" "$SB/home/.claude/.claude.json" "$SB/home/.claude.json" <<'EOF'
import json, sys
version, tail, proj, *paths = sys.argv[1:]
v = {"hasCompletedOnboarding": True, "lastOnboardingVersion": version, "theme": "dark",
     "customApiKeyResponses": {"approved": [tail], "rejected": []},
     "projects": {proj: {"hasTrustDialogAccepted": True, "allowedTools": []}}}
for p in paths:
    with open(p, "w") as f:
        json.dump(v, f, indent=2)
EOF

mkfifo "$SB/mock.out"
"$MOCK" --port 0 --log "$SB/mock.log" >"$SB/mock.out" 2>"$SB/mock.stderr" </dev/null &
MOCK_PID=$!
read -r -t 10 line <"$SB/mock.out" || true
(cat "$SB/mock.out" >/dev/null 2>&1 &)
case "$line" in
    "listening on "*) MOCK_URL="http://${line#listening on }" ;;
    *) echo "$0: mock did not start: $line" >&2; exit 2 ;;
esac

case "$KIND" in
    bash) PROMPT="TOOL:echo hi > out.txt" ;;
    write) PROMPT="WRITE:$PROJ/new.txt" ;;
    *) echo "$0: kind is bash or write" >&2; exit 2 ;;
esac
# 2.1.332's default permission mode is auto (no dialog): ask for manual.
# 2.1.1xx asks in its default mode. RECORD_ARGS (space-separated) overrides.
if [ -n "${RECORD_ARGS+x}" ]; then
    read -r -a ARGS <<<"$RECORD_ARGS"
else
    case "$VERSION" in 2.1.1[0-9][0-9]) ARGS=() ;; *) ARGS=(--permission-mode manual) ;; esac
fi

cd "$PROJ"
env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 \
    HOME="$SB/home" CLAUDE_CONFIG_DIR="$SB/home/.claude" TMPDIR="$SB/tmp" \
    ANTHROPIC_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY="$API_KEY" \
    DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    python3 - "$OUTDIR/permission-$KIND-$VERSION" "$VERSION" "$PROMPT" "$CLAUDE" "${ARGS[@]}" <<'EOF'
import fcntl, json, os, pty, select, signal, struct, sys, termios, time

out, version, prompt, claude, *args = sys.argv[1:]
ROWS, COLS = 40, 120
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    os.execv(claude, [claude, *args])
data = bytearray()

def pump(quiet, cap):
    """Read until no output for `quiet` s (at most `cap` s)."""
    start = last = time.time()
    while time.time() - start < cap:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                b = os.read(fd, 65536)
            except OSError:
                return False
            if not b:
                return False
            data.extend(b)
            last = time.time()
        elif time.time() - last >= quiet and data:
            return True
    return True

ends = []
try:
    pump(2.5, 30)                      # prompt up and quiet
    ends.append(len(data))
    os.write(fd, prompt.encode())
    pump(1.0, 10)
    ends.append(len(data))
    os.write(fd, b"\r")
    pump(2.5, 40)                      # dialog up and stable
    ends.append(len(data))
finally:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
with open(out + ".bin", "wb") as f:
    f.write(data)
meta = {"version": version, "rows": ROWS, "cols": COLS,
        "keys": ["text:" + prompt, "enter"], "args": args,
        "chunk_ends": ends, "total": len(data)}
with open(out + ".json", "w") as f:
    json.dump(meta, f, indent=1)
    f.write("\n")
print(out + ".bin", len(data), ends)
EOF
