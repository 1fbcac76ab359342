#!/usr/bin/env bash
# Records the real Claude Code CLI's screens, offline: every recording of
# tests/recordings/claude-cli/ for one installed CLI version.
#
#   tests/real-cli/record.sh <path-to-claude> [outdir [scenario...]]
#
# Scenarios (default: all, in this order); each writes
# <outdir>/<scenario>-<version>.bin (raw PTY output, 120x40,
# TERM=xterm-256color) and a .json beside it: version, rows, cols, keys,
# args, chunk_ends (byte offsets where each step ended), total, and cwd (the
# folder the CLI ran in, as shown on screen).
#
#   trust-dialog      fresh untrusted folder: the trust dialog, the keys that
#                     trust it, the prompt; then SIGTERM and the CLI's exit
#                     (terminal restored) is kept.     ends: [dialog, each key…]
#   api-key-dialog    trusted folder, a seed whose customApiKeyResponses does
#                     not approve the key: "Detected a custom API key…";
#                     no key sent.                     ends: [dialog]
#   resume-not-found  `--resume <random uuid>` in a fresh untrusted folder:
#                     the trust dialog if the CLI shows one (trusted with the
#                     keys below), then the error, kept until the CLI exits.
#                                                      ends: [dialog, each key…]
#   permission-bash   trusted folder (2.1.1xx in its default mode, later
#   permission-write  versions with `--permission-mode manual`): prompt up,
#                     `TOOL:echo hi > out.txt` / `WRITE:<folder>/new.txt`
#                     typed, Enter, the permission dialog.
#                                                      ends: [prompt, typed, dialog]
#   ready             trusted folder: the idle prompt.  ends: [prompt]
#   mode-cycle        trusted folder, no flag: the prompt, then Shift-Tab
#                     (ESC [ Z) six times, the footer's permission mode
#                     after each.                      ends: [prompt, each key…]
#   mode-cycle-bypass the same started with --dangerously-skip-permissions
#                     (the warning accepted beforehand in the seed:
#                     bypassPermissionsModeAccepted), bypass in the cycle.
#   mode-flag-<mode>  trusted folder, `--permission-mode <mode>` for each of
#                     default acceptEdits plan auto bypassPermissions dontAsk
#                     manual: the prompt, the bypass warning, or the CLI's
#                     refusal and exit.                ends: [what showed]
#
# Run as root (a container), the CLI refuses bypass mode unless IS_SANDBOX=1
# is set: the two bypass scenarios set it.
#
# Every step waits until the screen has been quiet for a while (2.5 s for a
# dialog or the prompt, 1 s after a key; a write that shows at most two
# characters, such as 2.1.332's bullet blinking beside a running tool, does
# not count) and, where it waits for something, until that thing's words are
# in the stream (escape sequences and blanks removed); a step that times out
# fails the recorder. Unless said otherwise the CLI is then killed (SIGKILL,
# by pid) and nothing after is kept.
#
# The trust keys are read from the dialog in the stream, not from the
# version: the option preceded by the pointer (`❯`) is the selection, the
# options' order is their order in the stream, and the recorder presses Down
# (or Up) until "Yes, I trust this folder" is selected, then Enter (2.1.173:
# Enter; 2.1.332: Down, Enter).
#
# Sandbox: a temp HOME/CLAUDE_CONFIG_DIR/TMPDIR per scenario, seeded as in
# docs/claude-cli-compat.md ("Running the real CLI offline"), never the
# machine's ~/.claude; ccd-mock-api on loopback (answers `TOOL:<cmd>` with a
# Bash tool use, `WRITE:<path>` with a Write tool use). Needs python3.
#
# Env: CCD_MOCK_API (a built ccd-mock-api; else `cargo build -p
# ccd-mock-api`), RECORD_ARGS (the CLI's arguments for the permission
# scenarios, space-separated, instead of the per-version default),
# RECORD_DEBUG (a file: a step that times out writes what it got there).
set -euo pipefail

