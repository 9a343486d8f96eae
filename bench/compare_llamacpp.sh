#!/usr/bin/env bash
# SpecScope against llama.cpp on the same weights and the same protocol (bench/llamacpp_bench.py mirrors
# specscope-cli bench): decode and prefill tokens/s and the n-token step cost, 2 threads, median of 5.
#   bash bench/compare_llamacpp.sh [OUTDIR]      (default bench/results/llamacpp)
# Needs build/app/specscope-cli, the training venv (to write the GGUF files) and the llama.cpp venv (see
# bench/llamacpp_bench.py). Models: the default base (bf16; llama.cpp gets it as a BF16 GGUF converted from the
# same weights) and the 60M-parameter synthetic Llama of ../shared/reference's cost curve (f32, and f16 / q8_0 /
# q4_k_s files written by llama.cpp's own quantizer), both engines reading the very same .gguf files.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/bench/results/llamacpp}"
PY="${SPECSCOPE_VENV:-$HOME/.cache/specscope/venv}/bin/python"
LPY="${LLAMACPP_VENV:-$HOME/.cache/specscope/llamacpp-venv}/bin/python"
CLI="$here/build/app/specscope-cli"
tmp="${TMPDIR:-/tmp}/specscope-llamacpp-bench"
mkdir -p "$out" "$tmp"
if [ ! -f "$tmp/base.f32.gguf" ]; then
  "$PY" - "$here/assets/models/base" "$tmp/base_f32" <<'PYEOF'
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
m = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
m.save_pretrained(sys.argv[2])
AutoTokenizer.from_pretrained(sys.argv[1]).save_pretrained(sys.argv[2])
PYEOF
  "$PY" "$here/tests/fixtures/make_gguf_models.py" --convert "$tmp/base_f32" f32 "$tmp/base.f32.gguf"
fi
[ -f "$tmp/base.bf16.gguf" ] || "$LPY" "$here/bench/llamacpp_bench.py" quantize "$tmp/base.f32.gguf" "$tmp/base.bf16.gguf" bf16 >/dev/null 2>&1
if [ ! -f "$tmp/syn60.f32.gguf" ]; then
  "$PY" "$here/bench/make_synthetic_llama.py" "$tmp/syn60"
  "$PY" "$here/tests/fixtures/make_gguf_models.py" --convert "$tmp/syn60" f32 "$tmp/syn60.f32.gguf"
fi
for t in f16 q8_0 q4_k_s; do
  [ -f "$tmp/syn60.$t.gguf" ] || "$LPY" "$here/bench/llamacpp_bench.py" quantize "$tmp/syn60.f32.gguf" "$tmp/syn60.$t.gguf" $t >/dev/null 2>&1
done
run() {  # NAME SPECSCOPE_MODEL LLAMACPP_MODEL
  echo "== $1"
  "$CLI" bench --model "$2" --repeat 5 --out "$out/$1.specscope.json" 2>/dev/null | sed 's/^/  specscope  /'
  "$LPY" "$here/bench/llamacpp_bench.py" bench "$3" --threads 2 --repeat 5 --out "$out/$1.llamacpp.json" 2>/dev/null | sed 's/^/  llama.cpp  /'
}
run base_bf16 "$here/assets/models/base" "$tmp/base.bf16.gguf"
run syn60_f32 "$tmp/syn60.f32.gguf" "$tmp/syn60.f32.gguf"
run syn60_f16 "$tmp/syn60.f16.gguf" "$tmp/syn60.f16.gguf"
run syn60_q8_0 "$tmp/syn60.q8_0.gguf" "$tmp/syn60.q8_0.gguf"
run syn60_q4_k_s "$tmp/syn60.q4_k_s.gguf" "$tmp/syn60.q4_k_s.gguf"
{ echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%FT%TZ)"; echo "command: bash bench/compare_llamacpp.sh"; echo "llama.cpp: llama-cpp-python $("$LPY" -c 'import llama_cpp; print(llama_cpp.__version__)')"; } > "$out/README.txt"
