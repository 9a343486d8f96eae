#!/usr/bin/env bash
# One command: install what is missing, build everything, run the whole test suite and print ctest's summary.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh" --gui
# Where the project's Python venv exists, ctest also runs the training recipes' smoke tests (tests/CMakeLists.txt);
# their corpus-builder part reads a few small Debian packages: install them too, so those tests run, not skip.
venv=${SPECSCOPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/specscope/venv}
if [[ -x "$venv/bin/python" ]]; then "$here/training/corpus/fetch_sources.sh"; fi
"$here/scripts/build.sh"
build=${SPECSCOPE_BUILD_DIR:-$here/build}
cd "$build"
ctest --output-on-failure -j "${SPECSCOPE_JOBS:-$(nproc)}" --timeout 900
