#!/usr/bin/env python3
"""Trains SpecScope's draft model: a smaller Llama sharing the base model's tokenizer.

Two modes:
  * text (default): next-token cross-entropy on the chat corpus, like the base model;
  * --distill BASE_DIR: DistillSpec-style distillation: the loss is the forward KL(p_base || q_draft) over the
    vocabulary at every assistant position of the corpus, with the exported base model frozen (bf16 on CUDA).
    --ce-weight A mixes in A x cross-entropy on the corpus text (default 0).

CPU sanity run:
  python3 training/train_draft.py --tokenizer runs/tok --out runs/draft --max-steps 50 [--distill runs/base]
The real size (about 4 M parameters, 8 MB in bf16):
  python3 training/train_draft.py --tokenizer runs/tok --out runs/draft --device cuda --distill runs/base \\
      --hidden 256 --layers 4 --heads 4 --kv-heads 2 --intermediate 768 --context 512 \\
      --batch-size 64 --lr 3e-3 --max-minutes 2

Same options and outputs as train_base.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm_train  # noqa: E402

DEFAULTS = dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=192, context=256, batch_size=8,
                lr=3e-3, warmup=20, eval_every=100)


def extra(ap):
    ap.add_argument("--distill", default=None, metavar="BASE_DIR",
                    help="exported base model to distil from (forward KL); default: train on text")
    ap.add_argument("--ce-weight", type=float, default=0.0,
                    help="with --distill: weight of the text cross-entropy mixed into the KL loss")


def main(argv=None):
    args = lm_train.parse(DEFAULTS, "draft", extra=extra, argv=argv)
    if args.distill:
        from transformers import AutoConfig
        base = AutoConfig.from_pretrained(args.distill)
        if args.context > base.max_position_embeddings:
            raise SystemExit(f"--context {args.context} exceeds the base model's {base.max_position_embeddings}")
    else:
        args.ce_weight = 0.0
    return lm_train.run(args, "draft", teacher_dir=args.distill)


if __name__ == "__main__":
    main()
