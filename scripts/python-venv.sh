#!/usr/bin/env bash
# Creates (once) and prints the path of the Python venv used by training/ and the fixture script.
# It lives outside the clone so that it is cached across clones: $SPECSCOPE_VENV or ~/.cache/specscope/venv.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${SPECSCOPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/specscope/venv}
req="$here/training/requirements.txt"
stamp="$venv/.requirements.sha256"
sum=$(sha256sum "$req" | cut -d' ' -f1)
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$sum" ]]; then
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get install -y -qq python3-venv >&2
  fi
  echo "[python-venv] creating $venv (first time only; torch is large)" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip >&2
  "$venv/bin/pip" install -q -r "$req" >&2
  echo "$sum" > "$stamp"
fi
echo "$venv"
