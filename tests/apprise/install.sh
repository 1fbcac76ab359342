#!/usr/bin/env bash
# Installs Apprise (PyPI, pinned) for the command sink's test
# (crates/ccd/tests/notify.rs, `the_command_sink_through_apprise_posts_...`),
# outside the repository, and prints the absolute path of the `apprise` to use.
#
#   CCD_APPRISE="$(tests/apprise/install.sh)" cargo test -p ccd --test notify apprise
#
# The venv lives in ${CCD_APPRISE_CACHE:-$HOME/.cache/ccd-apprise}/<version>;
# a second run reuses it (no network). Everything but the final path goes to
# stderr. Needs python3 with venv.
set -euo pipefail

version="2.3.0"
cache="${CCD_APPRISE_CACHE:-${HOME:?HOME is not set}/.cache/ccd-apprise}"
venv="$cache/$version"
apprise="$venv/bin/apprise"

die() {
  echo "install.sh: $*" >&2
  exit 1
}

installed() {
  [ -x "$apprise" ] && [ "$("$apprise" --version 2>/dev/null | head -n1 | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -n1)" = "$version" ]
}

if installed; then
  echo "$apprise"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || die "$python not found (set PYTHON, or install python3 and python3-venv)"

mkdir -p "$cache"
if [ ! -x "$venv/bin/pip" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2 ||
    die "cannot create a venv in $venv with $python (on Debian: apt-get install python3-venv)"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "apprise==$version" >&2 ||
  die "pip could not install apprise==$version into $venv"

installed || die "$apprise does not run or is not $version: $("$apprise" --version 2>&1 | head -n1)"
echo "installed apprise $version in $venv" >&2
echo "$apprise"
