#!/usr/bin/env bash
# Issue 19's device calls: one head of the shipped family retrained on a GPU inside one call of the device tool (a
# command runs at most 10 minutes; a call carries at most 64 MiB; at most 8 files of 16 MiB come back), from the
# shipped head, on the corpus and on the base's own answers generated in the same call. Each call is a warm restart
# from the head the last one brought back (the optimizer's state, three times the head, does not come back), with a
# new --seed, so that every call's answers are new text.
#
#   bash scripts/gpu-train.sh pack [--head eagle3|eagle1|medusa] [--from DIR] [--out gpu-bundle] [--distilled-mib 16]
#       Here, before `gpu-stage.sh out`: the base, the head to start from (--from, default the shipped one), the
#       corpus (training/data) and up to --distilled-mib of the answers earlier calls brought back
#       (training/runs/distilled/) into OUT/specscope-gpu-train-HEAD.tar.xz. The recipes travel with the source tree.
#   bash scripts/gpu-train.sh run BUNDLE OUT [--budget 540] [--distill-minutes 2.5] [--seed N] [--device cuda]
#                             [--batch-size 32] [--context 512] [--in-flight 512] [--shard-size 2048]
#       On the GPU machine: the base's greedy answers to corpus prompts in the order of --seed
#       (training/self_distill.py, --in-flight answers at once, kept in whole shards) for --distill-minutes, then the head trained from the bundle's on
#       the corpus and those answers until the budget's end less a margin for loading and export, exported to
#       OUT/HEAD/ (float32; Medusa's in bfloat16; files over 15 MiB split into NAME.partNN, which `take` joins), with
#       results.md (the device, the commit, each step's command, wall time and headline) and log.txt: 8 files at
#       most. Without a GPU (the rehearsal) --device cpu with a budget of a few minutes runs the same path.
#   bash scripts/gpu-train.sh take DIR [--into training/runs/NAME]
#       Here, after the call: joins the split files of DIR/HEAD into a head directory (default
#       training/runs/gpu-HEAD-<date>) that specscope-cli loads, and prints the held-out comparison to run:
#       compare --chat over assets/prompts/heldout.jsonl, greedy, 96 tokens, the shipped head against this one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "gpu-train.sh: $*" >&2; exit 2; }
recipe_of() {  # HEAD -> its training recipe
  case "$1" in
    eagle3) echo train_eagle3.py ;;
    eagle1) echo train_eagle.py ;;
    medusa) echo train_medusa.py ;;
    *) die "unknown head $1 (eagle3, eagle1, medusa)" ;;
  esac
}
limit_part_bytes=$((15 << 20))  # files come back at 16 MiB at most

