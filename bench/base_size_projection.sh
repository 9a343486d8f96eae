#!/usr/bin/env bash
# Would a larger base let speculation pay on this CPU? (issue 19, item 3.) Makes random-weight bf16 Llamas of three
# larger sizes and a one-layer model of each width (and of the shipped base's), races the shipped family once with
# tree=auto on the held-out prompts, calibrates it four more times on their first eight, then runs
# build/bench/base_size_projection (see its header).
# Usage: bash bench/base_size_projection.sh OUT_DIR [-- extra base_size_projection arguments]
# Needs the training venv (scripts/python-venv.sh) for the synthetic models; a fresh XDG_CACHE_HOME so that the
# calibration is measured now, on this build and this machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: bash bench/base_size_projection.sh OUT_DIR [-- args]}
shift
[[ "${1:-}" == "--" ]] && shift
py=$(bash "$here/scripts/python-venv.sh")/bin/python
cli=$here/build/app/specscope-cli
tool=$here/build/bench/base_size_projection
[[ -x $cli && -x $tool ]] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
mkdir -p "$out"
models=$(mktemp -d)
cache=$(mktemp -d)
trap 'rm -rf "$models" "$cache"' EXIT

# name: hidden layers heads kv-heads ffn (vocabulary 4096 and head_dim 64 throughout, as the shipped base's).
shapes=("s14 384 8 6 2 1024" "s38 512 12 8 2 1536" "s66 768 10 12 4 2048" "s109 1024 10 16 4 2560")
make() {  # DIR hidden layers heads kv ffn
  "$py" "$here/bench/make_synthetic_llama.py" --dtype bf16 --vocab 4096 --hidden "$2" --layers "$3" --heads "$4" \
    --kv-heads "$5" --intermediate "$6" "$1" > /dev/null 2>&1
}
args=()
for s in "${shapes[@]}"; do
  read -r name h l nh kv f <<< "$s"
  make "$models/head_$name" "$h" 1 "$nh" "$kv" "$f"
  if [[ $name == s14 ]]; then
    args+=(--reference "$here/assets/models/base" "$models/head_$name")
  else
    make "$models/base_$name" "$h" "$l" "$nh" "$kv" "$f"
    args+=(--shape "$name" "$models/base_$name" "$models/head_$name")
  fi
done

echo "[projection] racing the shipped family once for its tree=auto calibration" >&2
methods=vanilla,eagle1,eagle2,eagle3,medusa,lookahead,pld
XDG_CACHE_HOME=$cache "$cli" compare --methods $methods --prompt-file "$here/assets/prompts/heldout.jsonl" --chat \
  --max-tokens 96 --interleaved --no-record --json > "$out/calibration_compare.json" 2> /dev/null
# Four more calibrations, each in a fresh cache on the same eight prompts it reads (the held-out file's first eight):
# the tool takes each trial's median time (one calibration in a busy spell reads every step dearer).
calibrations=("$out/calibration_compare.json")
head -8 "$here/assets/prompts/heldout.jsonl" > "$models/prompts8.jsonl"
for i in 2 3 4 5; do
  echo "[projection] calibration $i of 5" >&2
  fresh=$(mktemp -d -p "$cache")
  XDG_CACHE_HOME=$fresh "$cli" compare --methods $methods --prompt-file "$models/prompts8.jsonl" --chat \
    --max-tokens 8 --no-record --json > "$out/calibration_$i.json" 2> /dev/null
  calibrations+=("$out/calibration_$i.json")
done
{
  echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; commit $(git -C "$here" rev-parse --short HEAD)"
  echo "command: bash bench/base_size_projection.sh $out $*"
  XDG_CACHE_HOME=$cache "$tool" --calibration "${calibrations[@]}" "${args[@]}" --out "$out/projection.json" "$@" 2> /dev/null
} | tee "$out/projection.txt"
