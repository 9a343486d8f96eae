#!/usr/bin/env python3
"""Speculative Streaming (Bhendawade et al., arXiv 2402.11131): fine-tunes SpecScope's base model into one that
speculates with its own top layers. The forward pass is streaming_model.py's (the C++ engine's twin).

Trained: LoRA adapters on the top --msa-layers layers (merged on export), the rank-eta stream map, the gamma
stream identifier embeddings, and the rank-8 early-exit pruning adapter at --prune-layer. The rest of the base
is frozen.

Loss (eq. 5): alpha_0 * CE(main stream at t, token t+1) + sum_j alpha_j * CE(stream j at t, token t+1+j), on
assistant tokens, plus the pruning adapter's distillation loss (cross-entropy of its early-exit distribution
against the main stream's, detached; its inputs are below the LoRA layers, so the two do not interact).
--targets corpus uses the corpus tokens as the main stream's labels (eq. 5 verbatim); --targets teacher (the
default) uses the frozen base's top-1 prediction at each position instead (self-distillation by teacher forcing,
as Medusa-2 and EAGLE recommend), which keeps the fine-tuned model's greedy output close to the base's. Streams
learn (--stream-targets self, the default) the fine-tuned main stream's own top-1 token at the position they
stand in for, i.e. exactly what greedy verification accepts; --stream-targets labels gives them the main
stream's labels instead.

Export (docs/streaming-format.md): a complete Llama checkpoint (config.json, model*.safetensors with the LoRA
merged, bf16, tokenizer files) plus streaming_config.json and streaming.safetensors. The pruning threshold is
calibrated on the validation rows: the --prune-keep quantile of the early-exit probability the main stream's
greedy next token gets, so pruning keeps that share of the children verification would accept.

  $PY training/train_streaming.py --base assets/models/base --out training/runs/streaming --max-minutes 60 --threads 2
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

DEFAULTS = dict(context=256, batch_size=8, lr=2e-3, warmup=50, eval_every=100, grad_clip=1.0)


class Streaming(heads.Recipe):
    name = "streaming"
    export_file = "streaming.safetensors"

    def __init__(self, args):
        self.args = args
        self.threshold = None
        self.calibration = {}

    def model_cfg(self, base):
        c = base.config
        a = self.args
        return {"hidden_size": base.H, "num_hidden_layers": base.N, "num_attention_heads": c.num_attention_heads,
                "num_key_value_heads": c.num_key_value_heads,
                "head_dim": getattr(c, "head_dim", None) or base.H // c.num_attention_heads,
                "rms_norm_eps": c.rms_norm_eps, "rope_theta": base.rope_theta, "msa_layers": a.msa_layers,
                "num_streams": a.streams, "stream_rank": a.stream_rank, "prune_layer": a.prune_layer,
                "prune_rank": 8, "lora_rank": a.lora_rank, "lora_alpha": a.lora_alpha}

    def sd(self, base):
        if not hasattr(self, "_sd"):
            self._sd = {k: v for k, v in base.model.state_dict().items()}
        return self._sd

    def build(self, base, train_convs):
        if not 0 <= self.args.default_streams <= self.args.streams:
            raise SystemExit(f"--default-streams {self.args.default_streams} must be in 0..{self.args.streams} "
                             "(--streams)")
        if self.args.total_tokens < 0:
            raise SystemExit("--total-tokens must be >= 0 (0: the whole k-ary tree)")
        if self.args.prune_layer < 0:
            self.args.prune_layer = base.N - self.args.msa_layers - 1
        return sm.StreamingParts(self.model_cfg(base), self.sd(base))

    def check_init(self, path):
        """--init-from continues a LoRA export of this recipe (the shipped model's layout) with the same streams,
        layers and LoRA; a merged export has no separate adapter to continue."""
        super().check_init(path)
        cfg_path = os.path.join(path, "streaming_config.json")
        if not os.path.isfile(cfg_path):
            raise SystemExit(f"--init-from {path}: no streaming_config.json")
        with open(cfg_path) as f:
            c = json.load(f)
        if c.get("lora_merged", True):
            raise SystemExit(f"--init-from {path}: a merged export (its LoRA is in the weights); --init-from "
                             "continues a LoRA export (--export-format lora)")
        a = self.args
        want = {"num_streams": a.streams, "msa_layers": a.msa_layers, "stream_rank": a.stream_rank}
        got = {k: c.get(k) for k in want}
        if got != want:
            raise SystemExit(f"--init-from {path}: it has {got}, this run trains {want} (--streams, --msa-layers, "
                             "--stream-rank)")

    def init_from(self, parts, path):
        from safetensors.torch import load_file

        c = parts.cfg
        with open(os.path.join(path, "streaming_config.json")) as f:
            prune_layer = json.load(f).get("prune_layer")
        if prune_layer != c["prune_layer"]:
            raise SystemExit(f"--init-from {path}: its pruning adapter reads layer {prune_layer}, this run's "
                             f"{c['prune_layer']} (--prune-layer)")
        N, Ns = c["num_hidden_layers"], c["msa_layers"]
        lora.check_peft_config(path, range(N - Ns, N), c["lora_rank"], c["lora_alpha"], "--lora-rank, --lora-alpha")
        parts.lora.load_state_dict(lora.read_peft_adapter(path, range(N - Ns, N), c["lora_rank"]))
        f = os.path.join(path, self.export_file)
        parts.load_extras(load_file(f), f"--init-from {f}")
        heads.log(f"streaming: LoRA and streams initialised from {path}")

    def alphas(self):
        a = [float(x) for x in self.args.alphas.split(",")]
        if len(a) < self.args.streams + 1:
            raise SystemExit(f"--alphas needs {self.args.streams + 1} weights (alpha_0 and one per stream)")
        return a[:self.args.streams + 1]

    def _labels(self, base, parts, T, M):
        """Labels [B, R] and mask [B, R] for position t's next token (t+1): corpus tokens or the frozen base's
        greedy prediction; position t+j's entry is stream j's label at t."""
        R = T.shape[1]
        y = torch.full_like(T, -1)
        m = torch.zeros_like(M)
        if self.args.targets == "teacher":
            with torch.no_grad():
                y[:, :R - 1] = sm.forward(self.sd(base), parts.cfg, T, None)["main"][:, :R - 1].argmax(-1)
        else:
            y[:, :R - 1] = T[:, 1:]
        m[:, :R - 1] = M[:, 1:]
        return y, m

    def _terms(self, parts, base, T, M, sample=True):
        R = T.shape[1]
        G = self.args.streams
        at = None
        if sample and self.args.stream_rows and self.args.stream_rows < R - 1:
            # streams never feed the main stream: training them on a random subset of positions is exact
            at = torch.randperm(R - 1, device=T.device)[:self.args.stream_rows].sort().values
        o = sm.forward(self.sd(base), parts.cfg, T, parts, stream_at=at)
        y, mask = self._labels(base, parts, T, M)
        # Stream j at position a stands in for the main stream at a + j; with --stream-targets self its label is
        # what the fine-tuned model itself predicts there (what verification will accept), not the base's.
        y_streams = o["main"].argmax(-1).detach() if self.args.stream_targets == "self" else y
        at_all = torch.arange(R, device=T.device) if at is None else at
        terms = []
        for j in range(G + 1):
            if j == 0:
                lg_all, idx = o["main"], torch.arange(R, device=T.device)
            else:
                lg_all, idx = o["streams"][:, j - 1], at_all + j
            ok = idx < R
            lg_all, idx = lg_all[:, ok], idx[ok]
            m = mask[:, idx]
            lg = lg_all[m].float()
            yy = (y if j == 0 else y_streams)[:, idx][m]
            top = lg.topk(self.args.top_k, -1).indices
            terms.append((F.cross_entropy(lg, yy, reduction="sum"), (top[:, 0] == yy).float().sum(),
                          (top == yy[:, None]).any(-1).float().sum(), float(m.sum())))
        target = torch.softmax(o["main"][mask].detach().float(), -1)
        early = torch.log_softmax(o["early"][mask].float(), -1)
        prune = -(target * early).sum()
        # the early-exit probability of the main stream's own greedy next token: what pruning thresholds
        p_greedy = early.gather(-1, target.argmax(-1, keepdim=True)).squeeze(-1).exp()
        return terms, prune, p_greedy

    def loss(self, parts, base, T, M):
        terms, prune, _ = self._terms(parts, base, T, M)
        al = self.alphas()
        loss = sum(al[j] * ce / max(n, 1.0) for j, (ce, _, _, n) in enumerate(terms))
        loss = loss + self.args.prune_weight * prune / max(terms[0][3], 1.0)
        met = {"acc_main": terms[0][1] / max(terms[0][3], 1.0)}
        for j in (1, len(terms) - 1):
            met[f"acc_s{j}"] = terms[j][1] / max(terms[j][3], 1.0)
        return loss, met

    def evaluate(self, parts, base, T, M):
        terms, prune, _ = self._terms(parts, base, T, M, sample=False)
        n0 = terms[0][3]
        r = {"n": n0, "prune_ce": float(prune)}
        for j, (ce, a1, ak, n) in enumerate(terms):
            name = "main" if j == 0 else f"s{j}"
            r[f"ce_{name}"] = float(ce) * n0 / max(n, 1.0)
            r[f"acc_{name}"] = float(a1) * n0 / max(n, 1.0)
            if j:
                r[f"top{self.args.top_k}_{name}"] = float(ak) * n0 / max(n, 1.0)
        return r

    def calibrate(self, parts, base, vT, vM, batch):
        ps = []
        for i in range(0, len(vT), batch):
            ps.append(self._terms(parts, base, vT[i:i + batch], vM[i:i + batch], sample=False)[2].float())
        p = torch.cat(ps).sort().values
        q = 1.0 - self.args.prune_keep
        self.threshold = float(p[min(int(q * len(p)), len(p) - 1)])
        self.calibration = {"keep": self.args.prune_keep, "positions": int(len(p)), "threshold": self.threshold,
                            "median_p_greedy": float(p[len(p) // 2])}
        heads.log(f"streaming: pruning threshold {self.threshold:.4g} keeps {self.args.prune_keep:.0%} of the "
                  f"greedy children on {len(p)} validation positions (median early p {float(p[len(p) // 2]):.3f})")

    def export_merged(self, parts, base, out, dtype):
        """A complete Llama checkpoint with the LoRA merged in (transformers loads it as is)."""
        from transformers import LlamaForCausalLM

        merged = sm.merged_state_dict(self.sd(base), parts)
        model = LlamaForCausalLM(base.model.config)
        model.load_state_dict(merged)
        sd = {k: v.detach().to("cpu", dtype) for k, v in model.state_dict().items()}
        if model.config.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        model.config.dtype = dtype
        model.save_pretrained(out, state_dict=sd, max_shard_size=self.args.max_shard_size)
        cfg_path = os.path.join(out, "config.json")
        with open(cfg_path) as f:
            cfg = json.load(f)
        cfg["torch_dtype"] = cfg["dtype"] = str(dtype).split(".")[-1]
        heads.write_json(cfg_path, cfg)

    def export_lora(self, parts, out):
        """A peft LoRA adapter on the unchanged base (lora.py): the engine merges it at load time, and the base's
        weights are not copied."""
        c = parts.cfg
        N, Ns = c["num_hidden_layers"], c["msa_layers"]
        base_ref = self.args.base_name or os.path.relpath(os.path.abspath(self.args.base), os.path.abspath(out))
        lora.write_peft_adapter(parts.lora, range(N - Ns, N), c["lora_rank"], c["lora_alpha"], out, base_ref,
                                heads.save_safetensors, heads.write_json)

    def export(self, parts, base, out, dtype):
        for f in os.listdir(out):
            if f.endswith(".safetensors") or f.endswith(".safetensors.index.json") or f in ("config.json",
                                                                                           "adapter_config.json"):
                os.remove(os.path.join(out, f))
        if self.args.export_format == "lora":
            self.export_lora(parts, out)
        else:
            self.export_merged(parts, base, out, dtype)
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            src = os.path.join(self.args.tokenizer if f != "generation_config.json" else self.args.base, f)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(out, f))
        c = parts.cfg
        scfg = {"model_type": "speculative_streaming", "paper": "arXiv:2402.11131",
                "base_model_name_or_path": self.args.base_name or self.args.base,
                "num_streams": c["num_streams"], "msa_layers": c["msa_layers"], "stream_rank": c["stream_rank"],
                "prune_layer": c["prune_layer"], "prune_rank": c["prune_rank"],
                "prune_threshold": self.threshold if self.threshold is not None else 0.0,
                "prune_calibration": self.calibration, "top_k": self.args.top_k,
                "default_streams": self.args.default_streams or c["num_streams"],
                "total_tokens": self.args.total_tokens,
                "lora_rank": c["lora_rank"], "lora_alpha": c["lora_alpha"],
                "lora_merged": self.args.export_format == "merged",
                "alphas": self.alphas(), "targets": self.args.targets, "stream_targets": self.args.stream_targets,
                "torch_dtype": str(dtype).split(".")[-1]}
        heads.write_json(os.path.join(out, "streaming_config.json"), scfg)
        heads.save_safetensors(parts.extras_state_dict(), os.path.join(out, "streaming.safetensors"), dtype)
        return sorted(f for f in os.listdir(out) if f.endswith((".json", ".safetensors")))


def extra(ap):
    ap.add_argument("--streams", type=int, default=4, help="gamma: speculative streams (tokens drafted per step)")
    ap.add_argument("--msa-layers", type=int, default=4, help="Ns: top layers that become multi-stream attention")
    ap.add_argument("--stream-rank", type=int, default=16, help="eta: rank of the stream initialisation map")
    ap.add_argument("--prune-layer", type=int, default=-1,
                    help="decoder layer whose output feeds the pruning adapter (default: N - Ns - 1, the last layer "
                         "before the streams start)")
    ap.add_argument("--prune-keep", type=float, default=0.95,
                    help="calibrate the pruning threshold to keep this share of the children greedy would accept")
    ap.add_argument("--prune-weight", type=float, default=1.0)
    ap.add_argument("--stream-rows", type=int, default=64,
                    help="positions per row that get streams in a training step (0: all)")
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=32.0)
    ap.add_argument("--alphas", default="1.0,0.8,0.64,0.51,0.41,0.33,0.26,0.21",
                    help="alpha_0 (main stream) then alpha_j for streams 1..gamma (eq. 5)")
    ap.add_argument("--targets", choices=["teacher", "corpus"], default="teacher",
                    help="main-stream labels: the frozen base's greedy tokens (teacher) or the corpus")
    ap.add_argument("--stream-targets", choices=["self", "labels"], default="self",
                    help="stream labels: the fine-tuned main stream's own greedy token at the position the stream "
                         "stands in for (self), or the same labels as the main stream (labels)")
    ap.add_argument("--top-k", type=int, default=3, help="tree width per stream the engine defaults to; also the "
                                                          "top-k accuracy reported")
    ap.add_argument("--default-streams", type=int, default=0,
                    help="streams the engine drafts with by default (0: all --streams)")
    ap.add_argument("--total-tokens", type=int, default=0,
                    help="the engine's default tree size: the most probable paths of the k-ary tree (0: all of it)")
    ap.add_argument("--max-shard-size", default="15MB")
    ap.add_argument("--base-name", default=None,
                    help="base_model_name_or_path to record (default: --base; for --export-format lora, --base "
                         "relative to the output directory)")
    ap.add_argument("--export-format", choices=["lora", "merged"], default="lora",
                    help="lora: a peft adapter on the unchanged base (small; SpecScope merges it at load time); "
                         "merged: a complete Llama checkpoint with the LoRA merged in")


def main(argv=None):
    args = heads.parse(DEFAULTS, extra, argv)
    return heads.run(args, Streaming(args))


if __name__ == "__main__":
    main()
