#!/usr/bin/env python3
"""Trains SpecScope's base (target) model: a LlamaForCausalLM from scratch on the chat corpus.

CPU sanity run (the defaults are tiny):
  python3 training/train_base.py --tokenizer runs/tok --out runs/base --max-steps 50
The real size (about 14 M parameters, 28 MB in bf16), as training/pipeline.sh runs it on a GPU:
  python3 training/train_base.py --tokenizer runs/tok --out runs/base --device cuda \\
      --hidden 384 --layers 8 --heads 6 --kv-heads 2 --intermediate 1024 --context 512 \\
      --batch-size 64 --lr 2e-3 --warmup-steps 200 --max-minutes 5

Exports OUT/{config.json, generation_config.json, model*.safetensors, tokenizer*.json, train_log.jsonl,
loss_curve.png, training_summary.json}; checkpoints and the token cache live in OUT.work (--work).
See lm_train.py for the data, loss and schedule details.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm_train  # noqa: E402

DEFAULTS = dict(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=384, context=256, batch_size=8,
                lr=2e-3, warmup=20, eval_every=100)


def main(argv=None):
    args = lm_train.parse(DEFAULTS, "base", argv=argv)
    return lm_train.run(args, "base")


if __name__ == "__main__":
    main()
