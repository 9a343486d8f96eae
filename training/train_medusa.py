#!/usr/bin/env python3
"""Trains Medusa heads for SpecScope's base model (Medusa paper / FasterDecoding/Medusa recipe): Medusa-1 on the
frozen base, or with --joint-layers Medusa-2, the heads and a LoRA on the base trained together.

--heads (5) heads of --head-layers (1) ResBlocks: head i = x + SiLU(W x + b) -> Linear(H, V), reading the base's
final-norm hidden state at position p and predicting the token at p + i + 2 (the base's own LM head gives p + 1).
Loss: sum_k 0.8^k x cross-entropy of head k = 1..5, on assistant tokens (the official code counts its heads from
1, after the base's LM head at 0, and weights head k medusa_decay_coefficient^k; the shipped Medusa-1 heads were
trained with 0.8^(k-1), the same loss times 1.25, which AdamW's normalisation all but cancels). Each ResBlock starts at the
identity (zero weight); each head's Linear starts at zero (--init copy: the base's LM head).
Validation: per-head cross-entropy and top-1 accuracy.

Export: config.json (medusa_num_heads, medusa_num_layers, base_model_name_or_path, hidden_size, vocab_size) +
medusa_lm_head.safetensors with exactly {i}.0.linear.weight [H,H], {i}.0.linear.bias [H], {i}.1.weight [V,H].

Medusa-2 (--joint-layers N: LoRA of rank --lora-rank on every projection of the top N layers; the official
training code's self-distillation mode, FasterDecoding/Medusa medusa/train + axolotl's medusa_utils): the
backbone learns KL(frozen base || fine-tuned) on its next-token distribution, so that it stays the base's, and
the heads their cross-entropy weighted medusa_heads_coefficient (0.2) x decay^k, their parameters at
--lr x medusa_lr_multiplier (4). The official recipe trains on answers the model generated itself; here the
corpus's text stands in for them and each head learns (--head-targets self, the default) what the fine-tuned
model's own greedy prediction is at the position it stands in for, given the corpus's text before it (teacher
forcing: what greedy verification accepts wherever that text is the model's own greedy continuation), as
train_streaming.py's streams do. The KL's teacher is the same forward with the LoRA off, as the official code
disables its adapter. --init-from a Medusa-1 export starts the heads from it (Medusa-2's
two-stage recipe: heads first, then jointly). Export: the adapter (peft layout, lora.py) in OUT, which the
engine merges into the base at load time, and the heads in OUT/heads (base_model_name_or_path "..": the
fine-tuned model is their target). The fine-tuned model is a target of its own: its Medusa output is compared
with its own vanilla output.

  $PY training/train_medusa.py --base assets/models/base --out training/runs/medusa --max-minutes 30 --threads 2
  $PY training/train_medusa.py --base assets/models/base --out training/runs/medusa2 --joint-layers 8 \
      --init-from assets/models/medusa --lr 2.5e-4 --max-minutes 60 --threads 2
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import heads  # noqa: E402
import lora  # noqa: E402
import streaming_model as sm  # noqa: E402

DEFAULTS = dict(context=256, batch_size=8, lr=1e-3, warmup=50, eval_every=100, grad_clip=1.0)


class JointMedusa(torch.nn.Module):
    """Medusa-2's trained parts: the heads and the backbone's LoRA (sm.forward's `parts`: .lora and .cfg)."""

    def __init__(self, medusa_heads, cfg, base_sd, layers):
        super().__init__()
        self.heads = medusa_heads
        self.cfg = cfg
        self.layers = list(layers)
        self.lora = lora.modules(base_sd, self.layers, cfg["lora_rank"])


class Medusa(heads.Recipe):
    name = "medusa"
    export_file = "medusa_lm_head.safetensors"

    def __init__(self, args):
        self.args = args
        self.joint = args.joint_layers > 0

    def build(self, base, train_convs):
        h = heads.MedusaHeads(base.H, base.V, self.args.heads, self.args.head_layers,
                              lm_head=base.lm_head.detach().float().cpu() if self.args.init == "copy" else None)
        if self.args.init == "zero":
            for head in h:
                torch.nn.init.zeros_(head[-1].weight)
        if not self.joint:
            return h
        if not 1 <= self.args.joint_layers <= base.N:
            raise SystemExit(f"--joint-layers {self.args.joint_layers}: the base has {base.N} layers")
        c = base.config
        cfg = {"hidden_size": base.H, "num_hidden_layers": base.N, "num_attention_heads": c.num_attention_heads,
               "num_key_value_heads": c.num_key_value_heads,
               "head_dim": getattr(c, "head_dim", None) or base.H // c.num_attention_heads,
               "rms_norm_eps": c.rms_norm_eps, "rope_theta": base.rope_theta, "msa_layers": 0, "num_streams": 0,
               "lora_rank": self.args.lora_rank, "lora_alpha": self.args.lora_alpha}
        return JointMedusa(h, cfg, self.sd(base), range(base.N - self.args.joint_layers, base.N))

    def sd(self, base):
        if not hasattr(self, "_sd"):
            self._sd = dict(base.model.state_dict())
        return self._sd

    def _joint_export(self, path):
        return os.path.isfile(os.path.join(path, "adapter_model.safetensors"))

    def _shape(self):
        """What a checkpoint or an adapter must match: Medusa-1 or Medusa-2's LoRA (layers from the top, rank,
        alpha)."""
        a = self.args
        return {"joint_layers": a.joint_layers, "lora_rank": a.lora_rank if self.joint else 0,
                "lora_alpha": float(a.lora_alpha) if self.joint else 0.0}

    def extra_state(self):
        return {"medusa_shape": self._shape()}

    def load_extra_state(self, st):
        got = st.get("medusa_shape")  # absent in checkpoints written before it was saved: the state dict decides
        if got is not None and got != self._shape():
            raise SystemExit(f"--resume: the checkpoint trained {got}, this run asks for {self._shape()} "
                             "(--joint-layers, --lora-rank and --lora-alpha must match it)")

    def check_init(self, path):
        """Medusa-2 starts from a Medusa-1 export (the heads) or a Medusa-2 one (the adapter and heads/), whose
        LoRA must be this run's: the same rank, alpha and layers."""
        if self.joint and self._joint_export(path):
            with open(os.path.join(self.args.base, "config.json")) as f:
                n = json.load(f)["num_hidden_layers"]
            lora.check_peft_config(path, range(n - self.args.joint_layers, n), self.args.lora_rank,
                                   self.args.lora_alpha, "--lora-rank, --lora-alpha, --joint-layers")
            path = os.path.join(path, "heads")
        super().check_init(path)

    def init_from(self, module, path):
        if not self.joint:
            return super().init_from(module, path)
        if self._joint_export(path):
            want = lora.read_peft_adapter(path, module.layers, self.args.lora_rank)
            module.lora.load_state_dict(want)
            heads.log(f"medusa: LoRA initialised from {path}")
            path = os.path.join(path, "heads")
        super().init_from(module.heads, path)

    def param_groups(self, module):
        if not self.joint:
            return super().param_groups(module)
        return [{"params": list(module.lora.parameters())},
                {"params": list(module.heads.parameters()), "lr_scale": self.args.medusa_lr_multiplier}]

    def _joint_terms(self, m, base, T, M):
        """Medusa-2: (KL sum, top-1 agreement with the base, positions) for the backbone, then (CE sum, top-1
        hits, positions) per head."""
        R = T.shape[1]
        o = sm.forward(self.sd(base), m.cfg, T, m, streams=False, prune=False)
        with torch.no_grad():  # the teacher: the same forward with the LoRA off (the frozen base)
            teacher = sm.forward(self.sd(base), m.cfg, T, None, streams=False, prune=False)["main"]
        mk = M[:, 1:]
        student = F.log_softmax(o["main"][:, :R - 1][mk].float(), -1)
        target = F.softmax(teacher[:, :R - 1][mk].float(), -1)
        kl = F.kl_div(student, target, reduction="sum")
        res = [(kl, (student.argmax(-1) == target.argmax(-1)).float().sum(), float(mk.sum()))]
        own = o["main"].argmax(-1).detach()  # position q's greedy token, q + 1: what verification accepts
        for i, h in enumerate(m.heads):
            s = i + 2
            mk = M[:, s:]
            lg = h(o["final"][:, :R - s])[mk].float()
            y = (own[:, s - 1:R - 1] if self.args.head_targets == "self" else T[:, s:])[mk]
            res.append((F.cross_entropy(lg, y, reduction="sum"), (lg.argmax(-1) == y).float().sum(),
                        float(mk.sum())))
        return res

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
        if self.joint:
            res = self._joint_terms(head, base, T, M)
            (kl, agree, n0), res = res[0], res[1:]
            loss = kl / max(n0, 1.0) + self.args.heads_coefficient * sum(
                self.args.decay ** (i + 1) * ce / max(n, 1.0) for i, (ce, _, n) in enumerate(res))
            met = {"kl": float(kl.detach()) / max(n0, 1.0), "agree": agree / max(n0, 1.0)}
            met.update({f"acc{i}": a / max(n, 1.0) for i, (_, a, n) in enumerate(res) if i in (0, len(res) - 1)})
            return loss, met
        res = self._per_head(head, base, T, M)
        loss = sum(self.args.decay ** (i + 1) * ce / max(n, 1.0) for i, (ce, _, n) in enumerate(res))
        met = {f"acc{i}": a / max(n, 1.0) for i, (_, a, n) in enumerate(res) if i in (0, len(res) - 1)}
        return loss, met

    def evaluate(self, head, base, T, M):
        r = {}
        if self.joint:
            res = self._joint_terms(head, base, T, M)
            (kl, agree, n0), res = res[0], res[1:]
            r = {"kl": float(kl), "agree": float(agree)}
            r = {k: v * res[0][2] / max(n0, 1.0) for k, v in r.items()}
        else:
            res = self._per_head(head, base, T, M)
        r["n"] = res[0][2]
        for i, (ce, a, n) in enumerate(res):
            # every head sees almost the same positions; normalise all by head 0's count
            r[f"ce{i}"] = float(ce) * res[0][2] / max(n, 1.0)
            r[f"acc{i}"] = float(a) * res[0][2] / max(n, 1.0)
        return r

    def export(self, head, base, out, dtype):
        # An export into a folder that held the other kind must not leave that kind's files behind: a stale
        # adapter beside fresh Medusa-1 heads would be read as a Medusa-2 export (and a stale config.json hides one).
        for f in ("config.json", "medusa_lm_head.safetensors", "adapter_config.json", "adapter_model.safetensors"):
            if os.path.exists(os.path.join(out, f)):
                os.remove(os.path.join(out, f))
        shutil.rmtree(os.path.join(out, "heads"), ignore_errors=True)
        if not self.joint:
            return self.export_heads(head, base, out, dtype, self.args.base_name or self.args.base)
        base_ref = self.args.base_name or os.path.relpath(os.path.abspath(self.args.base), os.path.abspath(out))
        files = lora.write_peft_adapter(head.lora, head.layers, self.args.lora_rank, self.args.lora_alpha, out,
                                        base_ref, heads.save_safetensors, heads.write_json)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            src = os.path.join(self.args.tokenizer if f != "generation_config.json" else self.args.base, f)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(out, f))
                files.append(f)
        os.makedirs(os.path.join(out, "heads"), exist_ok=True)
        return files + ["heads/" + f for f in self.export_heads(head.heads, base, os.path.join(out, "heads"), dtype,
                                                                 "..")]

    def export_heads(self, medusa_heads, base, out, dtype, base_ref):
        cfg = {"base_model_name_or_path": base_ref,
               "medusa_num_heads": len(medusa_heads), "medusa_num_layers": self.args.head_layers,
               "hidden_size": base.H, "vocab_size": base.V, "torch_dtype": str(dtype).split(".")[-1]}
        heads.write_json(os.path.join(out, "config.json"), cfg)
        heads.save_safetensors(medusa_heads.state_dict(), os.path.join(out, "medusa_lm_head.safetensors"), dtype)
        return ["config.json", "medusa_lm_head.safetensors"]


