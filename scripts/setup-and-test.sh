#!/usr/bin/env bash
# One command: install what is missing, build everything, run the whole test suite and print ctest's summary, then
# the sanitizer builds' (scripts/sanitize.sh). Exits non-zero when any test fails.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/install-deps.sh" --gui --fuzz
# Where the project's Python venv exists, ctest also runs the training recipes' smoke tests (tests/CMakeLists.txt);
# their corpus-builder part reads a few small Debian packages: install them too, so those tests run, not skip.
venv=${SPECSCOPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/specscope/venv}
if [[ -x "$venv/bin/python" ]]; then "$here/training/corpus/fetch_sources.sh"; fi
"$here/scripts/build.sh"
build=${SPECSCOPE_BUILD_DIR:-$here/build}
cd "$build"
status=0
ctest --output-on-failure -j "${SPECSCOPE_JOBS:-$(nproc)}" --timeout 900 || status=1
# Then the sanitizer builds: ASan+UBSan over the engine, session and CLI tests, TSan over the threaded ones
# (scripts/sanitize.sh). On a 2-core Zen 3 host (2026-12-03) they took 34 minutes (ASan build 1,148 s, its tests
# 448 s; TSan build 362 s, its tests 85 s) of .ci/run's 58: the ASan list now leaves out the two longest method tests
# (sanitize.sh says why). SPECSCOPE_SANITIZE=asan, tsan or none runs fewer, e.g. for a quick local run.
sanitize=${SPECSCOPE_SANITIZE:-all}
if [[ $sanitize == none ]]; then
  echo "[setup-and-test] sanitizer builds not run (SPECSCOPE_SANITIZE=none)"
else
  "$here/scripts/sanitize.sh" "$sanitize" || status=1
fi
# Last, every fuzz target built with clang and its committed corpus replayed, regression seeds included
# (scripts/fuzz-replay.sh; about 4 minutes of building on two cores). SPECSCOPE_FUZZ_REPLAY=0 skips it.
if [[ ${SPECSCOPE_FUZZ_REPLAY:-1} == 0 ]]; then
  echo "[setup-and-test] fuzz corpora not replayed (SPECSCOPE_FUZZ_REPLAY=0)"
else
  "$here/scripts/fuzz-replay.sh" || status=1
fi
exit $status
