#!/usr/bin/env bash
# Runs everything issue 23 asks of a GPU machine from one part that scripts/gpu-pack.sh made, in one process tree,
# within a time budget (default 540 s, under the device tool's 10 minutes a command), and writes every result with
# its command and the device into OUT (at most 8 files, flat, as the device tool brings back):
#   results.md        the device, the commit, each task's command, exit code, wall time and headline figures
#   log.txt           everything the tasks printed
#   parity.json       gtest JSON of tests/cuda/cuda_parity_test.cpp (the backend against the CPU backend),
#                     cuda_kernels_test.cpp (each kernel against its CPU reference) and kernel_refs_test.cpp (core)
#   sampling.json     gtest JSON of tests/method_sampling_test.cpp with the target on the GPU (core)
#   heldout.json      compare --backend cuda over the 80 held-out prompts, greedy, chat, 96 tokens: this part's
#                     methods against vanilla on the GPU; with "cpu_vanilla" (the CPU backend's vanilla outputs
#                     compared prompt by prompt by their tokens' digest), "with_gemv" and "with_graphs" (the same
#                     run with SPECSCOPE_CUDA_GEMV=1 / SPECSCOPE_CUDA_GRAPHS=1) and "sampled" (T = 0.8, top-p 0.95)
#   bench_base.json   specscope-cli bench --backend cuda on the shipped base (and "with_gemv"); results.md also says
#                     which backend `run` picks with no --backend (auto)
#   bench_1b.json, bench_8b.json   random-weight Llama-3.2-1B / Llama-3.1-8B shapes in bf16, drawn on the GPU:
#                     SpecScope's decode, achieved bandwidth against the device's measured copy bandwidth and
#                     step-cost curve at context 1k (n = 1..128), the same under each setting ("with_gemv",
#                     "without_fusion", "with_graphs", "without_summary_chunks", "without_row_tiles",
#                     "with_one_qkv_product"), at context 4k ("at_4k", "at_4k_without_row_tiles"), and transformers'
#                     static-cache generate on the same directory; log.txt
#                     also holds each shape's op profile at 1, 8 and 64 rows (SPECSCOPE_CUDA_PROFILE=1). The peers part instead puts llama.cpp's CUDA llama-bench
#                     beside SpecScope and transformers ("peer_llamacpp": the same weights as a BF16 GGUF)
#
#   bash scripts/gpu-check.sh PART.tar.xz|PART_DIR OUT [--budget SECONDS] [--prompts N] [--no-8b]
#                             [--methods LIST] [--shapes "1b 8b"|none] [--no-parity]
#     --methods    the methods of the held-out run (default: the part's, from its manifest)
#     --shapes     the random-weight shapes to benchmark (default: "1b 8b" for core and peers, none for other
#                  parts; every part carries the base's tokenizer, which is all a shape needs)
#     --no-parity  skip the parity tests (when an earlier run on this commit passed them)
#     --skip       tasks to leave out by name (e.g. "heldout_gemv transformers_1b"), when a loan's minutes are short
#
# On a machine without a GPU (the rehearsal here) the same script runs to its end: the CUDA tests report
# SKIPPED, and the GPU runs and benchmarks record "no device" (the CLI's one-line "no usable CUDA device" error,
# exit 2). Only the bundle's binaries see its lib/ (through run/): Debian's libstdc++ ahead of the image's would
# break python3's torch.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PART.tar.xz|PART_DIR OUT [--budget SECONDS] [--prompts N] [--no-8b]" >&2; exit 2; }
src=$1 out=$2
shift 2
budget=540 prompts=80 big=1 methods_arg="" shapes_arg="" parity=1 skip=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    --no-8b) big=0; shift ;;
    --methods) methods_arg=$2; shift 2 ;;
    --shapes) shapes_arg=$2; shift 2 ;;
    --no-parity) parity=0; shift ;;
    --skip) skip=$2; shift 2 ;;
    *) echo "gpu-check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/log.txt md=$out/results.md
