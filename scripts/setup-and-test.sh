#!/usr/bin/env bash
# One command: install what is missing, build everything, run the whole test suite and print ctest's summary.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh" --gui
"$here/scripts/build.sh"
build=${SPECSCOPE_BUILD_DIR:-$here/build}
cd "$build"
ctest --output-on-failure -j "${SPECSCOPE_JOBS:-$(nproc)}" --timeout 900