CLAUDE="${1:?usage: $0 <path-to-claude> [outdir [scenario...]]}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUTDIR="${2:-$REPO/tests/recordings/claude-cli}"
shift $(($# < 2 ? $# : 2))
GIVEN="$CLAUDE"
case "$CLAUDE" in */*) ;; *) CLAUDE="$(command -v "$CLAUDE" || true)" ;; esac
[ -n "$CLAUDE" ] && [ -x "$CLAUDE" ] || { echo "$0: $GIVEN is not executable" >&2; exit 2; }
# Absolute: the CLI starts in the scenario's folder.
CLAUDE="$(cd "$(dirname "$CLAUDE")" && pwd)/$(basename "$CLAUDE")"
mkdir -p "$OUTDIR"

MOCK="${CCD_MOCK_API:-}"
if [ -z "$MOCK" ]; then
    # The path cargo reports (target/<triple>/debug/ with the repo's
    # .cargo/config.toml).
    MOCK="$(cd "$REPO" && cargo build -q -p ccd-mock-api --message-format=json-render-diagnostics |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)"
    [ -x "$MOCK" ] || { echo "building ccd-mock-api gave no executable" >&2; exit 2; }
fi

exec python3 - "$CLAUDE" "$OUTDIR" "$MOCK" "$@" <<'EOF'
import fcntl, json, os, pty, re, select, shutil, signal, struct, subprocess
import random, string, sys, termios, time, uuid

claude, outdir, mock, *wanted = sys.argv[1:]
# The values tried with `--permission-mode` (`mode-flag-<value>`): every
# choice either pinned version's --help lists.
MODE_FLAGS = ["default", "acceptEdits", "plan", "auto", "bypassPermissions", "dontAsk",
              "manual"]
ALL = ["trust-dialog", "api-key-dialog", "resume-not-found", "permission-bash",
       "permission-write", "ready", "mode-cycle", "mode-cycle-bypass",
       *[f"mode-flag-{m}" for m in MODE_FLAGS]]
# Shift-Tab presses in the mode-cycle scenarios: more than any cycle's length.
CYCLE_PRESSES = 6
for w in wanted:
    if w not in ALL:
        sys.exit(f"record.sh: unknown scenario {w!r} (known: {' '.join(ALL)})")
scenarios = [s for s in ALL if not wanted or s in wanted]

ROWS, COLS = 40, 120
API_KEY = "sk-ant-test-0123456789abcdefghijklmnop"
KEYS = {"down": b"\x1b[B", "up": b"\x1b[A", "enter": b"\r", "shift-tab": b"\x1b[Z"}
# The sandboxes live in $TMPDIR (as /tmp/ccd-record-XXXXXX/proj), so that
# the folder on screen looks the same in every recording.
root = os.environ.get("TMPDIR") or "/tmp"
made = []


def fail(msg):
    raise SystemExit(f"record.sh: {msg}")


def sandbox(name):
    """A fresh HOME/config/TMPDIR and project folder for one scenario:
    <root>/ccd-record-XXXXXX/proj, the shape (and length) of the folder
    shown on screen in every recording."""
    while True:
        tail = "".join(random.choice(string.ascii_letters + string.digits) for _ in range(6))
        base = os.path.join(root, "ccd-record-" + tail)
        try:
            os.mkdir(base)
            made.append(base)
            break
        except FileExistsError:
            pass
    for d in ("home/.claude", "tmp", "proj"):
        os.makedirs(os.path.join(base, d))
    return base, os.path.realpath(os.path.join(base, "proj"))


def cli_env(base, mock_url):
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "xterm-256color",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "HOME": f"{base}/home", "CLAUDE_CONFIG_DIR": f"{base}/home/.claude",
            "TMPDIR": f"{base}/tmp", "ANTHROPIC_BASE_URL": mock_url,
            "ANTHROPIC_API_KEY": API_KEY, "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def seed(base, version, proj, trusted, key_approved=True, bypass_accepted=False):
    v = {"hasCompletedOnboarding": True, "lastOnboardingVersion": version, "theme": "dark",
         "customApiKeyResponses": {"approved": [API_KEY[-20:]] if key_approved else [],
                                   "rejected": []}}
    if bypass_accepted:
        v["bypassPermissionsModeAccepted"] = True
    if trusted:
        v["projects"] = {proj: {"hasTrustDialogAccepted": True, "allowedTools": []}}
    for p in (f"{base}/home/.claude/.claude.json", f"{base}/home/.claude.json"):
        with open(p, "w") as f:
            json.dump(v, f, indent=2)


ESC = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|.)")


def words(data):
    """The stream's text with escape sequences, controls and blanks removed."""
    t = ESC.sub(b"", bytes(data)).decode("utf-8", "ignore")
    return "".join(c for c in t if not c.isspace() and c >= " ")


class Cli:
    """One claude under a 120x40 PTY; all its output is kept in `data`."""

    def __init__(self, args, env, cwd):
        self.args = args
        self.data = bytearray()
        self.eof = False
        pid, fd = pty.fork()
        if pid == 0:
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
                os.chdir(cwd)
                os.execve(claude, [claude, *args], env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd

    def pump(self, quiet, cap, until=None, what="output"):
        """Read until `until(words since start)` holds (if given) and no output
        came for `quiet` s. Fails after `cap` s; returns at EOF."""
        start = time.time()
        mark = len(self.data)
        last = start
        while True:
            now = time.time()
            if now - start > cap:
                if os.environ.get("RECORD_DEBUG"):
                    with open(os.environ["RECORD_DEBUG"], "wb") as f:
                        f.write(self.data)
                fail(f"{' '.join(self.args) or 'claude'}: no {what} within {cap}s; "
                     f"the last words: {words(self.data)[-600:]!r}")
            if self.eof:
                return
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    b = os.read(self.fd, 65536)
                except OSError:
                    b = b""
                if not b:
                    self.eof = True
                    continue
                self.data.extend(b)
                # A blink (a bullet toggling on and off: one visible
                # character or none) is not output: it never stops.
                if len(words(b)) > 2:
                    last = time.time()
                continue
            seen = len(self.data) > mark or mark > 0
            if seen and now - last >= quiet and (until is None or until(words(self.data[mark:]))):
                return

    def send(self, key):
        os.write(self.fd, KEYS[key] if key in KEYS else key.encode())

    def kill(self, sig=signal.SIGKILL):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def reap(self):
        self.kill()
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def trust_keys(w):
    """Keys that move the trust dialog's selection to "Yes, I trust this
    folder" and confirm it, read from the dialog's words."""
    trust, exit_ = "Yes,Itrustthisfolder", "No,exit"
    it, ie = w.find(trust), w.find(exit_)
    if it < 0 or ie < 0:
        fail(f"trust dialog without its two options in {w[-400:]!r}")
    order = sorted([(it, "trust"), (ie, "exit")])
    labels = [l for _, l in order]
    # The last frame wins: the option the pointer was last drawn in front of.
    sel = None
    for m in re.finditer(r"❯(?:\d+\.)?(Yes,Itrustthisfolder|No,exit)", w):
        sel = "trust" if m.group(1) == trust else "exit"
    if sel is None:
        fail("trust dialog without a pointer")
    moves = labels.index("trust") - labels.index(sel)
    return (["down"] * moves if moves > 0 else ["up"] * -moves) + ["enter"]


def has_trust(w):
    return "Itrustthisfolder" in w


def start_mock():
    p = subprocess.Popen([mock, "--port", "0", "--exit-on-stdin-eof",
                          "--log", os.path.join(made[0], "mock.log")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=open(os.path.join(made[0], "mock.stderr"), "w"))
    line = p.stdout.readline().decode().strip()
    if not line.startswith("listening on "):
        fail(f"mock did not start: {line!r}")
    return p, "http://" + line[len("listening on "):]


def version_of():
    base, _ = sandbox("version")
    env = cli_env(base, "http://127.0.0.1:9")
    out = subprocess.run([claude, "--version"], env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60).stdout.split()
    if not out:
        fail(f"cannot read the version of {claude}")
    return out[0]


def asking_args(version):
    if "RECORD_ARGS" in os.environ:
        return os.environ["RECORD_ARGS"].split()
    # 2.1.332's default permission mode is auto (no dialog); 2.1.1xx asks.
    return [] if re.match(r"2\.1\.1\d\d$", version) else ["--permission-mode", "manual"]


def record(name, version, mock_url):
    base, proj = sandbox(name)
    env = cli_env(base, mock_url)
    args, keys, ends = [], [], []
    trusted = name not in ("trust-dialog", "resume-not-found")
    seed(base, version, proj, trusted, key_approved=name != "api-key-dialog",
         bypass_accepted=name == "mode-cycle-bypass")
    if name == "mode-cycle-bypass":
        args = ["--dangerously-skip-permissions"]
    if name in ("mode-cycle-bypass", "mode-flag-bypassPermissions"):
        # Run as root (a container), the CLI refuses bypass mode unless told
        # it is in a sandbox: it is.
        env["IS_SANDBOX"] = "1"
    if name.startswith("mode-flag-"):
        args = ["--permission-mode", name[len("mode-flag-"):]]
    if name == "resume-not-found":
        args = ["--resume", str(uuid.uuid4())]
    if name.startswith("permission-"):
        args = asking_args(version)
    cli = Cli(args, env, proj)
    try:
        if name in ("trust-dialog", "resume-not-found"):
            if name == "trust-dialog":
                cli.pump(2.5, 40, has_trust, "trust dialog")
            else:
                # The dialog, or the error and the CLI's exit.
                cli.pump(2.5, 40, lambda w: has_trust(w) or "Noconversationfound" in w,
                         "trust dialog or error")
            if has_trust(words(cli.data)) and not cli.eof:
                ends.append(len(cli.data))
                for k in trust_keys(words(cli.data)):
                    cli.send(k)
                    keys.append(k)
                    if k == "enter":
                        break
                    cli.pump(1.0, 10)
                    ends.append(len(cli.data))
            if name == "trust-dialog":
                cli.pump(2.5, 40, lambda w: "❯" in w, "prompt after trust")
                ends.append(len(cli.data))
                # Let it exit on its own terms: the terminal restore is kept.
                cli.kill(signal.SIGTERM)
                cli.pump(1.0, 10)
            else:
                cli.pump(1.0, 40, lambda w: False, "exit after the error")
        elif name == "api-key-dialog":
            cli.pump(2.5, 40, lambda w: "APIkey" in w, "API key dialog")
            ends.append(len(cli.data))
        elif name == "ready":
            cli.pump(2.5, 40, lambda w: "❯" in w, "prompt")
            ends.append(len(cli.data))
        elif name.startswith("mode-cycle"):
            cli.pump(2.5, 40, lambda w: "❯" in w, "prompt")
            ends.append(len(cli.data))
            for _ in range(CYCLE_PRESSES):
                cli.send("shift-tab")
                keys.append("shift-tab")
                cli.pump(1.0, 10)
                ends.append(len(cli.data))
        elif name.startswith("mode-flag-"):
            # The prompt, a dialog (also drawn with a pointer), or an error
            # and the CLI's exit (kept).
            cli.pump(2.5, 40, lambda w: "❯" in w, "prompt, dialog or exit")
            ends.append(len(cli.data))
        else:
            prompt = ("TOOL:echo hi > out.txt" if name == "permission-bash"
                      else f"WRITE:{proj}/new.txt")
            cli.pump(2.5, 40, lambda w: "❯" in w, "prompt")
            ends.append(len(cli.data))
            cli.send(prompt)
            keys.append("text:" + prompt)
            cli.pump(1.0, 10)
            ends.append(len(cli.data))
            cli.send("enter")
            keys.append("enter")
            cli.pump(2.5, 40, lambda w: "Doyouwantto" in w, "permission dialog")
            ends.append(len(cli.data))
    finally:
        cli.reap()
    data = bytes(cli.data)
    if name != "trust-dialog" and name != "resume-not-found":
        data = data[:ends[-1]]          # nothing after the last step is kept
    out = os.path.join(outdir, f"{name}-{version}")
    with open(out + ".bin", "wb") as f:
        f.write(data)
    meta = {"version": version, "rows": ROWS, "cols": COLS, "keys": keys, "args": args,
            "chunk_ends": ends, "total": len(data), "cwd": proj}
    with open(out + ".json", "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{out}.bin {len(data)} {ends}", flush=True)


mock_proc = None
try:
    version = version_of()
    mock_proc, mock_url = start_mock()
    for s in scenarios:
        t = time.time()
        record(s, version, mock_url)
        print(f"  {s}: {time.time() - t:.1f}s", file=sys.stderr, flush=True)
finally:
    if mock_proc:
        mock_proc.kill()
        mock_proc.wait()
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
EOF
