#!/usr/bin/env bash
# Installs (once) the Debian packages whose text build_corpus.py reads. Idempotent: does nothing when
# they are all installed already. Needs root (or sudo) and Debian's package registry; see SOURCES.md.
set -euo pipefail
# --with-docs: also the manuals build_corpus.py --with-docs reads (a corpus for a base larger than the shipped one).
pkgs=(wordnet-base dict-jargon dict-devil dict-elements libpython3.11-stdlib)
[[ "${1:-}" == "--with-docs" ]] && pkgs+=(python3.11-doc sqlite3-doc postgresql-doc-15)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "[fetch_sources] all installed: ${pkgs[*]}"
else
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[fetch_sources] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
for p in "${pkgs[@]}"; do
  echo "[fetch_sources] $p $(dpkg-query -W -f='${Version}' "$p")"
done