: > "$log"
start=$SECONDS
say() { echo "$*" | tee -a "$log" >&2; }
left() { echo $(( budget - (SECONDS - start) )); }

# 1. Unpack.
if [ -d "$src" ]; then
  B=$(cd "$src" && pwd)
else
  B=${SPECSCOPE_GPU_WORK:-/tmp/specscope-gpu}/$(basename "$src" .tar.xz)
  rm -rf "$B" && mkdir -p "$B"
  tar -C "$B" -xJf "$src" 2>>"$log" ||
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$src" "$B" ||
    { say "gpu-check.sh: cannot unpack $src"; exit 1; }
fi
manifest() { sed -n "s/^$1=//p" "$B/manifest.txt"; }
part=$(manifest part) methods=${methods_arg:-$(manifest methods)}
run_parity=$parity
[ "$part" != peers ] || run_parity=0  # the kernel tests are core's; peers spends its minutes on the shapes

# 2. cuBLAS from the machine: the CUDA toolkit's, or PyTorch's nvidia-cublas wheel.
cublas_dir=""
for d in ${CUBLAS_DIR:-} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu \
  $(python3 -c "import nvidia, os; p = list(nvidia.__path__)[0]; print(' '.join(os.path.join(p, s, 'lib') for s in ('cu13', 'cublas')))" 2>/dev/null); do
  [ -e "$d/libcublas.so.13" ] && { cublas_dir=$d; break; }
done
[ -n "$cublas_dir" ] || cublas_dir=$(dirname "$(ldconfig -p 2>/dev/null | awk '/libcublas.so.13 /{print $NF; exit}')" 2>/dev/null)
bin_ld="$B/lib${cublas_dir:+:$cublas_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$B/run"
for f in "$B"/bin/*; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$bin_ld" "$f" > "$B/run/${f##*/}"
  chmod +x "$B/run/${f##*/}"
  if LD_LIBRARY_PATH=$bin_ld ldd "$f" | grep -q "not found"; then
    say "gpu-check.sh: libraries missing for $f (cuBLAS looked for in ${cublas_dir:-nowhere found}):"
    LD_LIBRARY_PATH=$bin_ld ldd "$f" | grep "not found" | tee -a "$log" >&2
  fi
done
cli=$B/run/specscope-cli
# SPECSCOPE_CLI: the tests that run the CLI (run_cli in tests/test_support.cpp) run the one that travelled.
export SPECSCOPE_FIXTURES_DIR=$B/fixtures XDG_CACHE_HOME=$B/cache XDG_DATA_HOME=$B/data SPECSCOPE_CLI=$cli
# cuda_parity_test's real-model check (ARealModelPartsFromTheCpuOnlyAtNearTies): the shipped base, where the part has it.
[ -f "$B/share/specscope/models/base/config.json" ] && export SPECSCOPE_PARITY_MODEL=$B/share/specscope/models/base
device=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || device="no device (nvidia-smi found none)"
# The device's own ceiling for memory-bound work: a 4 GiB device-to-device copy, bytes read plus bytes written,
# the median of 20 after warm-ups (the bandwidth each benchmark's decode is set against).
peak_copy=$(timeout 60 python3 - <<'PY' 2>>"$log"
import torch
if torch.cuda.is_available():
    n = 1 << 31  # bf16 elements: 4 GiB
    a = torch.randn(n, dtype=torch.bfloat16, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); b.copy_(a); e.record(); e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    times.sort()
    print(f"{2 * a.numel() * a.element_size() / times[len(times) // 2] / 1e9:.0f}")
PY
)

