#!/usr/bin/env python3
"""Trains Medusa-1 heads on SpecScope's frozen base model (Medusa paper / FasterDecoding/Medusa recipe).

--heads (5) heads of --head-layers (1) ResBlocks: head i = x + SiLU(W x + b) -> Linear(H, V), reading the base's
final-norm hidden state at position p and predicting the token at p + i + 2 (the base's own LM head gives p + 1).
Loss: sum_i 0.8^i x cross-entropy (Medusa-1's weighting), on assistant tokens. Each ResBlock starts at the
identity (zero weight); each head's Linear starts at zero (--init copy: the base's LM head).
Validation: per-head cross-entropy and top-1 accuracy.

Export: config.json (medusa_num_heads, medusa_num_layers, base_model_name_or_path, hidden_size, vocab_size) +
medusa_lm_head.safetensors with exactly {i}.0.linear.weight [H,H], {i}.0.linear.bias [H], {i}.1.weight [V,H].

  $PY training/train_medusa.py --base assets/models/base --out training/runs/medusa --max-minutes 30 --threads 2
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import heads  # noqa: E402

DEFAULTS = dict(context=256, batch_size=8, lr=1e-3, warmup=50, eval_every=100, grad_clip=1.0)


class Medusa(heads.Recipe):
    name = "medusa"
    export_file = "medusa_lm_head.safetensors"

    def __init__(self, args):
        self.args = args

    def build(self, base, train_convs):
        h = heads.MedusaHeads(base.H, base.V, self.args.heads, self.args.head_layers,
                              lm_head=base.lm_head.detach().float().cpu() if self.args.init == "copy" else None)
        if self.args.init == "zero":
            for head in h:
                torch.nn.init.zeros_(head[-1].weight)
        return h

    def _per_head(self, head, base, T, M):
        x = base.features(T)["final"]
        R = T.shape[1]
        res = []
        for i, h in enumerate(head):
            s = i + 2
            m = M[:, s:]
            z = h[:-1](x[:, :R - s])[m]
            lg = h[-1](z).float()
            y = T[:, s:][m]
            res.append((F.cross_entropy(lg, y, reduction="sum"), (lg.argmax(-1) == y).float().sum(),
                        float(m.sum())))
        return res

    def loss(self, head, base, T, M):
        res = self._per_head(head, base, T, M)
        loss = sum(self.args.decay ** i * ce / max(n, 1.0) for i, (ce, _, n) in enumerate(res))
        met = {f"acc{i}": a / max(n, 1.0) for i, (_, a, n) in enumerate(res) if i in (0, len(res) - 1)}
        return loss, met

    def evaluate(self, head, base, T, M):
        res = self._per_head(head, base, T, M)
        r = {"n": res[0][2]}
        for i, (ce, a, n) in enumerate(res):
            # every head sees almost the same positions; normalise all by head 0's count
            r[f"ce{i}"] = float(ce) * res[0][2] / max(n, 1.0)
            r[f"acc{i}"] = float(a) * res[0][2] / max(n, 1.0)
        return r

    def export(self, head, base, out, dtype):
        cfg = {"base_model_name_or_path": self.args.base_name or self.args.base,
               "medusa_num_heads": len(head), "medusa_num_layers": self.args.head_layers,
               "hidden_size": base.H, "vocab_size": base.V, "torch_dtype": str(dtype).split(".")[-1]}
        heads.write_json(os.path.join(out, "config.json"), cfg)
        heads.save_safetensors(head.state_dict(), os.path.join(out, "medusa_lm_head.safetensors"), dtype)
        return ["config.json", "medusa_lm_head.safetensors"]


def extra(ap):
    ap.add_argument("--heads", type=int, default=5, help="medusa_num_heads")
    ap.add_argument("--head-layers", type=int, default=1, help="medusa_num_layers (ResBlocks per head)")
    ap.add_argument("--decay", type=float, default=0.8, help="loss weight of head i = decay^i")
    ap.add_argument("--init", choices=["zero", "copy"], default="zero",
                    help="each head's Linear(H, V): zero (uniform start; the default: this small base's LM head is "
                         "so peaked that a copy starts at a cross-entropy of ~20) or a copy of the base's LM head")
    ap.add_argument("--base-name", default=None, help="base_model_name_or_path to record (default: --base)")


def main(argv=None):
    args = heads.parse(DEFAULTS, extra, argv)
    return heads.run(args, Medusa(args))


if __name__ == "__main__":
    main()
