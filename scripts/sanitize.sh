#!/usr/bin/env bash
# Sanitizer builds and the tests they run (scripts/setup-and-test.sh calls this after the main suite):
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer over the engine, session-store and CLI tests: every
#         tests/*_test.cpp but those listed below (the CLI they run is built with the sanitizers too), and every fuzz
#         target's committed corpus replayed (FuzzReplay.*);
#   tsan  ThreadSanitizer over the tests that run threads: the engine's thread team (and linear layers called from
#         several threads), the session writer (with a reader following the run it records: `sessions replay
#         --follow`'s loop; killed mid-batch; on a store that fails), the CLI recording while it decodes, and the run
#         library as the app's worker drives it (a job on a worker thread, interleaved lanes on theirs, a cancel
#         from another thread).
# Usage: scripts/sanitize.sh [asan|tsan|all]   (default all)
# The builds are lean so CI stays within its time: -O1 -g1 (line tables are all a sanitizer report needs; full -g
# cost a quarter more compile time), the tests' own sources at -O0 (tests/CMakeLists.txt: SPECSCOPE_TEST_CXX_FLAGS),
# precompiled headers (cmake/SpecScopePch.cmake), unity batches (cmake/SpecScopeUnity.cmake: each library's sources
# compiled a dozen at a time, so the json, fmt and container code they share is instantiated and instrumented once
# per batch, not once per source), no GUI, no CUDA, no libFuzzer or benches, only the test executables
# below, the fuzz replayers and the CLI, in build-asan/ and build-tsan/ (SPECSCOPE_ASAN_DIR, SPECSCOPE_TSAN_DIR). Prints
# each ctest summary and the wall time of each build and test run; exits non-zero when a build or a test fails.
# The TSan build compiles the hot loops once (SPECSCOPE_NO_TARGET_CLONES): gcc instruments the ifunc resolvers
# of target_clones functions, which run during relocation, before the TSan runtime exists, and crash there.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs=${SPECSCOPE_JOBS:-$(nproc)}
mode=${1:-all}
case "$mode" in asan | tsan | all) ;; *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;; esac

