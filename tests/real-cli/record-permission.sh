#!/usr/bin/env bash
# Records Claude Code's tool permission dialog from a real CLI, offline:
# the permission scenarios of tests/real-cli/record.sh (which see).
#
#   tests/real-cli/record-permission.sh <path-to-claude> [bash|write] [outdir]
#
# Writes <outdir>/permission-<kind>-<version>.bin/.json (default outdir:
# tests/recordings/claude-cli/).
set -euo pipefail

CLAUDE="${1:?usage: $0 <path-to-claude> [bash|write] [outdir]}"
KIND="${2:-bash}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "$KIND" in
    bash | write) ;;
    *) echo "$0: kind is bash or write" >&2; exit 2 ;;
esac
exec "$HERE/record.sh" "$CLAUDE" "${3:-$HERE/../recordings/claude-cli}" "permission-$KIND"
