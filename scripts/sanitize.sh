#!/usr/bin/env bash
# Sanitizer builds and the tests they run (scripts/setup-and-test.sh calls this after the main suite):
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer over the engine, session-store and CLI tests
#         (the CLI they run is built with the sanitizers too);
#   tsan  ThreadSanitizer over the tests that run threads: the engine's thread team, the session writer with a
#         reader following it, `sessions replay --follow`, the run library's interleaved lanes and the app's
#         worker (runs::JobRunner on its own thread, cancelled from another).
# Usage: scripts/sanitize.sh [asan|tsan|all]   (default all)
# The builds are lean so CI stays within its time: -O1 -g, no GUI, no CUDA, no fuzzers or benches, and only the
# test executables listed below (and the CLI they run), in build-asan/ and build-tsan/ (SPECSCOPE_ASAN_DIR,
# SPECSCOPE_TSAN_DIR). Prints each ctest summary and its wall time; exits non-zero when a build or a test fails.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jobs=${SPECSCOPE_JOBS:-$(nproc)}
mode=${1:-all}
case "$mode" in asan | tsan | all) ;; *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;; esac

# Test executables (tests/<name>.cpp; ctest labels each test with its executable's name) and the tests left
# out: statistical tests whose sanitized run would take minutes; their code paths run in the tests kept.
asan_tests=(bad_input_test bonus_prob_test chat_template_test compare_cli_test context_fit_test dynamic_tree_test
  gguf_kquant_test gguf_model_test gguf_test heads_format_test heads_test lora_adapter_test matmul_quant_test
  matmul_test methods_test model_parity_test quant_decode_test quant_dot_test quant_int8_test race_cli_test
  run_statistics_test runs_test sampling_test sessions_cli_test sessions_durability_test sessions_test sha256_test
  stop_matcher_test streaming_test thread_pool_test tokenizer_test top_k_test torch_checkpoint_test
  tree_forward_test verify_test)
asan_exclude='^$'
tsan_tests=(thread_pool_test sessions_test sessions_cli_test runs_test)
tsan_exclude='^$'

label_regex() { local IFS='|'; echo "^($*)\$"; }

# run_one NAME DIR SANITIZE_FLAGS EXCLUDE TESTS...: configures, builds the tests, runs them; returns non-zero on
# failure.
run_one() {
  local name=$1 dir=$2 flags=$3 exclude=$4
  shift 4
  local t0 t1 t2 rc=0
  echo "== $name: building ${#@} test executables in $dir"
  t0=$(date +%s)
  cmake -S "$here" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    "-DCMAKE_C_FLAGS_SANITIZE=-O1 -g -fno-omit-frame-pointer $flags" \
    "-DCMAKE_CXX_FLAGS_SANITIZE=-O1 -g -fno-omit-frame-pointer $flags" \
    "-DCMAKE_EXE_LINKER_FLAGS_SANITIZE=$flags" "-DCMAKE_SHARED_LINKER_FLAGS_SANITIZE=$flags" \
    -DSPECSCOPE_GUI=OFF -DSPECSCOPE_CUDA=OFF -DSPECSCOPE_FUZZ=OFF -DSPECSCOPE_TESTS=ON >/dev/null || return 1
  cmake --build "$dir" -j "$jobs" --target "$@" || return 1
  t1=$(date +%s)
  echo "== $name: running the tests of $*"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900 -L "$(label_regex "$@")" -E "$exclude") || rc=1
  t2=$(date +%s)
  echo "== $name: build $((t1 - t0)) s, tests $((t2 - t1)) s"
  return $rc
}

status=0
if [[ $mode == asan || $mode == all ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1:strict_init_order=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  run_one "ASan+UBSan" "${SPECSCOPE_ASAN_DIR:-$here/build-asan}" \
    "-fsanitize=address,undefined -fno-sanitize-recover=undefined" "$asan_exclude" "${asan_tests[@]}" || status=1
fi
if [[ $mode == tsan || $mode == all ]]; then
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/tsan.supp}
  run_one "TSan" "${SPECSCOPE_TSAN_DIR:-$here/build-tsan}" "-fsanitize=thread" "$tsan_exclude" "${tsan_tests[@]}" ||
    status=1
fi
exit $status
