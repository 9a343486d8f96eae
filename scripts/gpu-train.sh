#!/usr/bin/env bash
# Issue 19's device calls: one head of the shipped family retrained on a GPU inside one call of the device tool (a
# command runs at most 10 minutes; a call carries at most 64 MiB; at most 8 files of 16 MiB come back), from the
# shipped head, on the corpus and on the base's own answers generated in the same call. Each call is a warm restart
# from the head the last one brought back (the optimizer's state, three times the head, does not come back), with a
# new --seed, so that every call's answers are new text.
#
#   bash scripts/gpu-train.sh pack [--head eagle3|eagle1|medusa|medusa2] [--from DIR] [--out gpu-bundle] [--distilled-mib 16]
#       Here, before `gpu-stage.sh out`: the base, the head to start from (--from, default the shipped one; for
#       medusa2, Medusa-2's heads and LoRA trained together (train_medusa.py --joint-layers), the shipped Medusa-2
#       or another medusa2 export: its adapter and heads/; --from assets/models/medusa starts from Medusa-1's heads), the
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
#   bash scripts/gpu-train.sh pack --head base [--shape 512x10] [--epochs 8] [--with-head eagle3] [--out gpu-bundle]
#       Issue 19, item 3: a base larger than the shipped one, trained from scratch in one call. The bundle holds the
#       tokenizer and the corpus with the manuals' prose (build_corpus.py --with-docs; fetch_sources.sh --with-docs
#       installs them). --shape HIDDENxLAYERS (FFN 3x hidden, heads of 64, 2 KV heads up to hidden 512, then 4):
#       its bf16 export must come back in one call (64 MiB), so 512x10 (32.3M parameters, 64.6 MB) is the largest
#       of that width; bench/base_size_projection.sh measured what 38-66M bases would let speculation gain here.
#       `run` trains it with the shipped base's recipe (batch 64 x 512, lr 2e-3) until --epochs or the budget, and
#       brings back its shards and one meta.tar of the small files (config, tokenizer, logs): 8 files at most.
#       --with-head eagle3 also trains an EAGLE-3 head for that base in the same call (its last --head-minutes, 3 by
#       default: the new base's own greedy answers for --distill-minutes, 0.75 by default, then the head from scratch
#       on them and the corpus, over the whole vocabulary, exported in bf16), so that one call answers both of item
#       3's questions here: does the larger base answer fluently, and does speculation pay on it on this CPU. Base
#       and head must come back together: 512x8 (26.2M parameters, 52 MB, and a 12.6 MB head) is the largest.
#   bash scripts/gpu-train.sh shape HIDDENxLAYERS
#       The base's recipe options for that shape and the bf16 bytes pack counts for it and for its EAGLE-3 head.
#   bash scripts/gpu-train.sh take DIR [--into training/runs/NAME]
#       Here, after the call: joins the split files of DIR/HEAD into a head directory (default
#       training/runs/gpu-HEAD-<date>) that specscope-cli loads, and prints the held-out comparison to run:
#       compare --chat over assets/prompts/heldout.jsonl, greedy, 96 tokens, the shipped head against this one.
#       A base's call becomes a model folder (training/runs/gpu-base-<date>), its head, if any, in eagle3/ inside it,
#       named by a family.json there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "gpu-train.sh: $*" >&2; exit 2; }
recipe_of() {  # HEAD -> its training recipe
  case "$1" in
    base) echo train_base.py ;;
    eagle3) echo train_eagle3.py ;;
    eagle1) echo train_eagle.py ;;
    medusa | medusa2) echo train_medusa.py ;;
    *) die "unknown head $1 (eagle3, eagle1, medusa, medusa2, base)" ;;
  esac
}
limit_part_bytes=$((15 << 20))  # files come back at 16 MiB at most