def extra(ap):
    ap.add_argument("--heads", type=int, default=5, help="medusa_num_heads")
    ap.add_argument("--head-layers", type=int, default=1, help="medusa_num_layers (ResBlocks per head)")
    ap.add_argument("--decay", type=float, default=0.8, help="loss weight of head k = 1, 2, ... is decay^k")
    ap.add_argument("--init", choices=["zero", "copy"], default="zero",
                    help="each head's Linear(H, V): zero (uniform start; the default: this small base's LM head is "
                         "so peaked that a copy starts at a cross-entropy of ~20) or a copy of the base's LM head")
    ap.add_argument("--base-name", default=None, help="base_model_name_or_path to record (default: --base)")
    ap.add_argument("--joint-layers", type=int, default=0,
                    help="Medusa-2: also train a LoRA on the top N layers of the base (0: Medusa-1, base frozen)")
    ap.add_argument("--lora-rank", type=int, default=16, help="Medusa-2: the LoRA's rank")
    ap.add_argument("--lora-alpha", type=float, default=32.0, help="Medusa-2: the LoRA's alpha")
    ap.add_argument("--heads-coefficient", type=float, default=0.2,
                    help="Medusa-2: the heads' loss weight beside the backbone's (medusa_heads_coefficient)")
    ap.add_argument("--medusa-lr-multiplier", type=float, default=4.0,
                    help="Medusa-2: the heads' learning rate over the LoRA's (medusa_lr_multiplier)")
    ap.add_argument("--head-targets", choices=["self", "corpus"], default="self",
                    help="Medusa-2: each head learns the fine-tuned model's own greedy token where it stands in "
                         "(self) or the corpus's token")


def main(argv=None):
    args = heads.parse(DEFAULTS, extra, argv)
    return heads.run(args, Medusa(args))


if __name__ == "__main__":
    main()
