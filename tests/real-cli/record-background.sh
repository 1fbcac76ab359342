#!/usr/bin/env bash
# Records what Claude Code's transcript says while background work runs and
# once it settles, from a real CLI, offline.
#
#   tests/real-cli/record-background.sh <path-to-claude> [bash|agent|fg-agent] [outdir]
#
# Writes <outdir>/transcript-background-<kind>-<version>-running.jsonl and
# ...-settled.jsonl (default outdir: tests/recordings/claude-cli/): copies of
# the session's main transcript, with strings longer than 1500 characters
# (200 in attachment and api-request* records: system prompts, tool lists)
# replaced by "<redacted N chars>".
#
# Steps: a temp HOME/CLAUDE_CONFIG_DIR/TMPDIR seeded as in
# docs/claude-cli-compat.md ("Running the real CLI offline"), the folder
# pre-trusted; ccd-mock-api on loopback; claude started in the fresh folder
# with tools allowed so that nothing asks (`--allowed-tools=Bash`, and on
# 2.1.2xx and later also `--permission-mode acceptEdits`: auto mode's
# server-side check of a subagent launch cannot pass against the mock). The
# prompt typed:
#   bash:     BGTOOL:sleep 4; echo bg-done > bg.txt          (a background Bash)
#   agent:    BGAGENT:TOOL:timeout 4 tail -f /dev/null; echo agent-done > bg.txt
#             (a background subagent that runs a 4 s command, then ends in text)
#   fg-agent: AGENT:TOOL:... the same, as a foreground subagent (versions
#             whose Agent tool has run_in_background; later ones always
#             run subagents in the background)
# "running" is copied once the work has started (bash, agent: the turn that
# launched it has ended; fg-agent: the Agent tool use has no result yet)
# while bg.txt does not exist; "settled" once bg.txt exists and the CLI has
# recorded the end (bash, agent: the <task-notification> user record and the
# end of the turn it starts; fg-agent: the Agent tool result and the end of
# the turn). The CLI is then killed (by pid).
#
# Env: CCD_MOCK_API (a built ccd-mock-api; else `cargo build -p ccd-mock-api`),
# RECORD_ARGS (the CLI's arguments, instead of the per-version default).
set -euo pipefail

CLAUDE="${1:?usage: $0 <path-to-claude> [bash|agent|fg-agent] [outdir]}"
KIND="${2:-bash}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUTDIR="${3:-$REPO/tests/recordings/claude-cli}"
# shellcheck source=tests/real-cli/offline.sh
. "$REPO/tests/real-cli/offline.sh"

AGENT_TASK='TOOL:timeout 4 tail -f /dev/null; echo agent-done > bg.txt'
case "$KIND" in
    bash) PROMPT='BGTOOL:sleep 4; echo bg-done > bg.txt' ;;
    agent) PROMPT="BGAGENT:$AGENT_TASK" ;;
    fg-agent) PROMPT="AGENT:$AGENT_TASK" ;;
    *) echo "$0: kind is bash, agent or fg-agent" >&2; exit 2 ;;
esac

cd "$PROJ"
env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 \
    HOME="$SB/home" CLAUDE_CONFIG_DIR="$SB/home/.claude" TMPDIR="$SB/tmp" \
    ANTHROPIC_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY="$API_KEY" \
    DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    python3 - "$OUTDIR/transcript-background-$KIND-$VERSION" "$KIND" "$PROMPT" \
        "$SB/home/.claude/projects" "$PROJ/bg.txt" "$CLAUDE" "${ARGS[@]}" <<'EOF'
import fcntl, glob, json, os, pty, select, signal, struct, sys, termios, time

out, kind, prompt, projects, marker, claude, *args = sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    os.execv(claude, [claude, *args])

def pump(secs, quiet=None):
    """Reads the PTY for `secs` s (or until `quiet` s without output)."""
    start = last = time.time()
    while time.time() - start < secs:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                if not os.read(fd, 65536):
                    sys.exit("claude exited")
            except OSError:
                sys.exit("claude exited")
            last = time.time()
        elif quiet and time.time() - last >= quiet:
            return

def transcript():
    files = glob.glob(f"{projects}/*/*.jsonl")
    return files[0] if len(files) == 1 else None

def records(path):
    rs = []
    for line in open(path, "rb").read().split(b"\n"):
        try:
            rs.append(json.loads(line))
        except ValueError:
            pass
    return rs

def turn_ended_after(rs, i):
    return any(r.get("type") == "system" and r.get("subtype") == "turn_duration" for r in rs[i + 1:])

def agent_use(rs):
    for r in rs:
        for b in (r.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") in ("Agent", "Task"):
                return b["id"]

def has_result(rs, tid):
    return any(isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == tid
               for r in rs for b in ((r.get("message") or {}).get("content") or [])
               if isinstance((r.get("message") or {}).get("content"), list))

def notified(rs):
    """Index of the task-notification user record, or None."""
    for i, r in enumerate(rs):
        if r.get("type") == "user" and (r.get("origin") or {}).get("kind") == "task-notification":
            return i

def running(rs):
    if kind == "fg-agent":
        tid = agent_use(rs)
        return tid is not None and not has_result(rs, tid)
    return turn_ended_after(rs, 0) and notified(rs) is None

def settled(rs):
    if kind == "fg-agent":
        tid = agent_use(rs)
        if tid is None or not has_result(rs, tid):
            return False
        i = max(i for i, r in enumerate(rs) if r.get("type") == "user")
        return turn_ended_after(rs, i)
    i = notified(rs)
    return i is not None and turn_ended_after(rs, i)

# Records that only describe the request (prompts, tool lists, context).
BULKY = ("attachment", "api-request", "api-request-blob", "api-request-shape")

def redact(v, limit):
    if isinstance(v, str):
        return v if len(v) <= limit else f"<redacted {len(v)} chars>"
    if isinstance(v, list):
        return [redact(x, limit) for x in v]
    if isinstance(v, dict):
        return {k: redact(x, limit) for k, x in v.items()}
    return v

def save(path, suffix):
    lines = open(path, "rb").read().split(b"\n")
    with open(f"{out}-{suffix}.jsonl", "w") as f:
        for line in lines:
            try:
                r = json.loads(line)
                limit = 200 if r.get("type") in BULKY else 1500
                f.write(json.dumps(redact(r, limit), ensure_ascii=False) + "\n")
            except ValueError:
                pass  # a line still being written
    print(f"{out}-{suffix}.jsonl")

try:
    pump(30, quiet=2.5)                  # prompt up and quiet
    os.write(fd, prompt.encode())
    pump(1.0)
    os.write(fd, b"\r")
    got_running = False
    deadline = time.time() + 60
    while time.time() < deadline:
        pump(0.05)
        path = transcript()
        if not path:
            continue
        if not got_running:
            rs = records(path)
            if os.path.exists(marker):
                sys.exit("the work ended before a running state was seen")
            if running(rs):
                save(path, "running")
                got_running = True
        elif os.path.exists(marker) and settled(records(path)):
            pump(0.5)                    # let the last records land
            save(path, "settled")
            break
    else:
        sys.exit("timed out")
finally:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
EOF
