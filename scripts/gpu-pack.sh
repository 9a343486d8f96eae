#!/usr/bin/env bash
# Packs what a GPU machine needs to run scripts/gpu-check.sh (issue 23): the CUDA-enabled binaries built here, the
# shared libraries they load that a bare CUDA image lacks, the parity tests' fixtures, the shipped family and the
# held-out prompts, in parts that each fit the 64 MiB a device call may carry beside the source tree.
#
#   bash scripts/gpu-pack.sh [--build DIR] [--out DIR] [--limit-mib N] [--parts "core drafters"|all]
#     --build      a build directory configured with the CUDA backend (default build/; scripts/build.sh makes it)
#     --out        where the parts go (default gpu-bundle/, ignored by git)
#     --limit-mib  the most one part may weigh (default 57: 64 MiB less the ~5 MiB of source that travels with it once
#                  gpu-stage.sh out has moved the data folders, and a margin; 2026-12-06: a 56.04 MiB core part sent
#                  61 MiB in all)
#     --parts      which parts to make (default "core drafters"; also peers, all)
#
# Parts (each a .tar.xz holding bin/, lib/, share/specscope/, and what its tasks read; manifest.txt lists them):
#   core      the CUDA tests (backend parity and its fixtures, each kernel against its CPU reference, the
#             references themselves, every method's sampling test with the target on the GPU); the base, the EAGLE-3
#             head and the streaming model (methods vanilla, eagle3, streaming, lookahead, pld); benchmarks
#   drafters  the base, the SpS draft model, Medusa-2 (the base's LoRA fine-tune and its heads) and the EAGLE-1 head
#             (methods vanilla, sps, medusa, eagle1, eagle2). The EAGLE-1 head moved here from core on 2026-12-07,
#             when the mixture-of-experts and Gemma 2 fixtures and kernels took core to 57.6 MiB.
#   peers     llama.cpp's CUDA llama-bench (bench/build_llamacpp.sh --cuda 90, built here first: ~30 minutes the first
#             time), the gguf package and the converter that writes the shapes as BF16 GGUF files, and the base's
#             tokenizer files only (no family, no methods): the 1B and 8B shapes against llama.cpp and transformers
#   all       the whole family and no fixtures (every method): 58 MiB, so it
#             fits only when nearly all of the source tree stays behind (move all but scripts/ and bench/ out)
# The family is 95 MB and the fixtures 17 MB, so one part cannot hold everything; the base travels in both, since
# every method is measured against vanilla on its own target in the same run.
#
# What does not travel: cuBLAS (540 MB; the GPU image's CUDA 13 toolkit and PyTorch's nvidia-cublas wheel both
# have libcublas.so.13, which gpu-check.sh finds), glibc and libgcc (the image's are newer than Debian 12's, so
# binaries built here run there), and the CUDA runtime (linked statically).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build out=$here/gpu-bundle limit_mib=57 parts="core drafters"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --limit-mib) limit_mib=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    *) echo "gpu-pack.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
die() { echo "gpu-pack.sh: $*" >&2; exit 1; }

grep -q '^SPECSCOPE_HAVE_CUDA:INTERNAL=1' "$build/CMakeCache.txt" 2>/dev/null ||
  grep -q 'SPECSCOPE_CUDA:STRING=ON\|SPECSCOPE_CUDA:STRING=AUTO' "$build/CMakeCache.txt" 2>/dev/null ||
  die "$build is not a CMake build directory with the CUDA backend (run scripts/build.sh with nvcc on PATH)"
echo "gpu-pack: building the CLI and the CUDA tests in $build" >&2
tests=(cuda_parity_test cuda_kernels_test kernel_refs_test method_sampling_test)
cmake --build "$build" --target specscope-cli "${tests[@]}" -j "$(nproc)" >&2 ||
  die "the build failed"
