#!/usr/bin/env python3
"""Trains an EAGLE-1 draft head on SpecScope's frozen base model (EAGLE paper / SafeAILab/EAGLE v1 recipe).

The head reads concat(embed(token_{i+1}), feature_i) (feature = the base's final-norm hidden state, with uniform
noise U(-0.1, 0.1) during training), through fc (+bias) and one Llama layer without input_layernorm, and predicts
feature_{i+1}; the base's lm_head turns it into the draft distribution.
Loss = SmoothL1(predicted feature, the base's next feature) + 0.1 x cross-entropy of lm_head(prediction) against
the base's next-token target (--cls-target soft: the base's full distribution lm_head(next feature), as the paper
and the official code; argmax: its greedy token; token: the corpus token). AdamW betas (0.9, 0.95), grad clip 0.5.
Validation: feature loss, classification loss and top-1 agreement of the head's token with the base's greedy one.

Export (--out): config.json (Llama, num_hidden_layers 1, "bias": true) + model.safetensors with exactly
fc.{weight,bias}, layers.0.self_attn.{q,k,v,o}_proj.weight, layers.0.mlp.{gate,up,down}_proj.weight,
layers.0.post_attention_layernorm.weight.

  PY=/root/.cache/specscope/venv/bin/python
  $PY training/train_eagle.py --base assets/models/base --out training/runs/eagle1 --max-minutes 30 --threads 2
  ... --resume auto   (continues from OUT.work/checkpoint.pt)
  ... --self-distill 5000   (train on the base's own answers to 5000 training prompts, generated first)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import heads  # noqa: E402

DEFAULTS = dict(context=256, batch_size=8, lr=1e-3, warmup=50, eval_every=100, grad_clip=0.5)


class Eagle1(heads.Recipe):
    name = "eagle1"
    export_file = "model.safetensors"

    def __init__(self, args):
        self.args = args

    def build(self, base, train_convs):
        self.cfg = heads.head_dims(base)
        return heads.Eagle1Head(self.cfg)

    def _forward(self, head, base, T, M, noise):
        f = base.features(T)
        feat, logits = f["final"], f["logits"]
        R = T.shape[1]
        x = feat[:, :-2]
        if noise:
            x = x + (torch.rand_like(x) - 0.5) * 0.2
        emb = base.embed[T[:, 1:-1]].float()
        pos = torch.arange(R - 2, device=T.device)
        pred = head(emb, x, pos).float()
        return pred, feat[:, 1:-1], logits[:, 1:-1], M[:, 2:], T[:, 2:]

    def _losses(self, pred, tgt, tlog, mask, ytok, base):
        m = mask.float()
        cnt = m.sum().clamp_min(1.0)
        vloss = (F.smooth_l1_loss(pred, tgt, reduction="none").mean(-1) * m).sum() / cnt
        out_logits = pred @ base.lm_head.float().T
        out_logp = torch.log_softmax(out_logits, -1)
        kind = self.args.cls_target
        if kind == "soft":
            p = torch.softmax(tlog, -1)
            ce = -(p * out_logp).sum(-1)
        else:
            y = tlog.argmax(-1) if kind == "argmax" else ytok
            ce = -out_logp.gather(-1, y[..., None])[..., 0]
        ploss = (ce * m).sum() / cnt
        acc = ((out_logits.argmax(-1) == tlog.argmax(-1)).float() * m).sum()
        return vloss, ploss, acc, m.sum()

    def loss(self, head, base, T, M):
        pred, tgt, tlog, mask, ytok = self._forward(head, base, T, M, noise=True)
        vloss, ploss, acc, n = self._losses(pred, tgt, tlog, mask, ytok, base)
        loss = self.args.v_weight * vloss + self.args.p_weight * ploss
        return loss, {"vloss": vloss.detach(), "ploss": ploss.detach(), "acc": acc / n.clamp_min(1.0)}

    def evaluate(self, head, base, T, M):
        pred, tgt, tlog, mask, ytok = self._forward(head, base, T, M, noise=False)
        vloss, ploss, acc, n = self._losses(pred, tgt, tlog, mask, ytok, base)
        return {"vloss": float(vloss * n), "ploss": float(ploss * n), "acc": float(acc), "n": float(n)}

    def export(self, head, base, out, dtype):
        cfg = heads.head_llama_config(base, {"bias": True, "torch_dtype": str(dtype).split(".")[-1]})
        heads.write_json(os.path.join(out, "config.json"), cfg)
        heads.save_safetensors(head.state_dict(), os.path.join(out, "model.safetensors"), dtype)
        return ["config.json", "model.safetensors"]


def extra(ap):
    ap.add_argument("--cls-target", choices=["soft", "argmax", "token"], default="soft",
                    help="classification target: the base's next-token distribution (paper), its argmax, or the "
                         "corpus token")
    ap.add_argument("--v-weight", type=float, default=1.0, help="weight of the SmoothL1 feature loss")
    ap.add_argument("--p-weight", type=float, default=0.1, help="weight of the classification loss")


def main(argv=None):
    args = heads.parse(DEFAULTS, extra, argv)
    return heads.run(args, Eagle1(args))


if __name__ == "__main__":
    main()