{
  echo "# SpecScope on a GPU: part '$part'"
  echo
  echo "- device: $device"
  echo "- host: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $(uname -r)"
  echo "- commit: $(manifest commit); packed $(manifest packed)"
  echo "- cuBLAS: ${cublas_dir:-not found}"
  echo "- device-to-device copy (4 GiB, read + written, median of 20): ${peak_copy:-not measured} GB/s"
  echo "- command: bash scripts/gpu-check.sh $(basename "$src") OUT --budget $budget --prompts $prompts$([ $big = 0 ] && echo ' --no-8b')${methods_arg:+ --methods $methods_arg}${shapes_arg:+ --shapes \"$shapes_arg\"}$([ $parity = 0 ] && echo ' --no-parity')${skip:+ --skip \"$skip\"}"
  echo
  echo "| task | command | exit | seconds | result |"
  echo "|---|---|---|---|---|"
} > "$md"

# task NAME SECONDS_NEEDED RESULT_CMD -- COMMAND...: runs COMMAND under the time left (skipped when less than
# SECONDS_NEEDED is left), logs it, and adds a row whose result column RESULT_CMD prints (given the exit code).
# No task may take more than TASK_CAP seconds (default 2 x SECONDS_NEEDED), so that code hanging on a device it
# has never run on cannot eat the tasks after it.
task() {
  local name=$1 need=$2 summarize=$3
  shift 4
  local t0=$SECONDS rc cap=$(( ${TASK_CAP:-$(( need * 2 ))} ))
  if [[ " $skip " == *" $name "* ]]; then
    say "== $name: skipped (--skip)"
    echo "| $name | \`${*//"$B/"/}\` | - | - | skipped: --skip |" >> "$md"
    return 0
  fi
  if [ "$(left)" -lt "$need" ]; then
    say "== $name: skipped, $(left) s left of the budget (needs ~$need s)"
    echo "| $name | \`${*//"$B/"/}\` | - | - | skipped: out of time |" >> "$md"
    return 0
  fi
  [ "$cap" -lt "$(left)" ] || cap=$(left)
  say "== $name: $*"
  timeout --kill-after=10 "$cap" "$@" >> "$log" 2>&1
  rc=$?
  local result
  result=$($summarize $rc 2>/dev/null | tr '\n' ' ')
  echo "| $name | \`${*//"$B/"/}\` | $rc | $((SECONDS - t0)) | ${result:-see log.txt} |" >> "$md"
  say "== $name: exit $rc in $((SECONDS - t0)) s: $result"
}

gtest_summary() {  # summarizes parity.json-style gtest output files
  python3 - "$@" <<'PY'
import json, sys
for f in sys.argv[1:]:
    try:
        j = json.load(open(f))
    except Exception:
        continue
    tests = [t for s in j.get("testsuites", []) for t in s.get("testsuite", [])]
    skipped = sum(1 for t in tests if t.get("result") == "SKIPPED")
    failed = [t["name"] for t in tests if t.get("failures")]
    print(f"{f.split('/')[-1]}: {len(tests) - skipped - len(failed)} passed, {len(failed)} failed, {skipped} skipped"
          + (f" (failed: {', '.join(failed)})" if failed else ""))
PY
}
parity_result() { gtest_summary "$out"/parity_*.json; }
no_device() { [ "$1" = 2 ] && tail -n 3 "$log" | grep -q "no usable CUDA device\|no CUDA backend" && echo "no device"; }
heldout_result() {
  no_device "$1" || python3 - "$out/heldout.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("; ".join(f"{a['lane']} tau {a['tau']:.2f} {a['tokens_per_second']:.0f} tok/s {a['speedup_vs_vanilla']:.2f}x "
                f"identical {a['identical_to_vanilla']}/{a['prompts']}" for a in j["aggregate"]))
PY
}
bench_result() {  # FILE: specscope-cli bench's JSON, or llamacpp_tools.py bench's (same decode and curve keys)
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
curve = ", ".join(f"n={s['tokens']} {s['relative_to_first']:.2f}x" for s in j.get("step_cost", []))
bw = j.get("decode_bandwidth_gb_per_s")
who = j.get("device") or f"llama.cpp {j.get('build_commit')} ({j.get('backends')}) on {j.get('gpu_info')}"
print(f"{who}: decode {j.get('decode_tokens_per_second', 0):.1f} tok/s"
      + (f", {bw:.0f} GB/s of weights" if bw else "") + (f"; {curve}" if curve else ""))
PY
}

