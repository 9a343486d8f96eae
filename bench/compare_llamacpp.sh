#!/usr/bin/env bash
# SpecScope against llama.cpp on the same GGUF files and the same protocol, 2 threads, medians of --repeat runs:
# decode tokens/s (64 steps after a 128-token prefill) and the time of one forward with n new tokens at context 128.
#   bash bench/compare_llamacpp.sh [--only LIST] [--quick] [--repeat R] [--rounds K] [--no-amx] [OUTDIR]
#   (default OUTDIR bench/results/llamacpp)
#   LIST, comma-separated groups or single files of them (syn1b_q8_0, syn60_f16, ...; default all groups):
#     base   the default base (bf16; llama.cpp reads a BF16 GGUF converted from the same weights)
#     syn60  the 60M-parameter synthetic Llama of ../shared/reference's cost curve: f32, F16, Q8_0, Q4_K_S
#     1b     a Llama-3.2-1B-shaped synthetic (bench/make_synthetic_llama.py --shape 1b): F16, BF16, Q8_0, Q4_K_M
#     1bk    the same model in the other K-quant files users download: Q5_K_M, Q6_K (not in the default run)
#     q3     a Qwen3-0.6B-shaped synthetic (make_synthetic_llama.py --shape qwen3-0.6b; q/k norms, head_dim 128, its
#            151936-entry vocabulary): F16, Q8_0, Q4_K_M (not in the default run)
#     g3     a Gemma-3-1B-shaped synthetic (--shape gemma3-1b; sliding layers, head_dim 256, 262144-entry
#            vocabulary): F16, Q8_0, Q4_K_M (not in the default run)
#     g2     a Gemma-2-2B-shaped synthetic (--shape gemma2-2b; soft caps, alternating sliding layers, head_dim 256,
#            256000-entry vocabulary): Q4_0 (what `ollama pull gemma2:2b` gives) and Q4_K_M (not in the default run;
#            ~13 GB of disk while the files are written)
#     moe    four layers of Qwen3-30B-A3B (--shape qwen3moe-4l; 128 experts, 8 per token, vocabulary 32000):
#            Q4_0 and Q4_K_M (not in the default run; ~8 GB of disk while the files are written)
#     moe2   four layers of Qwen1.5-MoE-A2.7B (--shape qwen2moe-4l; 60 experts, 4 per token, a shared expert,
#            vocabulary 32000): Q4_0 and Q4_K_M (not in the default run; ~8 GB of disk while the files are written)
#     oss    four layers of gpt-oss-20b (--shape gptoss-4l; 32 experts, 4 per token, sinks, YaRN, vocabulary 32000):
#            MXFP4_MOE, the experts MXFP4 as published (not in the default run; ~16 GB of disk while written)
#     ds     four layers of DeepSeek-V2-Lite (--shape dsv2lite-4l; multi-head latent attention, 64 experts, 6 per
#            token, 2 shared, YaRN, vocabulary 32000): Q4_K_M (not in the default run; ~9 GB of disk while written)
#     olmo   an OLMo-2-0425-1B-shaped synthetic (--shape olmo2-1b; norms after the sublayers, q/k normed over whole
#            projections, its 100352-entry untied vocabulary): Q8_0 and Q4_K_M (not in the default run)
#     spec   llama-speculative beside `specscope-cli run --method sps` (target base, draft draft; greedy, gamma 4)
#   --quick: one repeat, 2 prompts of 64 tokens for spec (a smoke run; not figures to quote)
#   --no-amx: llama-bench from llama.cpp built without its AMX buffer (build_llamacpp.sh --no-amx: this host's
#     AVX-512/VNNI/BF16 kernels and interleaved copies, no AMX), and the binding (which loads the native build) with
#     the weights as the file has them (use_extra_bufts off). Needed on CPUs with AMX: there llama.cpp moves Q8_0 and
#     Q4_K weights into its AMX buffer, whose matrix product crashes (SIGSEGV in ggml_backend_amx_mul_mat, llama.cpp
#     issue #20824; the pinned 0.3.36 on the 1B Q8_0 file on a Sapphire Rapids, 2026-12-05), so a user of such a CPU
#     runs it without. F16/BF16 never go through that buffer.
#   --rounds K: the three engines take turns K times per file (each round --repeat runs of each; SpecScope and
#     llama-bench swap places every round), and each figure is the median over the rounds (bench/merge_rounds.py):
#     this machine's speed drifts by up to 30% within minutes, and in one block per engine a slow spell lands on
#     whichever engine it overlaps.
# llama.cpp is measured three ways per file: specscope-cli bench (SpecScope), llama.cpp's own llama-bench, and
# bench/llamacpp_bench.py through the llama-cpp-python binding (the one that asks for all n rows' logits, as
# verification does); all from the pinned sdist, built by bench/build_llamacpp.sh (run here, idempotent).
# Every quantized file is written by llama.cpp's llama-quantize, and both engines read the very same file.
# Needs build/app/specscope-cli and the training venv (torch, transformers, gguf: it writes the GGUF files).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "compare_llamacpp.sh: $*" >&2; exit 1; }
only="base,syn60,1b,spec" repeat=5 rounds=1 quick=0 no_amx=0 out="$here/bench/results/llamacpp" cmdline="bash bench/compare_llamacpp.sh $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --quick) quick=1 repeat=1; shift ;;
    --no-amx) no_amx=1; shift ;;
    -*) die "unknown option $1" ;;
    *) out="$1"; shift ;;
  esac
