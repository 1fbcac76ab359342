#!/usr/bin/env bash
# Runs every spike against one claude binary, prints a summary table, and
# exits non-zero if any verdict is FAIL (or a spike failed to run).
#
#     spikes/run-all.sh <path-to-claude> [spike-name...]
#
# Verdict lines of every spike are also kept in $SPIKES_OUT (default: a
# temp file, printed at the end).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
claude="${1:-}"
[ -n "$claude" ] || { echo "usage: $0 <path-to-claude> [spike...]" >&2; exit 2; }
shift
spikes=("$@")
if [ ${#spikes[@]} -eq 0 ]; then
    spikes=(trust-dialog api-key-dialog registry-exit-kinds status resume-fork clear tui-resume)
fi
out="${SPIKES_OUT:-$(mktemp "${TMPDIR:-/tmp}/ccd-spikes-XXXXXX.txt")}"
: >"$out"
declare -A pass fail info secs rcs
bad=0
for s in "${spikes[@]}"; do
    [ -x "$here/$s/run.sh" ] || { echo "no spike $s" >&2; bad=1; continue; }
    start=$SECONDS
    "$here/$s/run.sh" "$claude" 2>&1 | tee -a "$out" | tee "$out.$s"
    rcs[$s]=${PIPESTATUS[0]}
    secs[$s]=$((SECONDS - start))
    pass[$s]=$(grep -c '^PASS ' "$out.$s")
    fail[$s]=$(grep -c '^FAIL ' "$out.$s")
    info[$s]=$(grep -c '^INFO ' "$out.$s")
    rm -f "$out.$s"
    { [ "${rcs[$s]}" != 0 ] || [ "${fail[$s]}" != 0 ]; } && bad=1
done
version="$("$claude" --version 2>/dev/null </dev/null | awk '{print $1; exit}')"
echo
echo "Summary for claude ${version:-?} ($claude)"
printf '%-22s %5s %5s %5s %6s %4s\n' spike PASS FAIL INFO secs rc
for s in "${spikes[@]}"; do
    [ -n "${secs[$s]:-}" ] || continue
    printf '%-22s %5s %5s %5s %6s %4s\n' "$s" "${pass[$s]}" "${fail[$s]}" "${info[$s]}" "${secs[$s]}" "${rcs[$s]}"
done
if grep -q '^FAIL ' "$out"; then
    echo
    echo "FAILs:"
    grep '^FAIL ' "$out"
fi
echo
echo "all verdicts: $out"
exit "$bad"
