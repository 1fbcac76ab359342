#!/usr/bin/env bash
# Records the real CLI's transcripts of a short conversation, byte for byte,
# for the usage figures (crates/ccd-usage/tests/ccusage.rs compares ccd's
# totals with ccusage's on them).
#
#   tests/real-cli/record-usage.sh <path-to-claude> [outdir]
#
# Writes <outdir>/usage-<version>.jsonl (default outdir:
# tests/recordings/claude-cli/): the session's main transcript as the CLI
# wrote it (no redaction, no re-serialization: a plain byte copy), and each
# subagent transcript as usage-<version>-subagent-<n>.jsonl.
#
# Steps: a temp HOME/CLAUDE_CONFIG_DIR/TMPDIR seeded as in
# docs/claude-cli-compat.md ("Running the real CLI offline"), the folder
# pre-trusted; ccd-mock-api on loopback (its default usage: 1200 input,
# 300 cache creation, 4500 cache read, 42 output tokens per reply); claude
# started in the fresh folder with tools allowed so that nothing asks (as
# record-background.sh). Prompts typed, each once the previous turn ended
# (a `turn_duration` system record):
#   1. TOOL:echo usage-1 > one.txt      (a Bash tool use, its result, a reply)
#   2. hello again                      (a plain reply)
#   3. AGENT:TOOL:echo usage-sub > sub.txt
#      (a subagent that runs that command, then ends in text; on 2.1.332
#      subagents run in the background)
# After the third, once sub.txt exists, the transcripts are left to settle
# (no file grows for 4 s), the CLI is killed (by pid), then copied.
#
# Env: CCD_MOCK_API (a built ccd-mock-api; else `cargo build -p ccd-mock-api`),
# RECORD_ARGS (the CLI's arguments, instead of the per-version default).
set -euo pipefail

CLAUDE="${1:?usage: $0 <path-to-claude> [outdir]}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUTDIR="${2:-$REPO/tests/recordings/claude-cli}"
# shellcheck source=tests/real-cli/offline.sh
. "$REPO/tests/real-cli/offline.sh"


cd "$PROJ"
env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 \
    HOME="$SB/home" CLAUDE_CONFIG_DIR="$SB/home/.claude" TMPDIR="$SB/tmp" \
    ANTHROPIC_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY="$API_KEY" \
    DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    python3 - "$OUTDIR/usage-$VERSION" "$SB/home/.claude/projects" "$PROJ/sub.txt" \
        "$CLAUDE" "${ARGS[@]}" <<'EOF'
import fcntl, glob, json, os, pty, select, shutil, signal, struct, sys, termios, time

out, projects, marker, claude, *args = sys.argv[1:]
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

def main_transcript():
    files = glob.glob(f"{projects}/*/*.jsonl")
    return files[0] if len(files) == 1 else None

def turns_ended():
    path = main_transcript()
    if not path:
        return 0
    n = 0
    for line in open(path, "rb").read().split(b"\n"):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "system" and r.get("subtype") == "turn_duration":
            n += 1
    return n

def sizes():
    return sorted((p, os.path.getsize(p)) for p in glob.glob(f"{projects}/**/*.jsonl", recursive=True))

def send(prompt):
    os.write(fd, prompt.encode())
    pump(1.0)
    os.write(fd, b"\r")

def wait(cond, secs, what):
    deadline = time.time() + secs
    while time.time() < deadline:
        pump(0.1)
        if cond():
            return
    sys.exit(f"timed out waiting for {what}")

killed = False
try:
    pump(30, quiet=2.5)                  # prompt up and quiet
    send("TOOL:echo usage-1 > one.txt")
    wait(lambda: turns_ended() >= 1, 60, "the first turn's end")
    pump(3, quiet=1.5)
    send("hello again")
    wait(lambda: turns_ended() >= 2, 60, "the second turn's end")
    pump(3, quiet=1.5)
    send("AGENT:TOOL:echo usage-sub > sub.txt")
    wait(lambda: os.path.exists(marker), 60, "sub.txt")
    wait(lambda: turns_ended() >= 3, 60, "the third turn's end")
    last, since = sizes(), time.time()
    while time.time() - since < 4:
        pump(0.2)
        now = sizes()
        if now != last:
            last, since = now, time.time()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    killed = True
    main = main_transcript()
    shutil.copyfile(main, f"{out}.jsonl")
    print(f"{out}.jsonl")
    subs = sorted(glob.glob(os.path.join(main[:-len(".jsonl")], "subagents", "*.jsonl")))
    for i, p in enumerate(subs, 1):
        shutil.copyfile(p, f"{out}-subagent-{i}.jsonl")
        print(f"{out}-subagent-{i}.jsonl")
finally:
    if not killed:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
EOF