done
want() { [[ ",$only," == *",$1,"* || ( -n "${2:-}" && ",$only," == *",$2"* ) ]]; }  # GROUP [KEY_PREFIX]: the group or one of its files
PY="${SPECSCOPE_VENV:-$HOME/.cache/specscope/venv}/bin/python"
LPY="${LLAMACPP_VENV:-$HOME/.cache/specscope/llamacpp-venv}/bin/python"
CLI="$here/build/app/specscope-cli"
tmp="${TMPDIR:-/tmp}/specscope-llamacpp-bench"
[ -x "$CLI" ] || die "$CLI missing: build it (cmake --build build --target specscope-cli)"
[ -x "$PY" ] || die "the training venv ($PY) is missing: it writes the GGUF files (see scripts/setup)"
export SPECSCOPE_THREADS=2 OMP_NUM_THREADS=2   # both engines on the same 2 threads
mkdir -p "$out" "$tmp"
echo "## $(date -u +%FT%TZ) $cmdline" >> "$out/timings.txt"  # appended: partial re-runs add to one record
stage_start=$SECONDS
stage() { echo "$1: $((SECONDS - stage_start)) s (load average $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/timings.txt" >&2; stage_start=$SECONDS; }

BIN="$(bash "$here/bench/build_llamacpp.sh" | tail -n 1)"  # the tools, llama-quantize, and the binding's libraries
BENCH_BIN="$BIN" no_repack=""
if [ "$no_amx" = 1 ]; then
  BENCH_BIN="$(bash "$here/bench/build_llamacpp.sh" --no-amx | tail -n 1)" no_repack=--no-repack
fi
stage "build llama.cpp (skipped when built)"

hf_to_gguf() {  # HF_DIR NAME: $tmp/NAME.f32.gguf, through an f32 copy (the converter reads f32/f16 safetensors)
  [ -f "$tmp/$2.f32.gguf" ] && return
  "$PY" - "$1" "$tmp/$2_f32" <<'PYEOF'
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
m = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
m.save_pretrained(sys.argv[2])
AutoTokenizer.from_pretrained(sys.argv[1]).save_pretrained(sys.argv[2])
PYEOF
  "$PY" "$here/tests/fixtures/make_gguf_models.py" --convert "$tmp/$2_f32" f32 "$tmp/$2.f32.gguf"
}
quantize() {  # IN OUT TYPE: llama.cpp's own quantizer
  [ -f "$2" ] || "$BIN/llama-quantize" "$1" "$2" "$3" 2 >"$2.log" 2>&1 || die "llama-quantize $3 failed: see $2.log"
}
if want base base_ || want spec; then
  hf_to_gguf "$here/assets/models/base" base && quantize "$tmp/base.f32.gguf" "$tmp/base.bf16.gguf" BF16
fi
if want spec; then
  hf_to_gguf "$here/assets/models/draft" draft && quantize "$tmp/draft.f32.gguf" "$tmp/draft.bf16.gguf" BF16
fi
if want syn60 syn60_; then
  if [ ! -f "$tmp/syn60.f32.gguf" ]; then
    "$PY" "$here/bench/make_synthetic_llama.py" "$tmp/syn60"
    "$PY" "$here/tests/fixtures/make_gguf_models.py" --convert "$tmp/syn60" f32 "$tmp/syn60.f32.gguf"
  fi
  for t in F16 Q8_0 Q4_K_S; do quantize "$tmp/syn60.f32.gguf" "$tmp/syn60.${t,,}.gguf" $t; done