# Left out of the ASan build: the statistical sampling tests (minutes under ASan; verify_test and the greedy tests
# run the same verification code) and the tests that need the shipped 14M-parameter family or a browser.
asan_skip_executables=" method_sampling_test default_family_test html_export_browser_test "
# Left out of the ASan run: tests that decode hundreds of runs on the shipped family or 20 prompts x 14 method
# configurations (minutes each under ASan; the same paths run in the smaller CLI and method tests), the two that run
# all 28 method configurations through the device-like contexts (162 s and 107 s under ASan on the Zen 3 host, 30% of
# the ASan run; those contexts, tests/device_like_contexts.h, run under ASan in StreamingMethod.VerifiesFromSummaries
# AndRowsOnDemandAsFromLogits), and the speed limits of the tokenizer and the HTML exporter, which measure time, not
# correctness (the exporter's 0.6 s took 10 s under ASan beside ctest's other job; its output is checked under ASan by
# HtmlExport.AThousandStepSessionIsCompactAndFaithful).
asan_exclude='^(Methods\.(GreedyOutputEqualsVanillaForEveryMethod|GreedyVerificationFromSummariesRecordsWhatItRecordsFromLogits|SampledVerificationReadsOnlyTheRowsItVisits)|RaceCli\.(EveryMethodOnTheShippedFamily|ARecordedRace|TreeAuto|LanesCarry).*|StreamingMethod\.GreedyEqualsVanilla.*|Tokenizer\.(EncodesOneMegabyteQuickly|LongUniformRunsStayFast)|HtmlExport\.AThousandStepSessionIsQuickToWrite)$'
asan_tests=()
for src in "$here"/tests/*_test.cpp; do
  name=$(basename "$src" .cpp)
  [[ $asan_skip_executables == *" $name "* ]] || asan_tests+=("$name")
done
# And every fuzz target replaying its committed corpus, regression seeds included (fuzz/CMakeLists.txt, replay mode:
# the target name builds them all, and is their ctest label).
asan_tests+=(fuzz_replay)
tsan_tests=(thread_pool_test unit_shares_test matmul_test sessions_test sessions_durability_test recording_faults_test sessions_cli_test
  runs_test job_threads_test)
tsan_exclude='^$'

label_regex() { local IFS='|'; echo "^($*)\$"; }

# canary DIR FLAGS EXPECTED SOURCE: a program with a planted bug must fail under the build's flags with the
# sanitizer's report, or a test run that passes proves nothing (a flag lost, a runtime missing).
canary() {
  local dir=$1/canary flags=$2 expected=$3 src=$4 out
  mkdir -p "$dir" && printf '%s\n' "$src" >"$dir/canary.cpp" || return 1
  c++ -std=c++20 -O1 -g $flags "$dir/canary.cpp" -o "$dir/canary" -lpthread || return 1
  if out=$("$dir/canary" 2>&1); then
    echo "== canary: $dir/canary.cpp ran clean under $flags: the sanitizer is not working" >&2
    return 1
  fi
  grep -q "$expected" <<<"$out" || { echo "$out" >&2; return 1; }
  echo "== canary: the planted bug is reported ($expected)"
}

# run_one NAME DIR SANITIZER_FLAGS EXCLUDE TESTS...: configures, builds the tests, runs them; non-zero on failure.
run_one() {
  local name=$1 dir=$2 flags=$3 exclude=$4
  shift 4
  local t0 t1 t2 rc=0
  echo "== $name: building $# test targets and the CLI in $dir"
  t0=$(date +%s)
  cmake -S "$here" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    "-DCMAKE_C_FLAGS_SANITIZE=-O1 -g1 -fno-omit-frame-pointer $flags" \
    "-DCMAKE_CXX_FLAGS_SANITIZE=-O1 -g1 -fno-omit-frame-pointer $flags" \
    "-DCMAKE_EXE_LINKER_FLAGS_SANITIZE=$flags" "-DCMAKE_SHARED_LINKER_FLAGS_SANITIZE=$flags" \
    -DSPECSCOPE_GUI=OFF -DSPECSCOPE_CUDA=OFF -DSPECSCOPE_FUZZ=OFF -DSPECSCOPE_FUZZ_REPLAY=ON -DSPECSCOPE_TESTS=ON \
    "-DSPECSCOPE_TEST_CXX_FLAGS=-O0" -DSPECSCOPE_UNITY=ON >/dev/null || return 1
  cmake --build "$dir" -j "$jobs" --target "$@" || return 1
  t1=$(date +%s)
  echo "== $name: running the tests of: $*"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900 -L "$(label_regex "$@")" -E "$exclude") || rc=1
  t2=$(date +%s)
  echo "== $name: build $((t1 - t0)) s, tests $((t2 - t1)) s"
  return $rc
}

status=0
if [[ $mode == asan || $mode == all ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1:strict_init_order=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  dir=${SPECSCOPE_ASAN_DIR:-$here/build-asan} flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  if canary "$dir" "$flags" "heap-buffer-overflow" \
       '#include <cstdlib>
        void* (*volatile alloc)(std::size_t) = std::malloc;  // hides the size from UBSan: this one is ASan'"'"'s
        int main(int argc, char**) { int* p = (int*)alloc(16); int r = p[3 + argc]; std::free(p); return r; }' &&
     canary "$dir" "$flags" "signed integer overflow" \
       '#include <climits>
        int main(int argc, char**) { int x = INT_MAX - 1; return x + argc + argc > 0; }'; then
    run_one "ASan+UBSan" "$dir" "$flags" "$asan_exclude" "${asan_tests[@]}" || status=1
  else
    status=1
  fi
fi
if [[ $mode == tsan || $mode == all ]]; then
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
  dir=${SPECSCOPE_TSAN_DIR:-$here/build-tsan} flags="-fsanitize=thread -DSPECSCOPE_NO_TARGET_CLONES"
  if canary "$dir" "$flags" "ThreadSanitizer: data race" \
       '#include <thread>
        int shared = 0;
        int main() {
          std::thread a([] { for (int i = 0; i < 100000; ++i) ++shared; });
          for (int i = 0; i < 100000; ++i) ++shared;
          a.join();
        }'; then
    run_one "TSan" "$dir" "$flags" "$tsan_exclude" "${tsan_tests[@]}" || status=1
  else
    status=1
  fi
fi
exit $status
