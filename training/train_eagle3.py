#!/usr/bin/env python3
"""Trains an EAGLE-3 draft head on SpecScope's frozen base model (EAGLE-3 paper / SafeAILab/EAGLE main recipe).

Features: the residual stream entering the base's decoder layers sorted({2, N//2, N-3}) (2, 4, 5 for the 8-layer
default base), concatenated low -> high [3H] and fused by fc (no bias). The midlayer reads
concat(input_layernorm(embed(token)), hidden_norm(feature)) (2H) for q/k/v; its residual is the feature; its
output (before `norm`) is fed back as the next step's feature.

Training-time test: --ttt-steps (7) unrolled steps. Step 0 takes the fused base features with tokens t_{i+1};
step j takes step j-1's outputs with tokens t_{i+1+j} at positions i+j, attending to the real context (step 0's
keys, causally) and to its own earlier draft steps. Each step's loss is the cross-entropy against the base's
next-token distribution restricted to the draft vocabulary, at positions whose base greedy token is in the draft
vocabulary; steps are summed with weights 0.8^j (as the official trainer). No feature loss.

Draft vocabulary: the --draft-vocab (2048) most frequent assistant tokens of the training data; exported as
d2t (int64, target = draft + d2t[draft]) and t2d (bool [vocab]). lm_head starts as those rows of the base's.

Export: config.json (draft_vocab_size) + model.safetensors with exactly fc.weight, midlayer.{input_layernorm,
hidden_norm,post_attention_layernorm}.weight, midlayer.self_attn.{q,k,v,o}_proj.weight,
midlayer.mlp.{gate,up,down}_proj.weight, norm.weight, lm_head.weight, d2t, t2d.

  $PY training/train_eagle3.py --base assets/models/base --out training/runs/eagle3 --max-minutes 30 --threads 2
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import heads  # noqa: E402

DEFAULT_DRAFT_VOCAB = 2048
DEFAULTS = dict(context=256, batch_size=8, lr=1e-3, warmup=50, eval_every=100, grad_clip=0.5)


class Eagle3(heads.Recipe):
    name = "eagle3"
    fused = True
    export_file = "model.safetensors"

    def __init__(self, args):
        self.args = args
        self.vocab_state = None

    def extra_state(self):
        return {"d2t": self.d2t, "t2d": self.t2d}

    def load_extra_state(self, st):
        if "d2t" in st and not torch.equal(st["d2t"].cpu(), self.d2t.cpu()):
            raise SystemExit("the checkpoint's draft vocabulary differs from this data's")

    def build(self, base, train_convs):
        if (self.args.draft_vocab or 0) > base.V:
            raise SystemExit(f"--draft-vocab {self.args.draft_vocab} > vocab {base.V}")
        counts = np.zeros(base.V, dtype=np.int64)
        for ids, m in train_convs:
            np.add.at(counts, ids[m].astype(np.int64), 1)
        self.widened_from = None
        if self.args.init_from:  # continuing an exported head: its draft vocabulary, or a wider one that keeps it
            from safetensors import safe_open
            with safe_open(heads.export_tensors_path(self, self.args.init_from), "pt") as f:
                self.d2t, self.t2d = f.get_tensor("d2t").to(torch.int64), f.get_tensor("t2d").to(torch.bool)
            asked = self.args.draft_vocab
            if asked is not None and asked < len(self.d2t):
                raise SystemExit(f"--draft-vocab {asked} is smaller than the --init-from head's {len(self.d2t)}: "
                                 f"a draft vocabulary can only be widened")
            if asked is not None and asked > len(self.d2t):
                # The head's tokens rank first, so every one of them stays; the rest by frequency in this data.
                # Tokens outside a draft vocabulary can never be drafted: on the base's own answers the shipped
                # 2,048 cover ~93%, so ~7% of target tokens were out of the head's reach at every depth.
                ranked = counts.copy()
                ranked[self.t2d.numpy()] += counts.sum() + 1
                self.widened_from = self.t2d.clone()
                heads.log(f"draft vocabulary: widening the --init-from head's {len(self.d2t)} tokens to {asked}")
                self.d2t, self.t2d = heads.draft_vocab(ranked, base.V, asked)
            else:
                self.args.draft_vocab = len(self.d2t)
        else:
            self.args.draft_vocab = self.args.draft_vocab or DEFAULT_DRAFT_VOCAB
            self.d2t, self.t2d = heads.draft_vocab(counts, base.V, self.args.draft_vocab)
        cover = counts[self.t2d.numpy()].sum() / max(counts.sum(), 1)
        heads.log(f"draft vocabulary: {self.args.draft_vocab} of {base.V} tokens cover {cover:.2%} of the "
                  f"assistant tokens")
        self.coverage = float(cover)
        self.cfg = heads.head_dims(base)
        head = heads.Eagle3Head(self.cfg, self.d2t, self.t2d)
        with torch.no_grad():
            head.lm_head.weight.copy_(base.lm_head[self.t2d.to(base.lm_head.device)].float().cpu())
        return head

    def adapt_export(self, sd, own):
        """--init-from with a widened draft vocabulary: the exported lm_head rows move to their tokens' new draft
        ids; the new tokens keep the base's LM-head rows build() gave them; d2t/t2d are the widened ones."""
        if self.widened_from is None:
            return sd
        old_ids = torch.nonzero(self.widened_from).squeeze(1)            # target ids, ascending = old draft order
        new_pos = torch.cumsum(self.t2d.to(torch.int64), 0) - 1          # target id -> new draft id
        lm = own["lm_head.weight"].clone()
        lm[new_pos[old_ids]] = sd["lm_head.weight"].to(lm.dtype)
        sd = dict(sd, **{"lm_head.weight": lm, "d2t": own["d2t"].clone(), "t2d": own["t2d"].clone()})
        return sd

    def _steps(self, head, base, T, M):
        """-> list over steps of (draft logits [B,L,dv], base logits over the draft vocab [B,L,dv], base argmax
        (target ids) [B,L], loss mask [B,L])."""
        K = self.args.ttt_steps
        f = base.features(T, fused=True)
        R = T.shape[1]
        L = R - 1 - K
        if L < 2:
            raise SystemExit(f"--context {R - 1} too short for {K} unrolled steps")
        t2d = head.t2d
        hidden = head.fc(f["fused"][:, :L])
        cache, out = [], []
        for j in range(K):
            emb = base.embed[T[:, 1 + j:1 + j + L]].float()
            pos = torch.arange(L, device=T.device) + j
            h, kv = head.midlayer(emb, hidden, pos, cache)
            cache.append(kv)
            tl = f["logits"][:, 1 + j:1 + j + L]
            out.append((head.logits(h).float(), tl[..., t2d], tl.argmax(-1), M[:, 2 + j:2 + j + L]))
            hidden = h
        return out

    def _metrics(self, head, steps):
        losses, accs, n = [], [], None
        for lg, tl, targ, mask in steps:
            pm = (mask & head.t2d[targ]).float()
            p = torch.softmax(tl, -1)
            ce = -(p * torch.log_softmax(lg, -1)).sum(-1)
            m = mask.float()
            losses.append((ce * pm).sum() / pm.sum().clamp_min(1.0))
            d = lg.argmax(-1)
            accs.append((((d + head.d2t[d]) == targ).float() * m).sum())
            n = m.sum()
        return losses, accs, n

    def loss(self, head, base, T, M):
        losses, accs, n = self._metrics(head, self._steps(head, base, T, M))
        loss = sum(self.args.step_decay ** j * l for j, l in enumerate(losses))
        nn_ = n.clamp_min(1.0)
        return loss, {"ploss0": losses[0].detach(), "acc0": accs[0] / nn_, "acc_last": accs[-1] / nn_}

    def evaluate(self, head, base, T, M):
        losses, accs, n = self._metrics(head, self._steps(head, base, T, M))
        r = {"ploss0": float(losses[0] * n), "acc0": float(accs[0]), "acc_last": float(accs[-1]),
             "acc_mean": float(sum(accs) / len(accs)), "n": float(n)}
        return r

    def export(self, head, base, out, dtype):
        cfg = heads.head_llama_config(base, {"architectures": ["LlamaForCausalLMEagle3"],
                                             "draft_vocab_size": int(len(head.d2t)),
                                             "torch_dtype": str(dtype).split(".")[-1]})
        if head.c["TH"] != head.c["H"]:
            cfg["target_hidden_size"] = head.c["TH"]
        heads.write_json(os.path.join(out, "config.json"), cfg)
        heads.save_safetensors(head.state_dict(), os.path.join(out, "model.safetensors"), dtype)
        return ["config.json", "model.safetensors"]


def extra(ap):
    ap.add_argument("--draft-vocab", type=int, default=None,
                    help=f"draft vocabulary size (d2t/t2d; default {DEFAULT_DRAFT_VOCAB}, or the --init-from head's; "
                         f"larger than that head's widens it)")
    ap.add_argument("--ttt-steps", type=int, default=7, help="unrolled training-time-test steps")
    ap.add_argument("--step-decay", type=float, default=0.8, help="loss weight of step j = decay^j")


def main(argv=None):
    args = heads.parse(DEFAULTS, extra, argv)
    return heads.run(args, Eagle3(args))


if __name__ == "__main__":
    main()
