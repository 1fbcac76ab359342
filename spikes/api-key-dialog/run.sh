#!/usr/bin/env bash
# The "Detected a custom API key" dialog: shown when the key is not
# approved in .claude.json, its options and default; not shown when it is.
# See README.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
spike_init api-key-dialog "${1:-}"
start_mock
F="api-key"
KEYRE="Detected a custom API key"

# 1. Not approved: the dialog must show (before or after the trust dialog).
seed_claude_json unapproved
pid="$(launch k1 "$SB/proj1")"
end=$((SECONDS + 40)); order=""; seen=""
while [ $SECONDS -lt $end ]; do
    scr="$(screen k1)"
    if printf '%s' "$scr" | grep -q "$KEYRE"; then seen=dialog; order="${order}apikey"; break; fi
    if printf '%s' "$scr" | grep -q "$TRUST_RE"; then order="${order}trust,"; answer_trust k1 10 || break; fi
    [ -f "$(reg_file "$pid")" ] && { seen=registry; break; }
    pane_dead k1 && { seen=dead; break; }
    sleep 0.2
done
if [ "$seen" = dialog ]; then
    wait_stable k1 1000 10
    verdict PASS "$F dialog shown" "'$KEYRE' when the key is not approved (order: $order)"
    q="$(screen k1 | grep -E "Do you want to use this API key" | sed -E 's/^ +//; s/ +$//')"
    verdict INFO "$F question" "'${q:-no question line}'"
    layout="$(dialog_options k1 | sed -E 's/^ *//; s/ +/ /g' | paste -sd'|')"
    verdict INFO "$F options" "$layout"
    sel="$(dialog_selected k1)"
    case "$sel" in
        *"No (recommended)"*) verdict PASS "$F default" "'$sel'" ;;
        *) verdict FAIL "$F default" "'$sel' (the facts: 'No (recommended)')" ;;
    esac
    [ -f "$(reg_file "$pid")" ] && verdict INFO "$F registry" "entry written while the dialog is open" ||
        verdict INFO "$F registry" "no entry while the dialog is open"
    # Enter on the default ("No"): what follows?
    send_keys k1 Enter
    sleep 4
    after="$(screen k1 | grep -v '^ *$' | grep -vE '^[─ ]+$' | head -4 | sed -E 's/[│╭╮─]+/ /g; s/ +/ /g; s/^ //' | paste -sd'|')"
    rej="$(jget "$SB_CONFIG/.claude.json" customApiKeyResponses)"
    verdict INFO "$F after 'No'" "customApiKeyResponses=$rej; alive=$(pane_dead k1 && echo no || echo yes); screen: $after"
else
    verdict FAIL "$F dialog shown" "not shown with an unapproved key (got: ${seen:-timeout}; order: $order): $(screen k1 | grep -v '^ *$' | head -4 | paste -sd'|')"
fi
kill_window k1

# 2. Approved (the tests' seeding): no dialog; straight to the prompt.
seed_claude_json approved
if start_session k2 "$SB/proj2"; then
    if [[ "$SCREEN_SEEN" == *apikey* ]]; then verdict FAIL "$F approved" "dialog shown although approved"
    else verdict PASS "$F approved" "no dialog with customApiKeyResponses.approved = [last 20 chars] (screens:$SCREEN_SEEN)"; fi
else
    verdict FAIL "$F approved" "session did not start ($SCREEN_SEEN): $(screen k2 | grep -v '^ *$' | head -4 | paste -sd'|')"
fi
spike_finish
