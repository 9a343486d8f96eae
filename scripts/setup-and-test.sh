#!/usr/bin/env bash
# One command: install what is missing, build everything, run the whole test suite and print ctest's summary
# (and, with SPECSCOPE_SANITIZE, the sanitizer builds': scripts/sanitize.sh). Exits non-zero when any test fails.
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
status=0
ctest --output-on-failure -j "${SPECSCOPE_JOBS:-$(nproc)}" --timeout 900 || status=1
# Then, when asked for, the sanitizer builds: ASan+UBSan over the engine, session and CLI tests, TSan over the
# threaded ones (scripts/sanitize.sh; SPECSCOPE_SANITIZE=all, asan or tsan). Not yet by default: the ASan build of
# every test executable took 72 minutes on the 2-core development machine while other builds ran, which would
# break CI's 60-minute limit; it stays opt-in until that build is cut down.
sanitize=${SPECSCOPE_SANITIZE:-none}
if [[ $sanitize == none ]]; then
  echo "[setup-and-test] sanitizer builds not run (SPECSCOPE_SANITIZE=all|asan|tsan runs them: scripts/sanitize.sh)"
else
  "$here/scripts/sanitize.sh" "$sanitize" || status=1
fi
exit $status
