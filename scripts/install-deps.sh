#!/usr/bin/env bash
# Installs the Debian packages SpecScope builds against. Idempotent: installs only what is missing.
# Usage: scripts/install-deps.sh [--gui] [--fuzz]   (--gui adds Qt 6 and Dear ImGui for the desktop app, and headless
# Chromium, which the tests use to open the exported web page: tests/html_export_browser_test.cpp; --fuzz adds clang
# and its libFuzzer runtime, for the fuzz targets that scripts/fuzz-replay.sh builds and replays)
set -euo pipefail
want=(build-essential cmake ninja-build pkg-config git
      libspdlog-dev libfmt-dev libsqlite3-dev libgtest-dev libgmock-dev nlohmann-json3-dev libopenblas-dev)
for arg in "$@"; do
  case "$arg" in
    --gui) want+=(qt6-base-dev qt6-charts-dev libqt6opengl6-dev libimgui-dev libgl-dev xvfb xauth mesa-utils
                  libgl1-mesa-dri chromium) ;;
    --fuzz) want+=(clang libclang-rt-dev) ;;
    *) echo "usage: $0 [--gui] [--fuzz]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[install-deps] installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[install-deps] all Debian packages present"
fi
