#!/usr/bin/env bash
# SpecScope's GGUF tokenizer against the Hugging Face ids of llama.cpp's vocab test files, for every vocabulary of a
# family SpecScope runs: the real Llama 3, Qwen2, GPT-2, DeepSeek Coder, DeepSeek LLM, Llama 2, Phi-3 and StarCoder
# (Refact, Granite) vocabularies (the fixtures
# tests use cut-down ones). Needs the pinned llama-cpp-python sdist that bench/build_llamacpp.sh unpacks (its
# vendored llama.cpp holds models/ggml-vocab-*.gguf with .inp/.out) and a build with bench/ (build/bench/).
#   bash bench/llamacpp_vocabs.sh [BUILD_DIR]      prints one line per file; exit 0 when every case agrees
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
models="${XDG_CACHE_HOME:-$HOME/.cache}/specscope/llamacpp/llama_cpp_python-0.3.36/vendor/llama.cpp/models"
[ -d "$models" ] || { echo "llamacpp_vocabs.sh: $models is missing: run bash bench/build_llamacpp.sh first" >&2; exit 2; }
[ -x "$build/bench/llamacpp_vocab_check" ] || { echo "llamacpp_vocabs.sh: build $build/bench/llamacpp_vocab_check first (ninja -C $build llamacpp_vocab_check)" >&2; exit 2; }
files=()
for name in llama-bpe qwen2 gpt-2 deepseek-coder deepseek-llm llama-spm phi-3 refact starcoder; do files+=("$models/ggml-vocab-$name.gguf"); done
"$build/bench/llamacpp_vocab_check" "${files[@]}"
