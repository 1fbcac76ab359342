# The offline sandbox both recording scripts run the real CLI in (sourced;
# needs CLAUDE and REPO set): a temp HOME/CLAUDE_CONFIG_DIR/TMPDIR seeded as
# docs/claude-cli-compat.md ("Running the real CLI offline") says, the folder
# PROJ pre-trusted, ccd-mock-api on loopback (MOCK_URL), the CLI's VERSION,
# and ARGS: the per-version arguments that let tools run without asking
# (RECORD_ARGS overrides them). Everything is removed, and the mock ended by
# pid, on exit.
# Env: CCD_MOCK_API (a built ccd-mock-api; else `cargo build -p ccd-mock-api`).

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
    # The path cargo reports (target/<triple>/debug/ with the repo's
    # .cargo/config.toml).
    MOCK="$(cd "$REPO" && cargo build -q -p ccd-mock-api --message-format=json-render-diagnostics |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)"
    [ -x "$MOCK" ] || { echo "building ccd-mock-api gave no executable" >&2; exit 2; }
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

if [ -n "${RECORD_ARGS+x}" ]; then
    read -r -a ARGS <<<"$RECORD_ARGS"
else
    case "$VERSION" in
        2.1.1[0-9][0-9]) ARGS=(--allowed-tools=Bash) ;;
        *) ARGS=(--permission-mode acceptEdits --allowed-tools=Bash) ;;
    esac
fi