fi
if want 1b syn1b_ || want 1bk; then
  # 2.1 GB of f16 weights, and then the GGUF files (2.1 + 2.1 + 1.1 + 0.7 GB) next to them.
  avail_gb=$(df -Pk "$tmp" | awk 'NR==2 {print int($4 / 1048576)}')
  [ -f "$tmp/syn1b.q4_k_m.gguf" ] || [ "$avail_gb" -ge 9 ] || die "the 1B files need ~9 GB free in $tmp ($avail_gb GB)"
  if [ ! -f "$tmp/syn1b.f16.gguf" ]; then
    [ -f "$tmp/syn1b/config.json" ] || "$PY" "$here/bench/make_synthetic_llama.py" --shape 1b "$tmp/syn1b"
    "$PY" "$here/tests/fixtures/make_gguf_models.py" --convert "$tmp/syn1b" f16 "$tmp/syn1b.f16.gguf"
  fi
  for t in BF16 Q8_0 Q4_K_M; do quantize "$tmp/syn1b.f16.gguf" "$tmp/syn1b.${t,,}.gguf" $t; done
  if want 1bk syn1b_q5_k_m || want 1bk syn1b_q6_k; then
    for t in Q5_K_M Q6_K; do quantize "$tmp/syn1b.f16.gguf" "$tmp/syn1b.${t,,}.gguf" $t; done
  fi
fi
# synthetic NAME SHAPE TYPES...: make_synthetic_llama.py --shape SHAPE as $tmp/NAME, its F16 GGUF, and each type by
# llama-quantize ($tmp/NAME.<type>.gguf); whatever is already written is kept.
synthetic() {
  local name=$1 shape=$2
  shift 2
  if [ ! -f "$tmp/$name.f16.gguf" ]; then
    [ -f "$tmp/$name/config.json" ] || "$PY" "$here/bench/make_synthetic_llama.py" --shape "$shape" "$tmp/$name"
    "$PY" "$here/tests/fixtures/make_gguf_models.py" --convert "$tmp/$name" f16 "$tmp/$name.f16.gguf"
  fi
  for t in "$@"; do quantize "$tmp/$name.f16.gguf" "$tmp/$name.${t,,}.gguf" "$t"; done
}
if want q3 synq3_; then synthetic synq3 qwen3-0.6b Q8_0 Q4_K_M; fi
if want g3 syng3_; then synthetic syng3 gemma3-1b Q8_0 Q4_K_M; fi
if want g2 syng2_; then synthetic syng2 gemma2-2b Q4_0 Q4_K_M; fi
if want moe synmoe_; then synthetic synmoe qwen3moe-4l Q4_0 Q4_K_M; fi
if want moe2 synmoe2_; then synthetic synmoe2 qwen2moe-4l Q4_0 Q4_K_M; fi
if want oss synoss_; then synthetic synoss gptoss-4l MXFP4_MOE; fi
if want ds synds_; then synthetic synds dsv2lite-4l Q4_K_M; fi
if want olmo synolmo_; then synthetic synolmo olmo2-1b Q8_0 Q4_K_M; fi
stage "write the GGUF files (skipped when written)"

