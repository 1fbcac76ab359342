#!/usr/bin/env bash
# Installs ccusage (npm, pinned) for the usage comparison test
# (crates/ccd-usage/tests/ccusage.rs), outside the repository, and prints
# the absolute path of the `ccusage` to use.
#
#   CCD_CCUSAGE="$(tests/ccusage/install.sh)" cargo test -p ccd-usage --test ccusage
#
# 20.0.24 is a native binary (20.0.26 has no linux-x64 package in the
# registry). It lives in ${CCD_CCUSAGE_CACHE:-$HOME/.cache/ccd-ccusage}/<version>;
# a second run reuses it (no network). Everything but the final path goes
# to stderr. Needs npm.
set -euo pipefail

version="20.0.24"
cache="${CCD_CCUSAGE_CACHE:-${HOME:?HOME is not set}/.cache/ccd-ccusage}"
prefix="$cache/$version"
ccusage="$prefix/node_modules/.bin/ccusage"

die() {
  echo "install.sh: $*" >&2
  exit 1
}

installed() {
  [ -x "$ccusage" ] && [ "$("$ccusage" --version 2>/dev/null | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -n1)" = "$version" ]
}

if installed; then
  echo "$ccusage"
  exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found (on Debian: apt-get install npm)"
mkdir -p "$prefix"
npm install --no-audit --no-fund --prefix "$prefix" "ccusage@$version" >&2 ||
  die "npm could not install ccusage@$version"
installed || die "ccusage@$version installed but $ccusage does not run"
echo "$ccusage"