pack() {
  local head=eagle3 from="" out=$here/gpu-bundle distilled=$here/training/runs/distilled distilled_mib=16
  while [ $# -gt 0 ]; do
    case "$1" in
      --head) head=$2; shift 2 ;;
      --from) from=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --distilled-mib) distilled_mib=$2; shift 2 ;;
      *) die "pack: unknown argument $1" ;;
    esac
  done
  recipe_of "$head" >/dev/null
  from=${from:-$here/assets/models/$head}
  [ -f "$from/config.json" ] || die "pack: $from holds no head (config.json)"
  [ -f "$here/training/data/train.jsonl.gz" ] || die "pack: training/data is not here (run gpu-stage.sh back first)"
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/models" "$stage/data" "$out"
  # Only what the recipes read: the base's weights, config and tokenizer; the head's tensors and config.
  cp -r "$here/assets/models/base" "$stage/models/base"
  rm -f "$stage/models/base"/*.png "$stage/models/base"/train_log.jsonl
  mkdir -p "$stage/models/$head"
  cp "$from"/config.json "$from"/*.safetensors "$stage/models/$head/"
  cp "$here/training/data"/*.jsonl.gz "$here/training/data/NOTICE" "$stage/data/"
  # Answers earlier calls brought back (take puts them in training/runs/distilled/), newest first, up to the limit.
  local f bytes=0 size
  mkdir -p "$stage/distilled"
  for f in $(ls -t "$distilled"/*.jsonl.gz 2>/dev/null); do
    size=$(stat -c %s "$f")
    [ $((bytes + size)) -le $((distilled_mib << 20)) ] || break
    cp "$f" "$stage/distilled/" && bytes=$((bytes + size))
  done
  [ "$bytes" = 0 ] || echo "gpu-train: $((bytes >> 10)) KiB of earlier calls' answers" >&2
  { echo "head=$head"; echo "from=$from"; echo "commit=$(cd "$here" && git rev-parse HEAD)";
    echo "packed=$(date -u +%FT%TZ) on $(hostname)"; } > "$stage/manifest.txt"
  local tarball=$out/specscope-gpu-train-$head.tar.xz
  # bf16 weights lose a quarter to xz (Medusa's part: 57 -> 44 MiB), in about a minute here.
  tar -C "$stage" -cf - . | xz -T "$(nproc)" -3 > "$tarball"
  echo "$tarball: $(( ($(stat -c %s "$tarball") + 1048575) >> 20 )) MiB (the source tree adds ~5 MiB to a call)"
}

run() {
  [ $# -ge 2 ] || die "run: BUNDLE OUT are needed"
  local bundle=$1 out=$2
  shift 2
  local budget=540 distill_minutes=2.5 seed="" device=cuda batch=32 context=512 py=${PYTHON:-python3}
  local in_flight=512 shard=2048 val_convs=500
  while [ $# -gt 0 ]; do
    case "$1" in
      --budget) budget=$2; shift 2 ;;
      --distill-minutes) distill_minutes=$2; shift 2 ;;
      --seed) seed=$2; shift 2 ;;
      --device) device=$2; shift 2 ;;
      --batch-size) batch=$2; shift 2 ;;
      --context) context=$2; shift 2 ;;
      --in-flight) in_flight=$2; shift 2 ;;
      --shard-size) shard=$2; shift 2 ;;
      --max-val-convs) val_convs=$2; shift 2 ;;
      *) die "run: unknown argument $1" ;;
    esac
  done
  local t0=$SECONDS work
  work=$(mktemp -d)
  mkdir -p "$out"
  local md=$out/results.md log=$out/log.txt
  : > "$log"
  say() { echo "[gpu-train] $*" | tee -a "$log" >&2; }
  tar -C "$work" -xf "$bundle" || die "run: cannot unpack $bundle"
  local head
  head=$(sed -n 's/^head=//p' "$work/manifest.txt")
  local recipe
  recipe=$(recipe_of "$head")
  # float32 keeps the next warm restart's start exact; Medusa's five heads are 34 MB so, 17 MB (two parts) in bf16.
  local dtype=float32
  [ "$head" != medusa ] || dtype=bfloat16
  seed=${seed:-$(date +%s)}
  {
    echo "# gpu-train: $head"
    echo
    echo "- device: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU ($device)")"
    echo "- torch: $($py -c 'import torch; print(torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -n 1)"
    sed 's/^/- bundle /' "$work/manifest.txt"
    echo "- seed $seed, budget $budget s, distillation $distill_minutes min, batch $batch x $context"
    echo
    echo "| step | command | exit | seconds | result |"
    echo "|---|---|---|---|---|"
  } > "$md"
  step() {  # NAME SUMMARY-COMMAND -- COMMAND...: runs it into the log, then one row of results.md
    local name=$1 summary=$2 s0=$SECONDS rc
    shift 3
    say "== $name: $*"
    PYTHONUNBUFFERED=1 "$@" >> "$log" 2>&1 && rc=0 || rc=$?
    echo "| $name | \`${*//"$work/"/}\` | $rc | $((SECONDS - s0)) | $($summary 2>/dev/null | tr '\n' ' ') |" >> "$md"
    say "== $name: exit $rc in $((SECONDS - s0)) s"
    return $rc
  }
  distilled() {
    "$py" - "$work/sd/progress.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%d shards, %d answers, %.2f M tokens, %d truncated" % (len(r), sum(x.get("prompts", 0) for x in r),
      sum(x.get("tokens", 0) for x in r) / 1e6, sum(x.get("truncated", 0) for x in r)))
PY
  }
  trained() {
    "$py" - "$out/$head/training_summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("%d steps, %.1f M tokens at %s tok/s (%s); final %s" % (s["steps"], s["tokens_seen"] / 1e6, s["tokens_per_s"],
      s["stop_reason"], " ".join("%s %.4f" % kv for kv in s["final_val"].items())))
PY
  }
  step distill distilled -- "$py" "$here/training/self_distill.py" --base "$work/models/base" \
    --prompts "$work/data/train.jsonl.gz" --out "$work/sd" --device "$device" --batch-size "$in_flight" --seed "$seed" \
    --shard-size "$shard" --max-minutes "$distill_minutes" --progress lines || say "distillation failed: training on the corpus alone"
  # What is left, less a margin for reading and tokenizing the data, the final validation and the export.
  local left=$((budget - (SECONDS - t0) - 75))
  [ "$left" -ge 30 ] || die "run: $left s left for training"
  # The answers of earlier calls that came back (pack's distilled/), and this call's.
  local extra=()
  ls "$work/distilled"/*.jsonl.gz >/dev/null 2>&1 && extra+=(--extra-train "$work/distilled")
  ls "$work/sd"/shard-*.jsonl.gz >/dev/null 2>&1 && extra+=(--extra-train "$work/sd")
  step train trained -- "$py" "$here/training/$recipe" --base "$work/models/base" --data "$work/data" \
    --out "$out/$head" --work "$work/run" --device "$device" --context "$context" --batch-size "$batch" \
    --init-from "$work/models/$head" "${extra[@]}" --seed "$seed" --warmup-steps 20 --ckpt-minutes 0 --max-val-convs "$val_convs" \
    --max-minutes "$(awk -v s="$left" 'BEGIN { printf "%.2f", s / 60 }')" --export-dtype "$dtype" || true
  # At most 8 files come back: the plot is made again from train_log.jsonl; files over 15 MiB go in parts; this
  # call's answers come back as one file (their first shards, up to 15 MiB), for the next calls and CPU recipes.
  rm -f "$out/$head/loss_curve.png"
  local shards=() bytes=0 size
  for f in "$work/sd"/shard-*.jsonl.gz; do
    [ -f "$f" ] || continue
    size=$(stat -c %s "$f")
    [ $((bytes + size)) -le $limit_part_bytes ] || break
    shards+=("$(basename "$f")") bytes=$((bytes + size))
  done
  if [ ${#shards[@]} -gt 0 ]; then
    tar -C "$work/sd" -cf "$out/distilled-$seed.tar" "${shards[@]}"
    say "${#shards[@]} shards of answers ($((bytes >> 10)) KiB) in distilled-$seed.tar"
  fi
  local f
  for f in "$out/$head"/*; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $limit_part_bytes ] || continue
    split -b $limit_part_bytes -d -a 2 "$f" "$f.part" && rm "$f"
    say "split $(basename "$f") into $(ls "$f".part* | wc -l) parts"
  done
  echo >> "$md"
  echo "Finished in $((SECONDS - t0)) s of a $budget s budget." >> "$md"
  rm -rf "$work"
  [ -f "$out/$head/training_summary.json" ] || die "run: no head was exported (see $log)"
}

take() {
  [ $# -ge 1 ] || die "take: DIR is needed"
  local dir=$1 into=""
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --into) into=$2; shift 2 ;;
      *) die "take: unknown argument $1" ;;
    esac
  done
  local src
  src=$(dirname "$(ls "$dir"/*/training_summary.json 2>/dev/null | head -n 1)")
  [ -n "$src" ] && [ "$src" != . ] || die "take: $dir holds no exported head (*/training_summary.json)"
  local head
  head=$(basename "$src")
  into=${into:-$here/training/runs/gpu-$head-$(date -u +%Y%m%d-%H%M)}
  mkdir -p "$into"
  # This call's answers, for the next calls' bundles and for the CPU recipes (--extra-train training/runs/distilled).
  local t f base
  for t in "$dir"/distilled-*.tar; do
    [ -f "$t" ] || continue
    mkdir -p "$here/training/runs/distilled/$(basename "$t" .tar)"
    tar -C "$here/training/runs/distilled/$(basename "$t" .tar)" -xf "$t"
    for f in "$here/training/runs/distilled/$(basename "$t" .tar)"/*.jsonl.gz; do
      mv "$f" "$here/training/runs/distilled/$(basename "$t" .tar)-$(basename "$f")"
    done
    rmdir "$here/training/runs/distilled/$(basename "$t" .tar)"
    echo "answers of $(basename "$t"): training/runs/distilled/" >&2
  done
  for f in "$src"/*; do
    base=$(basename "$f")
    case "$base" in
      *.part00) cat "${f%.part00}".part* > "$into/${base%.part00}" ;;
      *.part[0-9][0-9]) ;;  # joined with its part00
      *) cp "$f" "$into/" ;;
    esac
  done
  echo "$into"
  echo "held-out comparison (greedy, chat, 96 tokens), the shipped head against this one:" >&2
  echo "  build/app/specscope-cli compare --chat --prompt-file assets/prompts/heldout.jsonl --max-tokens 96 \\" >&2
  echo "    --methods vanilla --lane $head:head=assets/models/$head --lane $head:head=$into --interleaved" >&2
}

cmd=${1:-}
[ -n "$cmd" ] || die "usage: $0 pack|run|take ... (see the head of this file)"
shift
case "$cmd" in
  pack) pack "$@" ;;
  run) run "$@" ;;
  take) take "$@" ;;
  *) die "unknown command $cmd (pack, run, take)" ;;
esac
