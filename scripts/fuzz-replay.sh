#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/CMakeLists.txt: clang, ASan + UBSan) and replays its committed corpus in
# fuzz/corpus/<target without "fuzz_">, regression seeds included, once each (-runs=0: no new inputs), so that a
# parser change that brings back a fixed crash, or a target that no longer builds, fails the tests
# (scripts/setup-and-test.sh runs it after the sanitizer builds). Fuzzing for new inputs is a separate, longer run
# (fuzz/CMakeLists.txt's comment has the commands). Prints each target's result and the wall time; exits non-zero
# when a build or a replay fails. Build folder: build-fuzz/ (SPECSCOPE_FUZZ_DIR).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${SPECSCOPE_FUZZ_DIR:-$here/build-fuzz}
jobs=${SPECSCOPE_JOBS:-$(nproc)}
if ! command -v clang++ > /dev/null; then
  echo "[fuzz-replay] clang++ is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
start=$(date +%s)
targets=()
for src in "$here"/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
echo "[fuzz-replay] building ${#targets[@]} fuzz targets in $dir"
CC=clang CXX=clang++ cmake -S "$here" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPECSCOPE_FUZZ=ON \
  -DSPECSCOPE_TESTS=OFF -DSPECSCOPE_GUI=OFF -DSPECSCOPE_CUDA=OFF > "$dir.configure.log" 2>&1 ||
  { echo "[fuzz-replay] configure failed: $dir.configure.log" >&2; exit 1; }
if ! ninja -C "$dir" -j "$jobs" "${targets[@]}" > "$dir.build.log" 2>&1; then
  grep -E "error|FAILED" "$dir.build.log" | head -20 >&2
  echo "[fuzz-replay] build failed: $dir.build.log" >&2
  exit 1
fi
built=$(date +%s)
status=0
for t in "${targets[@]}"; do
  corpus="$here/fuzz/corpus/${t#fuzz_}"
  if [[ ! -d $corpus ]]; then
    echo "[fuzz-replay] $t: no corpus folder $corpus" >&2
    status=1
    continue
  fi
  n=$(find "$corpus" -type f | wc -l)
  # From a scratch folder: a crashing seed's artifact lands there, not in the repository (-runs=0 adds nothing to the
  # corpus itself).
  scratch=$(mktemp -d)
  if (cd "$scratch" && "$dir/fuzz/$t" -runs=0 -timeout=20 -rss_limit_mb=2048 "$corpus" > "$scratch/log" 2>&1); then
    echo "[fuzz-replay] $t: $n seeds, no crash"
  else
    tail -30 "$scratch/log" >&2
    echo "[fuzz-replay] $t: FAILED on its corpus ($corpus)" >&2
    status=1
  fi
  rm -rf "$scratch"
done
echo "[fuzz-replay] build $((built - start)) s, replays $(($(date +%s) - built)) s; $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
