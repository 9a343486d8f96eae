#!/usr/bin/env bash
# Configures and builds SpecScope into build/ (Release). Extra arguments go to cmake's configure step.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECSCOPE_BUILD_DIR:-$here/build}
jobs=${SPECSCOPE_JOBS:-$(nproc)}
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$jobs"
