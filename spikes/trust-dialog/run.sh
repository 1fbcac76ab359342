#!/usr/bin/env bash
# Trust dialog: layout, default, "No, exit", where trust is recorded,
# subfolders. See README.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
spike_init trust-dialog "${1:-}"
start_mock

proj="$SB/proj"
F="trust-dialog"

# 1. Layout and default, first run in a new folder.
pid="$(launch t1 "$proj")"
if ! wait_screen t1 "$TRUST_RE" 30; then
    verdict FAIL "$F shown" "no 'trust this folder' on screen within 30 s: $(screen t1 | grep -v '^ *$' | head -5 | tr '\n' '|')"
    spike_finish
fi
wait_stable t1 1000 10
opts="$(dialog_options t1)"
sel="$(dialog_selected t1)"
layout="$(printf '%s\n' "$opts" | sed -E 's/^ *//; s/ +/ /g' | paste -sd'|')"
verdict INFO "$F layout" "options (top to bottom): $layout"
first="$(printf '%s\n' "$opts" | head -1)"
case "$first" in
    *"Yes, I trust this folder"*) order=yes-first ;;
    *"No, exit"*) order=no-first ;;
    *) order=unknown ;;
esac
if printf '%s\n' "$opts" | grep -q "Yes, I trust this folder" && printf '%s\n' "$opts" | grep -q "No, exit"; then
    verdict PASS "$F options" "'Yes, I trust this folder' and 'No, exit' both present ($order)"
else
    verdict FAIL "$F options" "expected 'Yes, I trust this folder' and 'No, exit'; saw: $layout"
fi
case "$sel" in
    *"Yes, I trust this folder"*) verdict PASS "$F default" "'$sel' (Enter trusts; as 2.1.173)" ;;
    *"No, exit"*) verdict PASS "$F default" "'$sel' (Enter QUITS; as 2.1.332)" ;;
    *) verdict FAIL "$F default" "cursor on an unknown option: '$sel'" ;;
esac
for t in "Accessing workspace:" "Quick safety check" "Enter to confirm"; do
    if screen t1 | grep -qF "$t"; then verdict PASS "$F text" "'$t' on screen"
    else verdict INFO "$F text" "'$t' NOT on screen (text changed)"; fi
done
if [ -f "$(reg_file "$pid")" ]; then
    verdict FAIL "$F registry before trust" "sessions/$pid.json exists while the dialog is open"
else
    verdict PASS "$F registry before trust" "no sessions/$pid.json while the dialog is open"
fi

# 2. "No, exit" -> status 1 and the message.
if select_option t1 "No, exit"; then
    send_keys t1 Enter
    if wait_exit t1 15; then
        st="$(exit_status t1)"
        msg="$(screen_all t1 | grep -F "isn't trusted" | sed -E 's/^ *//' | head -1)"
        if [ "$st" = 1 ]; then verdict PASS "$F no-exit status" "exit status 1"
        else verdict FAIL "$F no-exit status" "exit status $st (expected 1)"; fi
        if [ -n "$msg" ]; then
            verdict PASS "$F no-exit message" "'$msg'"
        else
            verdict INFO "$F no-exit message" "none printed (the facts quote \"Claude Code didn't start because this folder isn't trusted.\"); last screen: $(screen t1 | grep -v '^ *$' | tail -2 | sed -E 's/^ +//' | paste -sd'|')"
        fi
    else
        verdict FAIL "$F no-exit" "still running 15 s after choosing 'No, exit'"
    fi
else
    verdict FAIL "$F no-exit" "could not put ❯ on 'No, exit'"
fi
trust_of() {
    python3 -c '
import json,sys
try:
    d=json.load(open(sys.argv[1]))
except Exception as e:
    print("unreadable"); sys.exit()
p=d.get("projects",{}).get(sys.argv[2])
print("absent" if p is None else p.get("hasTrustDialogAccepted"))' "$1" "$2"
}
rec="$(trust_of "$SB_CONFIG/.claude.json" "$proj")"
if [ "$rec" = True ]; then verdict FAIL "$F no-exit not recorded" "hasTrustDialogAccepted=true after 'No, exit'"
else verdict PASS "$F no-exit not recorded" "hasTrustDialogAccepted is $rec after 'No, exit'"; fi

# 3. Trusting records hasTrustDialogAccepted under projects[cwd].
pid="$(launch t2 "$proj")"
if answer_trust t2 30 && wait_registry "$pid" 20; then
    verdict PASS "$F accept" "moved ❯ to 'Yes, I trust this folder', Enter: registry entry written"
    sleep 1
    for f in "$SB_CONFIG/.claude.json" "$SB_HOME/.claude.json"; do
        rec="$(trust_of "$f" "$proj")"
        where="${f#"$SB"/}"
        if [ "$f" = "$SB_CONFIG/.claude.json" ]; then
            if [ "$rec" = True ]; then verdict PASS "$F recorded" "$where: projects[\"$proj\"].hasTrustDialogAccepted = true"
            else verdict FAIL "$F recorded" "$where: projects[\"$proj\"].hasTrustDialogAccepted is $rec"; fi
        else
            verdict INFO "$F recorded in \$HOME/.claude.json" "$rec (the CLI uses \$CLAUDE_CONFIG_DIR/.claude.json when set)"
        fi
    done
else
    verdict FAIL "$F accept" "dialog not answered or no registry entry; screen: $(screen t2 | grep -v '^ *$' | head -5 | tr '\n' '|')"
fi

# 4. A subfolder of a trusted folder is trusted (no dialog).
pid="$(launch t3 "$proj/sub/deeper")"
end=$((SECONDS + 30)); seen=""
while [ $SECONDS -lt $end ]; do
    screen t3 | grep -q "$TRUST_RE" && { seen=dialog; break; }
    [ -f "$(reg_file "$pid")" ] && { seen=registry; break; }
    pane_dead t3 && { seen=dead; break; }
    sleep 0.2
done
case "$seen" in
    registry) verdict PASS "$F subfolder" "proj/sub/deeper: no dialog, registry entry written" ;;
    dialog) verdict FAIL "$F subfolder" "the dialog is shown in a subfolder of a trusted folder" ;;
    *) verdict FAIL "$F subfolder" "neither dialog nor registry entry ($seen): $(screen t3 | grep -v '^ *$' | head -5 | tr '\n' '|')" ;;
esac

# 5. A sibling folder (not under the trusted one) still asks.
launch t4 "$SB/other" >/dev/null
if wait_screen t4 "$TRUST_RE" 30; then verdict PASS "$F sibling" "a folder outside the trusted one shows the dialog"
else verdict FAIL "$F sibling" "no dialog in an untrusted sibling folder"; fi

spike_finish