# 3. Parity tests (core): the CPU references, each kernel against its reference, the backend against the CPU.
# Without the fixtures (a part that carries none) the backend's parity test stays out; the kernel tests need none.
if [ $run_parity = 1 ]; then
  suites="kernel_refs_test:refs cuda_kernels_test:kernels"
  [ "$(manifest fixtures)" = yes ] && suites="$suites cuda_parity_test:backend"
  task parity 120 parity_result -- sh -c "rc=0; for t in $suites; do SPECSCOPE_TEST_BACKEND=cuda '$B/run/'\${t%%:*} --gtest_output=json:'$out/parity_'\${t##*:}.json || rc=1; done; exit \$rc"
  # One JSON file back, not three (the device tool brings back at most 8).
  python3 - "$out/parity.json" "$out"/parity_*.json <<'PY' 2>>"$log"
import json, os, sys
parts = [f for f in sys.argv[2:] if os.path.exists(f)]  # none when the task was skipped (the glob stays literal)
if parts:
    merged = {"testsuites": []}
    for f in parts:
        merged["testsuites"] += json.load(open(f)).get("testsuites", [])
        os.remove(f)
    json.dump(merged, open(sys.argv[1], "w"), indent=1)
PY
fi

# 4-5a run for parts that carry the family (not for peers, which carries llama.cpp and only the tokenizer the
# shapes need). A function rather than an indented block: its Python heredocs must start at column 0.
family_tasks() {
# 4. Every method of this part on the GPU, against vanilla, on the held-out prompts.
head -n "$prompts" "$B/share/specscope/prompts/heldout.jsonl" > "$B/prompts.jsonl"
task heldout 60 heldout_result -- sh -c "'$cli' compare --backend cuda --chat --prompt-file '$B/prompts.jsonl' --methods '$methods' --max-tokens 96 --no-record --json > '$out/heldout.json'"
[ -s "$out/heldout.json" ] || rm -f "$out/heldout.json"

# join_compare KEY FILE [sampled]: another compare run over the same prompts (FILE), joined to heldout.json under
# KEY: its aggregate, its vanilla outputs' token digests (compare's output_sha256), and on how many prompts its vanilla
# output is token for token this run's (not for a sampled run, whose outputs are other tokens by design).
join_compare() {
  python3 - "$out/heldout.json" "$2" "$1" "${3:-}" <<'PY'
import json, sys
path, other_path, key, sampled = sys.argv[1:5]
main, other = json.load(open(path)), json.load(open(other_path))
# Per (prompt, target): a job with streaming has two targets (the base, and the base with streaming's LoRA merged),
# each with its own vanilla reference; keyed by prompt alone, the second overwrote the first (on 2026-12-04 that read
# as "CUDA vanilla = CPU vanilla on 10/80", the streaming target's vanilla against the CPU's base: 74/80 per target).
def digests(j):
    return {(p["prompt"], r.get("target", 0)): r["output_sha256"] for p in j["prompts"] for r in p["runs"]
            if r["lane"] == "vanilla"}
a, b = digests(main), digests(other)
same = sum(1 for k in b if a.get(k) == b[k])
main[key] = {"backend": other.get("backend"), "device": other.get("device"), "aggregate": other["aggregate"],
             "all_identical": other.get("all_identical"),
             "vanilla_output_sha256": {f"{t}:{p}": d for (p, t), d in b.items()},
             "vanilla_identical_to_this_run": same, "compared": len(b)}
if sampled:
    main[key]["sampling"] = other.get("sampling")
    for k in ("vanilla_output_sha256", "vanilla_identical_to_this_run"):
        del main[key][k]
json.dump(main, open(path, "w"), indent=1)
print("; ".join(f"{x['lane']} {x['tokens_per_second']:.0f} tok/s {x['speedup_vs_vanilla']:.2f}x identical "
                f"{x['identical_to_vanilla']}/{x['prompts']}" for x in other["aggregate"])
      + ("" if sampled else f"; its vanilla = this run's vanilla on {same}/{len(b)} (prompt, target) pairs"))
PY
}

# 4b. The CUDA backend's greedy outputs against the CPU backend's, prompt by prompt: vanilla on the CPU's exact path
# (SPECSCOPE_QUANT_EXACT=1), the reference the parity tests hold the GPU to, whatever the host's CPU (its default path
# rounds activations to bf16 on AVX512-BF16 CPUs and not on others). Both agreed with the GPU on 74 of 80 prompts on
# 2026-12-04.
cpu_result() { join_compare cpu_vanilla "$B/cpu_vanilla.json"; }
if [ -s "$out/heldout.json" ]; then
  task cuda_vs_cpu 30 cpu_result -- sh -c "SPECSCOPE_QUANT_EXACT=1 '$cli' compare --backend cpu --chat --prompt-file '$B/prompts.jsonl' --methods vanilla --max-tokens 96 --no-record --json > '$B/cpu_vanilla.json'"
fi

# 4c. The same prompts with every product on gemv.cu (SPECSCOPE_CUDA_GEMV=1, one path for every batch size).
gemv_heldout_result() { join_compare with_gemv "$B/heldout_gemv.json"; }
if [ -s "$out/heldout.json" ]; then
  task heldout_gemv 60 gemv_heldout_result -- sh -c "SPECSCOPE_CUDA_GEMV=1 '$cli' compare --backend cuda --chat --prompt-file '$B/prompts.jsonl' --methods '$methods' --max-tokens 96 --no-record --json > '$B/heldout_gemv.json'"
fi

# 4c'. The same prompts with each forward's device work as one CUDA graph (SPECSCOPE_CUDA_GRAPHS=1).
graphs_heldout_result() { join_compare with_graphs "$B/heldout_graphs.json"; }
if [ -s "$out/heldout.json" ]; then
  task heldout_graphs 60 graphs_heldout_result -- sh -c "SPECSCOPE_CUDA_GRAPHS=1 '$cli' compare --backend cuda --chat --prompt-file '$B/prompts.jsonl' --methods '$methods' --max-tokens 96 --no-record --json > '$B/heldout_graphs.json'"
fi

# 4c''. The same prompts sampled (T = 0.8, top-p 0.95): each visited row's distribution made on the device
# (kernels/processed_rows.cu) and only its kept tokens sent. Its "identical" counts do not apply: a method spends the
# seed's draws differently from vanilla, so its answer is another draw from the same distribution (losslessness at
# T > 0 is method_sampling_test's, in the sampling task).
sampled_heldout_result() { join_compare sampled "$B/heldout_sampled.json" sampled; }
if [ -s "$out/heldout.json" ]; then
  task heldout_sampled 60 sampled_heldout_result -- sh -c "'$cli' compare --backend cuda --chat --prompt-file '$B/prompts.jsonl' --methods '$methods' --temperature 0.8 --top-p 0.95 --seed 1 --max-tokens 96 --no-record --json > '$B/heldout_sampled.json'"
fi

# 4d. With no --backend (auto), a GPU must be picked: `run --json`'s summary names the backend and the device.
auto_result() {
  python3 - "$B/auto_run.jsonl" <<'PY'
import json, sys
summary = [j for j in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if j.get("type") == "summary"][-1]
print(f"--backend auto picked {summary.get('backend')} on {summary.get('device')}")
PY
}
task auto_backend 10 auto_result -- sh -c "'$cli' run --model '$B/share/specscope/models/base' --chat --prompt 'Name three colours.' --max-tokens 8 --no-record --json > '$B/auto_run.jsonl'"

# 5. Benchmarks: the shipped base, then (core) the 1B and 8B shapes beside transformers.
bench_file() {  # RC FILE: the figures, or why there are none
  if [ -s "$2" ]; then bench_result "$2"; else no_device "$1" || echo "failed: see log.txt"; fi
}
base_result() { bench_file "$1" "$out/bench_base.json"; }
task bench_base 30 base_result -- "$cli" bench --backend cuda --model "$B/share/specscope/models/base" --repeat 5 --out "$out/bench_base.json"
base_gemv_result() { bench_file "$1" "$B/bench_base_gemv.json"; }
task bench_base_gemv 30 base_gemv_result -- env SPECSCOPE_CUDA_GEMV=1 "$cli" bench --backend cuda --model "$B/share/specscope/models/base" --repeat 5 --out "$B/bench_base_gemv.json"
base_graphs_result() { bench_file "$1" "$B/bench_base_graphs.json"; }
task bench_base_graphs 30 base_graphs_result -- env SPECSCOPE_CUDA_GRAPHS=1 "$cli" bench --backend cuda --model "$B/share/specscope/models/base" --repeat 5 --out "$B/bench_base_graphs.json"
python3 - "$out/bench_base.json" "$B/bench_base_gemv.json" "$B/bench_base_graphs.json" <<'PY' 2>>"$log"
import json, os, sys
a, b, g = sys.argv[1:4]
if os.path.exists(a):
    ja = json.load(open(a))
    if os.path.exists(b):
        ja["with_gemv"] = json.load(open(b))
    if os.path.exists(g):
        ja["with_graphs"] = json.load(open(g))
    json.dump(ja, open(a, "w"), indent=2)
PY
}
[ -z "$methods" ] || family_tasks