# The base's options for a shape HIDDENxLAYERS, one per line (bf16 bytes of the export on the last: "bytes N").
base_shape() {
  local hidden=${1%x*} layers=${1#*x}
  [[ "$1" =~ ^[0-9]+x[0-9]+$ ]] && [ $((hidden % 64)) = 0 ] && [ "$hidden" -ge 64 ] && [ "$layers" -ge 1 ] ||
    die "--shape $1: expected HIDDENxLAYERS with HIDDEN a multiple of 64 (e.g. 512x10)"
  local kv=2 ffn=$((3 * hidden)) vocab=4096
  [ "$hidden" -le 512 ] || kv=4
  local heads=$((hidden / 64))
  [ "$kv" -le "$heads" ] || kv=$heads  # (a rehearsal's 64-wide base: one head)
  # Parameters: the tied embedding, and per layer q and o (hidden^2 each), k and v (hidden x kv x 64 each), the
  # three FFN matrices and two norms; the final norm.
  local per_layer=$((2 * hidden * hidden + 2 * hidden * kv * 64 + 3 * hidden * ffn + 2 * hidden))
  echo "--hidden $hidden --layers $layers --heads $heads --kv-heads $kv --intermediate $ffn"
  echo "bytes $((2 * (vocab * hidden + layers * per_layer + hidden)))"
  # An EAGLE-3 head for it over the whole vocabulary, in bf16 (train_eagle3.py's layout): fc from three layers'
  # features, one layer whose q, k and v read 2 x hidden, its FFN, three norms, the LM head; d2t (int64) and t2d (bool).
  local head_params=$((3 * hidden * hidden + 2 * hidden * hidden + 2 * 2 * hidden * kv * 64 + hidden * hidden +
    3 * hidden * ffn + 4 * hidden + vocab * hidden))
  echo "eagle3_bytes $((2 * head_params + 9 * vocab))"
}

pack_base() {
  local shape=$1 epochs=$2 out=$3 with_head=$4
  local spec bytes
  spec=$(base_shape "$shape") || exit 2
  bytes=$(echo "$spec" | sed -n 's/^bytes //p')
  case "$with_head" in
    "") ;;
    eagle3) bytes=$((bytes + $(echo "$spec" | sed -n 's/^eagle3_bytes //p')))
      # EAGLE-3 reads three distinct layers, 2, N/2 and N-3 (the official code's choice): 7 layers at least.
      [ "${shape#*x}" -ge 7 ] || die "pack: --with-head eagle3 needs a base of 7 layers or more (--shape $shape)" ;;
    *) die "pack: --with-head $with_head: only eagle3 is trained beside a base" ;;
  esac
  # 64 MiB come back in all; the small files take about half a MiB of it, and run keeps log.txt under 512 KiB.
  [ "$bytes" -le $((63 << 20)) ] ||
    die "pack: --shape $shape${with_head:+ with its $with_head head} exports $((bytes >> 20)) MiB in bf16, more than one call brings back (63 MiB with the logs)"
  local stage
  stage=$(mktemp -d)
  # Once, on this function's return (a RETURN trap would otherwise also fire when pack returns, stage unset there).
  trap 'rm -rf "$stage"; trap - RETURN' RETURN
  mkdir -p "$stage/models/tokenizer" "$stage/data" "$out"
  cp "$here/assets/models/base"/{tokenizer.json,tokenizer_config.json,special_tokens_map.json} "$stage/models/tokenizer/"
  echo "gpu-train: building the corpus with the manuals (about a minute)" >&2
  python3 "$here/training/corpus/build_corpus.py" --with-docs --out "$stage/data" \
    --prompts-out "$stage/heldout.jsonl" --no-text > "$stage/corpus.log" 2>&1 || { cat "$stage/corpus.log" >&2; die "pack: the corpus build failed"; }
  cmp -s "$stage/heldout.jsonl" "$here/assets/prompts/heldout.jsonl" ||
    die "pack: the corpus's held-out prompts differ from assets/prompts/heldout.jsonl (other package versions?)"
  cp "$here/training/data/NOTICE" "$stage/data/"
  { echo "head=base"; echo "shape=$shape"; echo "epochs=$epochs"; echo "with_head=$with_head"; echo "export_bytes=$bytes";
    echo "commit=$(cd "$here" && git rev-parse HEAD)"; echo "packed=$(date -u +%FT%TZ) on $(hostname)";
    tail -n 3 "$stage/corpus.log" | sed 's/^/corpus: /'; } > "$stage/manifest.txt"
  local tarball=$out/specscope-gpu-train-base.tar.xz
  tar -C "$stage" -cf - models data manifest.txt | xz -T "$(nproc)" -3 > "$tarball"
  echo "$tarball: $(( ($(stat -c %s "$tarball") + 1048575) >> 20 )) MiB (the source tree adds ~5 MiB to a call)"
}