run() {  # NAME GROUP SPECSCOPE_MODEL GGUF
  [[ ",$only," == *",$2,"* || ",$only," == *",$1,"* ]] || return 0
  echo "== $1"
  set -- "$1" "$3" "$4"
  local log="$tmp/$1.log"  # progress lines and errors, out of the way of the figures
  local r dest
  for ((r = 1; r <= rounds; r++)); do
    dest="$out/$1"
    if [ "$rounds" -gt 1 ]; then mkdir -p "$out/rounds"; dest="$out/rounds/$1.r$r"; echo "  round $r of $rounds"; fi
    # The order turns each round (SpecScope first in odd rounds, llama-bench first in even ones), so that a drift
    # with the position in a round (the previous file's last engine, our start-up's 2 GB copy) reaches both alike.
    local engine engines=(specscope llamabench binding)
    [ $((r % 2)) -eq 0 ] && engines=(llamabench specscope binding)
    for engine in "${engines[@]}"; do
      case "$engine" in
        specscope)
          { "$CLI" bench --model "$2" --repeat "$repeat" --out "$dest.specscope.json" 2>"$log" \
              || die "specscope-cli bench failed: see $log"; } | sed 's/^/  specscope    /' ;;
        llamabench)
          { python3 "$here/bench/llamacpp_tools.py" bench --bin "$BENCH_BIN" "$3" --threads 2 --repeat "$repeat" \
              --out "$dest.llamabench.json" 2>"$log" || die "llama-bench failed: see $log"; } | sed 's/^/  llama-bench  /' ;;
        binding)
          { "$LPY" "$here/bench/llamacpp_bench.py" bench "$3" --threads 2 --repeat "$repeat" $no_repack \
              --out "$dest.llamacpp.json" 2>"$log" || die "the binding's bench failed: see $log"; } | sed 's/^/  binding      /' ;;
      esac
    done
  done
  if [ "$rounds" -gt 1 ]; then
    for e in specscope llamabench llamacpp; do
      python3 "$here/bench/merge_rounds.py" "$out/$1.$e.json" $(for ((r = 1; r <= rounds; r++)); do echo "$out/rounds/$1.r$r.$e.json"; done)
    done
  fi
  stage "bench $1"
}
run base_bf16 base "$here/assets/models/base" "$tmp/base.bf16.gguf"
for t in f32 f16 q8_0 q4_k_s; do run "syn60_$t" syn60 "$tmp/syn60.$t.gguf" "$tmp/syn60.$t.gguf"; done
for t in f16 bf16 q8_0 q4_k_m; do run "syn1b_$t" 1b "$tmp/syn1b.$t.gguf" "$tmp/syn1b.$t.gguf"; done
for t in q5_k_m q6_k; do run "syn1b_$t" 1bk "$tmp/syn1b.$t.gguf" "$tmp/syn1b.$t.gguf"; done
for t in f16 q8_0 q4_k_m; do run "synq3_$t" q3 "$tmp/synq3.$t.gguf" "$tmp/synq3.$t.gguf"; done
for t in f16 q8_0 q4_k_m; do run "syng3_$t" g3 "$tmp/syng3.$t.gguf" "$tmp/syng3.$t.gguf"; done
for t in q4_0 q4_k_m; do run "syng2_$t" g2 "$tmp/syng2.$t.gguf" "$tmp/syng2.$t.gguf"; done
for t in q4_0 q4_k_m; do run "synmoe_$t" moe "$tmp/synmoe.$t.gguf" "$tmp/synmoe.$t.gguf"; done
for t in q4_0 q4_k_m; do run "synmoe2_$t" moe2 "$tmp/synmoe2.$t.gguf" "$tmp/synmoe2.$t.gguf"; done
run synoss_mxfp4_moe oss "$tmp/synoss.mxfp4_moe.gguf" "$tmp/synoss.mxfp4_moe.gguf"
run synds_q4_k_m ds "$tmp/synds.q4_k_m.gguf" "$tmp/synds.q4_k_m.gguf"
for t in q8_0 q4_k_m; do run "synolmo_$t" olmo "$tmp/synolmo.$t.gguf" "$tmp/synolmo.$t.gguf"; done
if want spec; then
  echo "== speculative (target base, draft draft)"
  count=10 max=128
  [ "$quick" = 1 ] && count=2 max=64
  "$PY" "$here/bench/llamacpp_tools.py" speculative --bin "$BIN" --cli "$CLI" --hf-target "$here/assets/models/base" \
    --target-gguf "$tmp/base.bf16.gguf" --draft-gguf "$tmp/draft.bf16.gguf" \
    --prompts "$here/assets/prompts/heldout.jsonl" --count $count --max-tokens $max --out "$out/spec.json" \
    | sed 's/^/  /'
  stage "speculative"
fi
{ echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%FT%TZ)"
  echo "last command: $cmdline   (every run, its stage times and load: timings.txt;" \
       "table: python3 bench/llamacpp_table.py ${out#$here/})"
  echo "llama.cpp: llama-cpp-python $("$LPY" -c 'import llama_cpp; print(llama_cpp.__version__)')'s vendored source," \
       "built by bench/build_llamacpp.sh (GGML_NATIVE, OpenMP); $("$BIN/llama-bench" --version 2>&1 | head -n 1)"
  [ "$no_amx" = 0 ] || echo "llama-bench: $BENCH_BIN/llama-bench (build_llamacpp.sh --no-amx: no AMX buffer); the binding" \
       "with use_extra_bufts off"
  echo "SpecScope: $(git -C "$here" rev-parse --short HEAD 2>/dev/null)$(git -C "$here" diff --quiet 2>/dev/null || echo ' + uncommitted changes')"
} > "$out/README.txt"
