#!/usr/bin/env bash
# SpecScope model family, end to end: (corpus, already built and shipped) -> tokenizer -> base -> draft -> check
# -> draft heads on the frozen base (EAGLE-1, EAGLE-3, Medusa-1).
#
#   bash training/pipeline.sh --device cuda --minutes-base 5 --minutes-draft 2 --out training/runs/h100
#   bash training/pipeline.sh --device cpu --tiny --out /tmp/ss-cpu          # a 1-2 minute CPU smoke run
#
# Options:
#   --device cuda|cpu|auto   (auto)
#   --out DIR                where tokenizer/, base/, draft/ (exports) and *.work/ (checkpoints) go
#                            (default training/runs/<date-time>)
#   --minutes-base N         wall-clock budget of the base run, startup included (default 5)
#   --minutes-draft N        same for the draft (default 2)
#   --minutes-eagle N        EAGLE-1 head -> DIR/eagle1 (default 2; 0 skips it)
#   --minutes-eagle3 N       EAGLE-3 head -> DIR/eagle3 (default 3; 0 skips it)
#   --minutes-medusa N       Medusa-1 heads -> DIR/medusa (default 2; 0 skips them)
#   --self-distill N         heads train on the base's own answers to N training prompts (default 0: the corpus)
#   --epochs-base N          passes over the corpus for the base (default 8; 0: only the time budget)
#   --epochs-draft N         same for the draft (default 4)
#                            (the first limit reached ends a run; the LR schedule anneals to whichever it is)
#   --draft-mode distill|text  DistillSpec KL from the base (default) or plain text training
#   --tiny                   tiny model sizes and corpus slices (CPU smoke test)
#   --resume                 keep an existing tokenizer and continue from the checkpoints in DIR
#   --skip-eval              no held-out generation check at the end
#   --export-dtype bfloat16|float16   (bfloat16)
# Python: $PYTHON if set; else python3 when it imports torch, transformers and tokenizers (the GPU machine);
# else the project venv from scripts/python-venv.sh (developer machines).
# Total wall time ~ minutes-base + minutes-draft + ~1 minute (tokenizer, exports, the final check).
set -euo pipefail
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

me1=2 me3=3 mmd=2 sd=0
device=auto out="" mb=5 md=2 eb=8 ed=4 mode=distill tiny=0 resume=0 skip_eval=0 edtype=bfloat16
while (($#)); do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --minutes-base) mb=$2; shift 2 ;;
    --minutes-draft) md=$2; shift 2 ;;
    --minutes-eagle) me1=$2; shift 2 ;;
    --minutes-eagle3) me3=$2; shift 2 ;;
    --minutes-medusa) mmd=$2; shift 2 ;;
    --self-distill) sd=$2; shift 2 ;;
    --epochs-base) eb=$2; shift 2 ;;
    --epochs-draft) ed=$2; shift 2 ;;
    --draft-mode) mode=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --resume) resume=1; shift ;;
    --skip-eval) skip_eval=1; shift ;;
    --export-dtype) edtype=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "pipeline.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" ]] || out="$root/training/runs/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [[ -n "${PYTHON:-}" ]]; then
  py=$PYTHON
elif python3 -c 'import torch, transformers, tokenizers' 2>/dev/null; then
  py=python3
else
  py="$(bash "$root/scripts/python-venv.sh")/bin/python"
fi
t0=$(date +%s)
say() { echo "[pipeline $(( $(date +%s) - t0 ))s] $*"; }
say "python: $py ($($py -c 'import sys, torch, transformers; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())'))"

data="$root/training/data"
if [[ ! -f "$data/train.jsonl.gz" || ! -f "$data/validation.jsonl.gz" ]]; then
  echo "pipeline.sh: $data/{train,validation}.jsonl.gz missing; build them with training/corpus/build_corpus.py" >&2
  exit 1
fi

if ((tiny)); then
  tok_args=(--vocab 1024 --max-chars 2000000)
  base_args=(--hidden 96 --layers 3 --heads 4 --kv-heads 2 --intermediate 256 --context 256 --batch-size 8
             --lr 3e-3 --warmup-steps 10 --max-train-convs 4000 --max-val-convs 200 --eval-every 25 --eval-rows 16
             --ckpt-every 0 --threads 1)
  draft_args=(--hidden 64 --layers 2 --heads 4 --kv-heads 2 --intermediate 192 --context 256 --batch-size 8
              --lr 3e-3 --warmup-steps 10 --max-train-convs 4000 --max-val-convs 200 --eval-every 25 --eval-rows 16
              --ckpt-every 0 --threads 1)
  eval_args=(--n 8 --max-new 32 --show 2)
  head_args=(--context 128 --batch-size 8 --lr 3e-3 --warmup-steps 10 --max-train-convs 2000 --max-val-convs 100
             --eval-every 25 --eval-rows 8 --ckpt-every 0 --threads 1)
  e3_args=(--draft-vocab 512)
  sd_args=(--sd-max-new 32)