pack() {
  local head=eagle3 from="" out=$here/gpu-bundle distilled=$here/training/runs/distilled distilled_mib=16
  local shape="" epochs=8 with_head=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --shape) shape=$2; shift 2 ;;
      --with-head) with_head=$2; shift 2 ;;
      --epochs) epochs=$2; shift 2 ;;
      --head) head=$2; shift 2 ;;
      --from) from=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --distilled-mib) distilled_mib=$2; shift 2 ;;
      *) die "pack: unknown argument $1" ;;
    esac
  done
  recipe_of "$head" >/dev/null
  if [ "$head" = base ]; then
    [ -n "$shape" ] || { shape=512x10; [ -z "$with_head" ] || shape=512x8; }  # the largest that come back
    pack_base "$shape" "$epochs" "$out" "$with_head"
    return
  fi
  [ -z "$with_head$shape" ] || die "pack: --with-head and --shape go with --head base"
  from=${from:-$here/assets/models/$head}  # for medusa2 the shipped Medusa-2; --from assets/models/medusa starts afresh
  if [ -f "$from/adapter_model.safetensors" ]; then  # a Medusa-2 export continues only as Medusa-2
    [ "$head" = medusa2 ] || die "pack: $from is a Medusa-2 export (an adapter with heads/): pack it with --head medusa2"
    [ -f "$from/heads/config.json" ] || die "pack: $from has an adapter but no heads/config.json"
  else
    [ -f "$from/config.json" ] || die "pack: $from holds no head (config.json)"
  fi
  [ -f "$here/training/data/train.jsonl.gz" ] || die "pack: training/data is not here (run gpu-stage.sh back first)"
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/models" "$stage/data" "$out"
  # Only what the recipes read: the base's weights, config and tokenizer; the head's tensors and config.
  cp -r "$here/assets/models/base" "$stage/models/base"
  rm -f "$stage/models/base"/*.png "$stage/models/base"/train_log.jsonl
  mkdir -p "$stage/models/$head"
  if [ -f "$from/adapter_model.safetensors" ]; then  # a Medusa-2 export: the LoRA, and the heads beside it
    mkdir -p "$stage/models/$head/heads"
    cp "$from"/adapter_config.json "$from"/adapter_model.safetensors "$stage/models/$head/"
    cp "$from"/heads/config.json "$from"/heads/*.safetensors "$stage/models/$head/heads/"
  else
    cp "$from"/config.json "$from"/*.safetensors "$stage/models/$head/"
  fi
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
  local budget=540 distill_minutes=2.5 seed="" device=cuda batch="" context=512 py=${PYTHON:-python3}
  local in_flight=512 shard=2048 val_convs=500 head_minutes=3 distill_given=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --budget) budget=$2; shift 2 ;;
      --distill-minutes) distill_minutes=$2; distill_given=1; shift 2 ;;
      --head-minutes) head_minutes=$2; shift 2 ;;
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
  local head with_head
  head=$(sed -n 's/^head=//p' "$work/manifest.txt")
  with_head=$(sed -n 's/^with_head=//p' "$work/manifest.txt")  # a head trained beside a base (pack --with-head)
  [ -n "$distill_given" ] || [ -z "$with_head" ] || distill_minutes=0.75
  [ -n "$batch" ] || { batch=32; [ "$head" != base ] || batch=64; }  # the recipes' batch sizes on the GPU
  local recipe
  recipe=$(recipe_of "$head")
  config_value() { "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
  minutes() { awk -v s="$1" 'BEGIN { printf "%.2f", s / 60 }'; }  # seconds -> a recipe's --max-minutes
  # float32 keeps the next warm restart's start exact; Medusa's five heads are 34 MB so, 17 MB (two parts) in bf16.
  local dtype=float32 recipe_args=()
  [ "$head" != medusa ] && [ "$head" != medusa2 ] || dtype=bfloat16
  if [ "$head" = medusa2 ]; then  # Medusa-2: a LoRA on every layer of the base, trained with the heads
    recipe_args=(--joint-layers "$(config_value "$work/models/base/config.json" num_hidden_layers)" --lr 3e-4)
  fi
  seed=${seed:-$(date +%s)}
  {
    echo "# gpu-train: $head"
    echo
    echo "- device: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU ($device)")"
    echo "- torch: $($py -c 'import torch; print(torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -n 1)"
    sed 's/^/- bundle /' "$work/manifest.txt"
    if [ "$head" = base ] && [ -n "$with_head" ]; then
      echo "- seed $seed, budget $budget s (the $with_head head its last $head_minutes min, distillation $distill_minutes of them), batch $batch x $context"
    elif [ "$head" = base ]; then
      echo "- seed $seed, budget $budget s, batch $batch x $context"
    else
      echo "- seed $seed, budget $budget s, distillation $distill_minutes min, batch $batch x $context"
    fi
    echo
    echo "| step | command | exit | seconds | result |"
    echo "|---|---|---|---|---|"
  } > "$md"
  # Issue 19, item 3: the larger base, from scratch, with the shipped base's recipe; shards back as they are, the small
  # files in one meta.tar (8 files come back at most).
  run_base() {
    local shape epochs spec left
    shape=$(sed -n 's/^shape=//p' "$work/manifest.txt")
    epochs=$(sed -n 's/^epochs=//p' "$work/manifest.txt")
    spec=$(base_shape "$shape" | head -n 1)
    left=$((budget - (SECONDS - t0) - 75))
    [ -z "$with_head" ] || left=$(awk -v l="$left" -v m="$head_minutes" 'BEGIN { printf "%d", l - 60 * m }')
    [ "$left" -ge 30 ] || die "run: $left s left for training"
    # shellcheck disable=SC2086  # spec is a list of options
    step train trained_base -- "$py" "$here/training/train_base.py" --data "$work/data" --tokenizer "$work/models/tokenizer" \
      --out "$out/base" --work "$work/run" --device "$device" $spec --context "$context" --batch-size "$batch" \
      --lr 2e-3 --warmup-steps 200 --eval-every 250 --eval-rows 128 --ckpt-every 0 --max-val-convs "$val_convs" \
      --max-epochs "$epochs" --seed "$seed" --export-dtype bfloat16 \
      --max-minutes "$(minutes "$left")" || true
    [ -f "$out/base/training_summary.json" ] || die "run: no base was exported (see $log)"
    rm -f "$out/base/loss_curve.png"
    [ -z "$with_head" ] || run_head_of_base
    (cd "$out/base" && tar -cf meta.tar $(ls | grep -v '^model.*\.safetensors$') &&
      find . -maxdepth 1 -type f ! -name meta.tar ! -name 'model*.safetensors' -delete && rm -rf "$with_head")
    trim_log
    echo >> "$md"
    echo "Finished in $((SECONDS - t0)) s of a $budget s budget." >> "$md"
    rm -rf "$work"
  }
  distill_answers() {  # BASE's greedy answers to corpus prompts in the order of --seed, into $work/sd
    step distill distilled -- "$py" "$here/training/self_distill.py" --base "$1" \
      --prompts "$work/data/train.jsonl.gz" --out "$work/sd" --device "$device" --batch-size "$in_flight" --seed "$seed" \
      --shard-size "$shard" --max-minutes "$distill_minutes" --progress lines || say "distillation failed: training on the corpus alone"
  }
  # pack --with-head eagle3: an EAGLE-3 head for the base just trained, from scratch, on the base's own greedy answers
  # (as the EAGLE authors regenerate their data with the target) and the corpus; its weights come back in
  # OUT/eagle3/, its small files inside the base's meta.tar (eagle3/), so that the call stays within 8 files. The
  # corpus's tokens are the base run's cache (the same tokenizer and files: lm_train.tokenize_split's key).
  run_head_of_base() {
    distill_answers "$out/base"
    local left=$((budget - (SECONDS - t0) - 60)) extra=()
    [ "$left" -ge 20 ] || { say "$left s left: no $with_head head trained"; return 0; }
    ls "$work/sd"/shard-*.jsonl.gz >/dev/null 2>&1 && extra+=(--extra-train "$work/sd")
    trained_dir=$out/$with_head step train_head trained -- "$py" "$here/training/$(recipe_of "$with_head")" \
      --base "$out/base" --data "$work/data" --out "$out/$with_head" --work "$work/run-$with_head" --device "$device" \
      --cache "$work/run" \
      --context "$context" --batch-size 32 --draft-vocab "$(config_value "$out/base/config.json" vocab_size)" \
      "${extra[@]}" --seed "$seed" --ckpt-minutes 0 --max-val-convs "$val_convs" --export-dtype bfloat16 \
      --max-minutes "$(minutes "$left")" || true
    [ -f "$out/$with_head/training_summary.json" ] || { say "no $with_head head was exported"; return 0; }
    mkdir -p "$out/base/$with_head"
    (cd "$out/$with_head" && rm -f loss_curve.png && find . -maxdepth 1 -type f ! -name 'model*.safetensors' \
      -exec mv {} "$out/base/$with_head/" \;)
  }
  trim_log() {  # log.txt within 512 KiB: its first 64 KiB and its last 440
    [ "$(stat -c %s "$log")" -gt $((512 << 10)) ] || return 0
    { head -c $((64 << 10)) "$log"; printf '\n[... trimmed ...]\n'; tail -c $((440 << 10)) "$log"; } > "$log.t" && mv "$log.t" "$log"
  }
  trained_base() {
    "$py" - "$out/base/training_summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("%.1f M parameters, %d steps, %.1f M tokens, %.1f epochs (%s); final validation loss %.4f" % (
      s["params"] / 1e6, s["steps"], s["tokens_seen"] / 1e6, s.get("epochs", 0), s["stop_reason"], s["final_val_loss"]))
PY
  }
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
    "$py" - "${trained_dir:-$out/$head}/training_summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("%d steps, %.1f M tokens at %s tok/s (%s); final %s" % (s["steps"], s["tokens_seen"] / 1e6, s["tokens_per_s"],
      s["stop_reason"], " ".join("%s %.4f" % kv for kv in s["final_val"].items())))
PY
  }
  if [ "$head" = base ]; then
    run_base
    return
  fi
  distill_answers "$work/models/base"
  # What is left, less a margin for reading and tokenizing the data, the final validation and the export.
  local left=$((budget - (SECONDS - t0) - 75))
  [ "$left" -ge 30 ] || die "run: $left s left for training"
  # The answers of earlier calls that came back (pack's distilled/), and this call's.
  local extra=()
  ls "$work/distilled"/*.jsonl.gz >/dev/null 2>&1 && extra+=(--extra-train "$work/distilled")
  ls "$work/sd"/shard-*.jsonl.gz >/dev/null 2>&1 && extra+=(--extra-train "$work/sd")
  step train trained -- "$py" "$here/training/$recipe" --base "$work/models/base" --data "$work/data" \
    --out "$out/$head" --work "$work/run" --device "$device" --context "$context" --batch-size "$batch" \
    --init-from "$work/models/$head" "${extra[@]}" "${recipe_args[@]}" --seed "$seed" --warmup-steps 20 --ckpt-minutes 0 --max-val-convs "$val_convs" \
    --max-minutes "$(minutes "$left")" --export-dtype "$dtype" || true
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
  if [ -f "$out/$head/adapter_config.json" ]; then
    # Medusa-2: the tokenizer's files are the base's (take puts them back) and the small files travel in one
    # meta.tar, so that the adapter, the heads' two parts and training_summary.json come back within 8 files.
    (cd "$out/$head" && rm -f tokenizer.json tokenizer_config.json special_tokens_map.json generation_config.json &&
      tar -cf meta.tar adapter_config.json heads/config.json train_log.jsonl &&
      rm adapter_config.json heads/config.json train_log.jsonl)
  fi
  local f
  while IFS= read -r -d '' f; do  # (names with spaces too)
    [ "$(stat -c %s "$f")" -gt $limit_part_bytes ] || continue
    split -b $limit_part_bytes -d -a 2 "$f" "$f.part" && rm "$f"
    say "split $(basename "$f") into $(ls "$f".part* | wc -l) parts"
  done < <(find "$out/$head" -type f -print0)
  trim_log
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
  if [ -f "$dir/base/meta.tar" ]; then  # a base: its shards, and its small files in meta.tar (the call's files are read-only)
    into=${into:-$here/training/runs/gpu-base-$(date -u +%Y%m%d-%H%M)}
    mkdir -p "$into"
    cp "$dir"/base/model*.safetensors "$into/"
    tar -C "$into" -xf "$dir/base/meta.tar"
    local h
    for h in eagle3; do  # a head trained beside it (pack --with-head): its small files came in meta.tar
      [ -f "$dir/$h/model.safetensors" ] && [ -f "$into/$h/config.json" ] || continue
      cp "$dir/$h/model.safetensors" "$into/$h/"
      # A family manifest inside the model (docs/family-manifest.md): run --method eagle3, compare and the app find
      # the head without flags, and the folder ships as it is.
      printf '{"specscope_family": 1, "target": ".", "methods": {"%s": {"head": "%s"}}}\n' "$h" "$h" > "$into/family.json"
    done
    echo "$into"
    echo "try it (greedy, chat) and time it against the shipped base:" >&2
    echo "  build/app/specscope-cli run --model $into --chat --prompt 'Explain the range function in Python.'" >&2
    echo "  build/app/specscope-cli compare --chat --prompt-file assets/prompts/heldout.jsonl --max-tokens 96 \\" >&2
    echo "    --lane vanilla:model=assets/models/base --lane vanilla:model=$into" >&2
    if [ -f "$into/eagle3/model.safetensors" ]; then
      echo "its EAGLE-3 head against the shipped pair, each against its own vanilla (held-out, greedy, tree=auto):" >&2
      echo "  build/app/specscope-cli compare --chat --prompt-file assets/prompts/heldout.jsonl --max-tokens 96 \\" >&2
      echo "    --lane vanilla:model=assets/models/base --lane eagle3:model=assets/models/base,tree=auto \\" >&2
      echo "    --lane vanilla:model=$into --lane eagle3:model=$into,head=$into/eagle3,tree=auto --interleaved" >&2
    fi
    return
  fi
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
  local rel
  for f in $(cd "$src" && find . -type f); do
    rel=${f#./}
    mkdir -p "$into/$(dirname "$rel")"
    case "$rel" in
      *.part00) cat "$src/${rel%.part00}".part* > "$into/${rel%.part00}" ;;
      *.part[0-9][0-9]) ;;  # joined with its part00
      meta.tar) tar -C "$into" -xf "$src/meta.tar" ;;
      *) cp "$src/$rel" "$into/$rel" ;;
    esac
  done
  echo "$into"
  if [ -f "$into/adapter_config.json" ]; then  # Medusa-2: a fine-tuned target of its own, with its heads
    cp "$here/assets/models/base"/{tokenizer.json,tokenizer_config.json,special_tokens_map.json,generation_config.json} "$into/"
    "${PYTHON:-python3}" - "$into/adapter_config.json" "$here/assets/models/base" <<'PY'
import json, os, sys
p = sys.argv[1]
c = json.load(open(p))
c["base_model_name_or_path"] = os.path.relpath(sys.argv[2], os.path.dirname(os.path.abspath(p)))
json.dump(c, open(p, "w"), indent=2)
PY
    echo "held-out comparison (greedy, chat, 96 tokens; each lane against its own target's vanilla):" >&2
    echo "  build/app/specscope-cli compare --chat --prompt-file assets/prompts/heldout.jsonl --max-tokens 96 \\" >&2
    echo "    --methods vanilla --lane medusa:tree=published --lane medusa:model=$into,head=$into/heads,tree=published" >&2
    return
  fi
  echo "held-out comparison (greedy, chat, 96 tokens), the shipped head against this one:" >&2
  echo "  build/app/specscope-cli compare --chat --prompt-file assets/prompts/heldout.jsonl --max-tokens 96 \\" >&2
  echo "    --methods vanilla --lane $head:head=assets/models/$head --lane $head:head=$into --interleaved" >&2
}

cmd=${1:-}
[ -n "$cmd" ] || die "usage: $0 pack|run|take|shape ... (see the head of this file)"
shift
case "$cmd" in
  shape) base_shape "${1:?shape HIDDENxLAYERS}" ;;  # what pack counts for a shape (training/tests: GpuTrainShapes)
  pack) pack "$@" ;;
  run) run "$@" ;;
  take) take "$@" ;;
  *) die "unknown command $cmd (pack, run, take, shape)" ;;
esac