# 5b. Every method's sampling test with the target on the GPU (tests/method_sampling_test.cpp; a bundle from before it
# travelled has no binary): its own task after the held-out runs, since its ~50,000 small forwards may take minutes
# on a device where each forward is launch-bound; gtest's per-test lines reach log.txt even if the cap stops it.
sampling_result() { gtest_summary "$out/sampling.json"; }
# SPECSCOPE_GPU_SAMPLING_FILTER: a gtest filter for it (default: every case; a loan's minutes may take a subset).
if [ $run_parity = 1 ] && [ "$(manifest fixtures)" = yes ] && [ -x "$B/run/method_sampling_test" ]; then
  task sampling 60 sampling_result -- env SPECSCOPE_TEST_BACKEND=cuda "$B/run/method_sampling_test" --gtest_output=json:"$out/sampling.json" --gtest_filter="${SPECSCOPE_GPU_SAMPLING_FILTER:-*}"
fi

shapes=none
if [ "$part" = core ] || [ "$part" = peers ]; then
  shapes="1b"
  [ $big = 1 ] && shapes="1b 8b"
fi
[ -z "$shapes_arg" ] || shapes=$shapes_arg
if [ "$shapes" != none ]; then
  for shape in $shapes; do
    dir=${SPECSCOPE_GPU_WORK:-/tmp/specscope-gpu}/syn$shape
    need=$([ $shape = 8b ] && echo 60 || echo 30)  # drawing the weights: 33-39 s and 15-21 s on the H200
    run_need=$([ $shape = 8b ] && echo 60 || echo 30)  # 10-13 s and 4-5 s on the H200 (a 16 GB load for the 8B shape)
    torch_rc=0
    python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" 2>/dev/null || torch_rc=$?
    if [ $torch_rc != 0 ]; then
      why=$([ $torch_rc = 3 ] && echo "no device (python3's torch sees no CUDA device)" ||
        echo "no torch: python3 cannot import it, so no model of this shape can be made")
      say "== bench_$shape: $why"
      echo "| bench_$shape | - | - | - | $why |" >> "$md"
      continue
    fi
    made() { [ -f "$dir/config.json" ] && echo "written to $dir" || echo "failed"; }
    task "make_$shape" "$need" made -- python3 "$repo/bench/make_synthetic_llama.py" --shape "$shape" --dtype bf16 --device cuda --tokenizer-from "$B/share/specscope/models/base" "$dir"
    [ -f "$dir/config.json" ] || continue
    spec_result() { bench_file "$1" "$out/bench_$shape.json"; }
    task "specscope_$shape" "$run_need" spec_result -- "$cli" bench --backend cuda --model "$dir" --prompt-tokens 1024 --gen-tokens 64 --repeat 5 --step-sizes 1,2,4,8,16,32,64,128 --out "$out/bench_$shape.json"
    # The same shape under each opt-in or opt-out setting, joined to the file below under its key: NAME:ENV:KEY
    # (task NAME_<shape>, core only but for the fusion baseline: the peers part measures against llama.cpp instead).
    #   gemv:     every product of up to 8 rows on gemv.cu (SPECSCOPE_CUDA_GEMV=1)
    #   nofuse:   without the fused launches (SPECSCOPE_CUDA_FUSE=0): what the fusions save, in the same run
    #   graphs:   each forward as one CUDA graph (SPECSCOPE_CUDA_GRAPHS=1)
    #   chunks:   greedy verification's logit summaries one block a row, not in chunks (SPECSCOPE_CUDA_SUMMARY_CHUNKS=0)
    #   rows:     attention one block per row, without the row tiles (SPECSCOPE_CUDA_ROW_TILES=0)
    #   qkv:      q, k and v in one product per layer (SPECSCOPE_CUDA_QKV_ONE_PRODUCT=1)
    variants="gemv:SPECSCOPE_CUDA_GEMV=1:with_gemv nofuse:SPECSCOPE_CUDA_FUSE=0:without_fusion
      graphs:SPECSCOPE_CUDA_GRAPHS=1:with_graphs chunks:SPECSCOPE_CUDA_SUMMARY_CHUNKS=0:without_summary_chunks
      rows:SPECSCOPE_CUDA_ROW_TILES=0:without_row_tiles qkv:SPECSCOPE_CUDA_QKV_ONE_PRODUCT=1:with_one_qkv_product"
    joins=()
    for v in $variants; do
      name=${v%%:*} rest=${v#*:}
      setting=${rest%%:*} key=${rest#*:}
      [ "$part" = core ] || [ "$name" = nofuse ] || continue
      vfile=$B/bench_${shape}_$name.json
      variant_result() { bench_file "$1" "$vfile"; }
      task "${name}_$shape" "$run_need" variant_result -- env "$setting" "$cli" bench --backend cuda --model "$dir" --prompt-tokens 1024 --gen-tokens 64 --repeat 5 --step-sizes 1,2,4,8,16,32,64,128 --out "$vfile"
      joins+=("$key=$vfile")
    done
    # Past 1,024 slots (core): decode and the 8- and 64-row steps at context 4k (the CUDA context's default 4,096
    # positions hold 3,968 + 64), every row in the row tiles' own chunks, against the split path (row tiles off)
    # that decoded there before the thirty-first session: what losslessness past 1,024 slots costs.
    if [ "$part" = core ]; then
      for long in "at_4k:" "at_4k_without_row_tiles:SPECSCOPE_CUDA_ROW_TILES=0"; do
        key=${long%%:*} setting=${long#*:}
        lfile=$B/bench_${shape}_$key.json
        long_result() { bench_file "$1" "$lfile"; }
        task "${key}_$shape" "$run_need" long_result -- env $setting "$cli" bench --backend cuda --model "$dir" --prompt-tokens 3968 --gen-tokens 32 --repeat 3 --step-sizes 1,8,64 --out "$lfile"
        joins+=("$key=$lfile")
      done
    fi
    # Where a forward's time goes at 1, 8 and 64 rows (SPECSCOPE_CUDA_PROFILE: CUDA events between ops, in log.txt).
    profile_result() { grep "cuda profile" "$log" | tail -n 3 | sed 's/.*cuda profile: //' | tr '\n' ';'; }
    [ "$part" != core ] || task "profile_$shape" 30 profile_result -- env SPECSCOPE_CUDA_PROFILE=1 SPECSCOPE_LOG=info "$cli" bench --backend cuda --model "$dir" --prompt-tokens 1024 --gen-tokens 8 --repeat 3 --step-sizes 1,8,64 --out "$B/profile_$shape.json"
    hf_result() { [ "$1" = 3 ] && echo "no device" || python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(f\"transformers {j['transformers']} static cache: decode {j['decode_tokens_per_second']:.1f} tok/s\")" "$out/hf_$shape.json"; }
    hf_need=$([ $shape = 8b ] && echo 80 || echo 60)  # 62-65 s and 45-50 s on the H200 (2026-11-28)
    task "transformers_$shape" "$hf_need" hf_result -- python3 "$repo/bench/transformers_bench.py" "$dir" --dtype bf16 --prompt-tokens 1024 --gen-tokens 64 --repeat 5 --out "$out/hf_$shape.json"
    # llama.cpp's CUDA llama-bench (peers part, bench/build_llamacpp.sh --cuda) on the same weights: the directory
    # written as a BF16 GGUF bit for bit (make_gguf_models.py --convert, with the gguf package the part carries),
    # then decode and the n-token forwards at context 1024, llama-bench's defaults otherwise (every layer on the
    # GPU, flash attention as it picks): what a user running llama.cpp on this GPU gets.
    if [ -x "$B/run/llama-bench" ]; then
      gguf=$dir.bf16.gguf
      gguf_result() { [ -s "$gguf" ] && echo "$(( $(stat -c %s "$gguf") >> 20 )) MiB written" || echo "failed"; }
      task "gguf_$shape" "$([ $shape = 8b ] && echo 150 || echo 60)" gguf_result -- env PYTHONPATH="$B/tools/gguf-py" python3 "$B/tools/make_gguf_models.py" --convert "$dir" bf16 "$gguf"
      lc_result() { [ -s "$B/llamacpp_$shape.json" ] && bench_result "$B/llamacpp_$shape.json" || echo "failed: see log.txt"; }
      [ -s "$gguf" ] && task "llamacpp_$shape" "$run_need" lc_result -- python3 "$repo/bench/llamacpp_tools.py" bench --bin "$B/run" "$gguf" --threads "$(nproc)" --depth 1024 --gen-tokens 64 --repeat 5 --step-sizes 1,2,4,8,16,32,64,128 --require-gpu --out "$B/llamacpp_$shape.json"
      rm -f "$gguf"
    fi
    # The peer's figures join SpecScope's file (the device tool brings back at most 8 files).
    python3 - "$out/bench_$shape.json" "$out/hf_$shape.json" "${peak_copy:-}" "$B/llamacpp_$shape.json" "${joins[@]}" <<'PY' 2>>"$log"
import json, os, sys
a, b, peak, lc = sys.argv[1:5]
if os.path.exists(a):
    ja = json.load(open(a))
    if os.path.exists(b):
        ja["peer_transformers"] = json.load(open(b))
        os.remove(b)
    if os.path.exists(lc):
        ja["peer_llamacpp"] = json.load(open(lc))
    for join in sys.argv[5:]:  # KEY=FILE: a setting's run of the same shape
        key, path = join.split("=", 1)
        if os.path.exists(path):
            ja[key] = json.load(open(path))
    if peak and ja.get("decode_bandwidth_gb_per_s"):
        ja["peak_copy_gb_per_s"] = float(peak)
        ja["decode_bandwidth_fraction_of_peak"] = ja["decode_bandwidth_gb_per_s"] / float(peak)
    json.dump(ja, open(a, "w"), indent=2)
PY
    rm -rf "$dir"  # 16 GB for the 8B shape; the disk is 64 GB
  done
fi

say "gpu-check: done in $((SECONDS - start)) s; results in $out"
echo >> "$md"
echo "Finished in $((SECONDS - start)) s of a $budget s budget." >> "$md"
cat "$md"