ldd "$build/app/specscope-cli" | grep -q libcublas || die "$build/app/specscope-cli was built without the CUDA backend"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
common=$stage/common
mkdir -p "$common/bin" "$common/lib" "$common/share/specscope/prompts"
cp "$build/app/specscope-cli" "${tests[@]/#/$build/tests/}" "$common/bin/"
# Without their symbol tables (4 MB of 45): the core part has to fit beside the checkout in one call.
strip --strip-unneeded "$common"/bin/*
# carry_libs DEST BINARY...: the libraries to carry, everything the binaries load but the C library family, libgcc
# and CUDA's own, into DEST.
carry_libs() {
  local dest=$1
  shift
  for bin in "$@"; do
    ldd "$bin" | awk '/=> \//{print $3}'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libgcc_s.so* | libcublas* | libcudart* | libcuda.so*) ;;
      *) cp -L "$lib" "$dest/" ;;
    esac
  done
}
carry_libs "$common/lib" "$common"/bin/*
cp "$here/assets/prompts/heldout.jsonl" "$common/share/specscope/prompts/"
cp "$here/scripts/gpu-check.sh" "$common/"
(cd "$here" && git rev-parse HEAD 2>/dev/null || echo unknown) > "$common/COMMIT"

family=$here/assets/models
models_of() {  # PART -> the family directories it carries
  case "$1" in
    core) echo base eagle3 streaming tokenizer ;;
    drafters) echo base draft medusa2 eagle1 tokenizer ;;
    all) echo base eagle1 eagle3 streaming draft medusa2 tokenizer ;;
    peers) ;;
    *) die "unknown part $1 (core, drafters, peers, all)" ;;
  esac
}
methods_of() {
  case "$1" in
    core) echo vanilla,eagle3,streaming,lookahead,pld ;;
    drafters) echo vanilla,sps,medusa,eagle1,eagle2 ;;
    all) echo vanilla,sps,eagle1,eagle2,eagle3,medusa,streaming,lookahead,pld ;;
    peers) ;;
  esac
}
# The peers part's llama.cpp: its CUDA llama-bench (static ggml and llama; the CUDA runtime and cuBLAS are the
# machine's, found as for specscope-cli) and the gguf package of the same source, which the converter imports.
add_llamacpp() {  # DIR
  local bindir src
  bindir=$(bash "$here/bench/build_llamacpp.sh" --cuda 90 | tail -n 1) || die "could not build llama.cpp's CUDA llama-bench"
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$bindir/../CMakeCache.txt")  # the vendored llama.cpp
  for t in "${tests[@]}"; do rm -f "$1/bin/$t"; done  # the tests are core's; this part runs none
  cp "$bindir/llama-bench" "$1/bin/" && strip --strip-unneeded "$1/bin/llama-bench"
  carry_libs "$1/lib" "$1/bin/llama-bench"
  mkdir -p "$1/tools/gguf-py" "$1/share/specscope/models/base"
  cp -a "$src/gguf-py/gguf" "$1/tools/gguf-py/"
  cp "$here/tests/fixtures/make_gguf_models.py" "$1/tools/"
  # make_synthetic_llama.py --tokenizer-from reads these three and nothing else of the base.
  cp "$family/base/tokenizer.json" "$family/base/tokenizer_config.json" "$family/base/special_tokens_map.json" \
    "$1/share/specscope/models/base/"
}
fixtures_core=(models/llama_bytelevel_f32 models/llama_bytelevel_bf16 models/llama_spm_tied_f32 models/qwen2_bf16
  models/mistral_f32 gguf_models/llama_bytelevel_f32.q8_0.gguf gguf_models/llama_bytelevel_f32.q4_0.gguf
  gguf_models/llama_spm_tied_f32.q4_1.gguf gguf_models/llama_spm_tied_f32.q5_0.gguf
  gguf_models/llama_spm_tied_f32.q5_1.gguf gguf_kquant/tiny.q4_k_m.gguf gguf_kquant/tiny.q5_k_m.gguf
  gguf_models/qwen3_f32.q8_0.gguf gguf_models/qwen3moe_f32.q8_0.gguf gguf_models/qwen2moe_f32.q8_0.gguf models/qwen3_bf16 gguf_models/gemma3_f32.q8_0.gguf models/gemma3_bf16
  models/gemma3_vlm_f32 gguf_models/granite_f32.q8_0.gguf gguf_models/phi3_f32.q8_0.gguf gguf_models/gemma2_f32.q8_0.gguf
  gguf_models/gemma3_wide_f32.q8_0.gguf models/tinyvocab_target
  models/tinyvocab_target_padded
  models/tinyvocab_draft models/tinyvocab_heads heads/eagle1_fitted heads/medusa_fitted streaming/tiny)
# The one golden file that travels: the fitted heads' sampling cases take their prompts from it (the heads' training
# text). Without it and tinyvocab_target_padded, 4 sampling cases failed on the H200 before sampling (2026-12-04f).
golden_kept=models/llama_bytelevel_f32/golden.json

mkdir -p "$out"
status=0
for part in $parts; do
  dir=$stage/$part
  cp -a "$common" "$dir"
  mkdir -p "$dir/share/specscope/models"
  for m in $(models_of $part); do cp -a "$family/$m" "$dir/share/specscope/models/"; done
  [ $part != peers ] || add_llamacpp "$dir"
  cp "$family/family.json" "$family/SHA256SUMS" "$dir/share/specscope/models/"
  if [ $part = core ]; then
    for f in "${fixtures_core[@]}"; do
      mkdir -p "$dir/fixtures/$(dirname "$f")"
      cp -a "$here/tests/fixtures/$f" "$dir/fixtures/$f"
    done
    # The goldens are transformers' outputs for model_parity_test, which does not travel: the CUDA tests compare
    # the GPU with the CPU backend.
    find "$dir/fixtures" -name golden.json ! -path "*/$golden_kept" -delete
  fi
  {
    echo "part=$part"
    echo "methods=$(methods_of $part)"
    echo "models=$(models_of $part | tr ' ' ',')"
    echo "fixtures=$([ $part = core ] && echo yes || echo no)"
    echo "commit=$(cat "$common/COMMIT")"
    echo "packed=$(date -u +%FT%TZ) on $(hostname)"
  } > "$dir/manifest.txt"
  tarball=$out/specscope-gpu-$part.tar.xz
  echo "gpu-pack: compressing $part" >&2
  tar -C "$dir" -cf - . | xz -T "$(nproc)" -9 > "$tarball"
  bytes=$(stat -c %s "$tarball")
  mib=$(( (bytes + 1048575) / 1048576 ))
  models=$(models_of $part)
  echo "$tarball: $mib MiB ($(du -sh "$dir" | cut -f1) unpacked; models: ${models:-none, only the tokenizer files of the base})"
  if [ "$mib" -gt "$limit_mib" ]; then
    echo "gpu-pack.sh: $tarball is $mib MiB, over the $limit_mib MiB a part may weigh" >&2
    status=1
  fi
done
exit $status