else
  tok_args=(--vocab 4096 --max-chars 15000000)
  base_args=(--hidden 384 --layers 8 --heads 6 --kv-heads 2 --intermediate 1024 --context 512 --batch-size 64
             --lr 2e-3 --warmup-steps 200 --eval-every 250 --eval-rows 128 --ckpt-every 500)
  draft_args=(--hidden 256 --layers 4 --heads 4 --kv-heads 2 --intermediate 768 --context 512 --batch-size 64
              --lr 3e-3 --warmup-steps 100 --eval-every 250 --eval-rows 128 --ckpt-every 500)
  eval_args=(--n 48 --max-new 96 --show 3)
  head_args=(--context 512 --batch-size 32 --lr 1e-3 --warmup-steps 100 --eval-every 250 --eval-rows 64
             --ckpt-every 500)
  e3_args=(--draft-vocab 2048)
  sd_args=(--sd-max-new 192 --sd-batch 128)
fi
common=(--data "$data" --tokenizer "$out/tokenizer" --cache "$out/cache" --device "$device" --export-dtype "$edtype")
res=(); ((resume)) && res=(--resume auto)

if ((resume)) && [[ -f "$out/tokenizer/tokenizer.json" ]]; then
  say "tokenizer: keeping $out/tokenizer"
else
  say "tokenizer -> $out/tokenizer"
  $py "$here/train_tokenizer.py" --data "$data" --out "$out/tokenizer" "${tok_args[@]}"
fi

say "base model -> $out/base (budget $mb min, $eb epochs)"
$py "$here/train_base.py" "${common[@]}" --out "$out/base" --max-minutes "$mb" --max-epochs "$eb" \
  "${base_args[@]}" "${res[@]}"

draft_extra=()
[[ "$mode" == distill ]] && draft_extra=(--distill "$out/base")
say "draft model ($mode) -> $out/draft (budget $md min, $ed epochs)"
$py "$here/train_draft.py" "${common[@]}" --out "$out/draft" --max-minutes "$md" --max-epochs "$ed" \
  "${draft_args[@]}" \
  "${draft_extra[@]}" "${res[@]}"

if ((!skip_eval)); then
  say "held-out check (base greedy samples, draft agreement)"
  $py "$here/eval_pair.py" --base "$out/base" --draft "$out/draft" --device "$device" \
    --prompts "$root/assets/prompts/heldout.jsonl" --json "$out/eval.json" "${eval_args[@]}" \
    || say "held-out check failed (the exports are still in place)"
fi

# draft heads on the frozen base (exports in the official EAGLE-1 / EAGLE-3 / Medusa-1 layouts)
hcommon=(--base "$out/base" --data "$data" --device "$device" --export-dtype "$edtype" "${head_args[@]}")
((sd > 0)) && hcommon+=(--self-distill "$sd" "${sd_args[@]}")
hres=(); ((resume)) && hres=(--resume auto)
run_head() {  # script minutes outdir [extra args]
  local script=$1 minutes=$2 dir=$3; shift 3
  if [[ "$minutes" == 0 || "$minutes" == 0.0 ]]; then say "$(basename "$dir"): skipped"; return; fi
  say "$(basename "$dir") head -> $dir (budget $minutes min)"
  $py "$here/$script" "${hcommon[@]}" --out "$dir" --max-minutes "$minutes" "$@" "${hres[@]}"
}
run_head train_eagle.py "$me1" "$out/eagle1"
run_head train_eagle3.py "$me3" "$out/eagle3" "${e3_args[@]}"
run_head train_medusa.py "$mmd" "$out/medusa"

say "summary"
$py - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
rows = []
for name in ("base", "draft"):
    d = os.path.join(out, name)
    s = json.load(open(os.path.join(d, "training_summary.json")))
    mb = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".safetensors")) / 1e6
    kl = f", val KL {s['final_val_kl']:.3f}" if s.get("final_val_kl") is not None else ""
    print(f"  {name:5s} {s['params'] / 1e6:6.2f} M params  {mb:5.1f} MB  {s['steps']} steps  "
          f"{s['tokens_seen'] / 1e6:.0f} M tokens ({s['epochs']} epochs)  val loss {s['final_val_loss']:.3f}{kl}  "
          f"[{s['stop_reason']}, {s['wall_s']:.0f}s]  {d}")
    rows.append(mb)
print(f"  total exported weights: {sum(rows):.1f} MB")
for name in ("eagle1", "eagle3", "medusa"):
    f = os.path.join(out, name, "training_summary.json")
    if not os.path.exists(f):
        continue
    s = json.load(open(f))
    v = s["final_val"]
    acc = v.get("acc", v.get("acc0"))
    extra = f", step-7 acc {v['acc_last']:.3f}" if "acc_last" in v else ""
    extra += f", head-5 acc {v['acc4']:.3f}" if "acc4" in v else ""
    print(f"  {name:6s} {s['params'] / 1e6:6.2f} M params  {s['steps']} steps  {s['tokens_seen'] / 1e6:.1f} M tokens  "
          f"val top-1 {acc:.3f}{extra}  {s['tokens_per_s']} tok/s  [{s['stop_reason']}, {s['wall_s']:.0f}s]")
e = os.path.join(out, "eval.json")
if os.path.exists(e):
    r = json.load(open(e))
    if "draft_agreement" in r:
        print(f"  held-out: draft agrees with base on {r['draft_agreement']:.1%} of greedy tokens; "
              f"gamma={r['gamma']} greedy speculative decoding -> {r['tokens_per_base_pass']:.2f} tokens/base pass")
EOF
say "done in $(( $(date +%s) - t0 ))s: $out"
