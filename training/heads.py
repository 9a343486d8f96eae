"""Draft heads on a frozen base model: EAGLE-1, EAGLE-3 and Medusa-1 modules, their exports in the official
layouts (see /work/shared/reference/README.md; the C++ engine loads exactly these), the frozen-base feature
extractor, optional self-distilled data, and the training loop shared by train_eagle.py, train_eagle3.py and
train_medusa.py.

Features come from the frozen base, computed online for every batch (no feature files on disk):
  * final   [B, T, H]   the base's last hidden state after its final RMSNorm (the LM head's input): EAGLE-1, Medusa;
  * fused   [B, T, 3H]  the residual stream entering decoder layers sorted({2, N//2, N-3}), low -> high: EAGLE-3;
  * logits  [B, T, V]   the base's next-token logits (EAGLE targets, accuracy against the base).
Data: the chat corpus (training/data), rendered, tokenized, packed and masked exactly like lm_train.py (loss on
assistant tokens by default), or with --self-distill N the base's own greedy answers to N training prompts;
--extra-train adds conversation files (e.g. self_distill.py's shards) to the training split. --init-from starts
from an exported head (load_export).

The modules keep the token embedding and (for EAGLE-1) the LM head outside themselves, so that their state dicts
are exactly the official tensor sets.
"""
import argparse
import gzip
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import lm_train  # noqa: E402
from lm_train import log  # noqa: E402


# ----------------------------------------------------------------------------------------------- building blocks
class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps))).to(x.dtype)


def rope(x, positions, theta):
    """x [B, heads, T, hd]; positions [T] (long). Llama's rotate-half RoPE."""
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd))
    fr = positions.to(torch.float32)[:, None] * inv[None, :]
    emb = torch.cat([fr, fr], -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    h = hd // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * cos + rot * sin


class Attention(nn.Module):
    """Llama attention (GQA, RoPE, no biases) whose q/k/v read `in_dim` inputs (H for EAGLE-1, 2H for EAGLE-3).

    forward(a, positions, steps=None): causal self-attention over the sequence. With `steps` (a list of earlier
    unrolled steps' (k, v), as EAGLE-3's training-time test keeps them), query i also attends to key i of each
    earlier step after the first: step 0 is the real context (causal), steps 1..j are the draft tokens that
    position i itself produced. Returns (output, (k, v) of this call)."""

    def __init__(self, in_dim, H, nh, nkv, hd, theta):
        super().__init__()
        self.nh, self.nkv, self.hd, self.theta = nh, nkv, hd, theta
        self.q_proj = nn.Linear(in_dim, nh * hd, bias=False)
        self.k_proj = nn.Linear(in_dim, nkv * hd, bias=False)
        self.v_proj = nn.Linear(in_dim, nkv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, H, bias=False)

    def forward(self, a, positions, steps=None):
        B, T, _ = a.shape
        q = self.q_proj(a).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(a).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(a).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q, k = rope(q, positions, self.theta), rope(k, positions, self.theta)
        rep = self.nh // self.nkv
        kr, vr = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        if not steps:
            o = F.scaled_dot_product_attention(q, kr, vr, is_causal=True)
        else:
            k0, v0 = steps[0]
            scale = 1.0 / math.sqrt(self.hd)
            s0 = (q @ k0.transpose(2, 3)) * scale
            causal = torch.ones(T, T, dtype=torch.bool, device=a.device).tril()
            s0 = s0.masked_fill(~causal, float("-inf"))
            later = [kk for kk, _ in steps[1:]] + [kr]
            sd = torch.stack([(q * kk).sum(-1) * scale for kk in later], -1)  # [B, nh, T, j]
            p = torch.softmax(torch.cat([s0, sd], -1).float(), -1).to(q.dtype)
            o = p[..., :T] @ v0
            vals = [vv for _, vv in steps[1:]] + [vr]
            for s, vv in enumerate(vals):
                o = o + p[..., T + s, None] * vv
        o = o.transpose(1, 2).reshape(B, T, self.nh * self.hd)
        return self.o_proj(o), (kr, vr)


class MLP(nn.Module):
    def __init__(self, H, I):
        super().__init__()
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Eagle1Layer(nn.Module):
    """EAGLE-1's decoder layer: no input_layernorm (the fc output goes straight into attention)."""

    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c["H"], c["H"], c["nh"], c["nkv"], c["hd"], c["theta"])
        self.mlp = MLP(c["H"], c["I"])
        self.post_attention_layernorm = RMSNorm(c["H"], c["eps"])

    def forward(self, x, positions):
        h = x + self.self_attn(x, positions)[0]
        return h + self.mlp(self.post_attention_layernorm(h))


class Eagle1Head(nn.Module):
    """x = fc(concat(embed(token_{i+1}), feature_i)) + bias -> one layer -> predicted feature_{i+1}
    (then the base's lm_head, no norm). State dict = the official EAGLE-1 tensor set."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.fc = nn.Linear(2 * c["H"], c["H"], bias=True)
        self.layers = nn.ModuleList([Eagle1Layer(c)])

    def forward(self, emb, feat, positions):
        return self.layers[0](self.fc(torch.cat([emb, feat], -1)), positions)


class Eagle3Midlayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["H"]
        self.input_layernorm = RMSNorm(H, c["eps"])
        self.hidden_norm = RMSNorm(H, c["eps"])
        self.self_attn = Attention(2 * H, H, c["nh"], c["nkv"], c["hd"], c["theta"])
        self.mlp = MLP(H, c["I"])
        self.post_attention_layernorm = RMSNorm(H, c["eps"])

    def forward(self, emb, hidden, positions, steps=None):
        a = torch.cat([self.input_layernorm(emb), self.hidden_norm(hidden)], -1)
        o, kv = self.self_attn(a, positions, steps)
        h = hidden + o                      # the residual is the (fused or fed-back) feature
        return h + self.mlp(self.post_attention_layernorm(h)), kv


class Eagle3Head(nn.Module):
    """fc (no bias) fuses the 3 base layers' residual inputs -> midlayer -> output hidden (fed back as the next
    step's feature) -> norm -> lm_head over the draft vocabulary. d2t/t2d are buffers (exported)."""

    def __init__(self, c, d2t, t2d):
        super().__init__()
        H = c["H"]
        self.c = c
        self.fc = nn.Linear(3 * c["TH"], H, bias=False)
        self.midlayer = Eagle3Midlayer(c)
        self.norm = RMSNorm(H, c["eps"])
        self.lm_head = nn.Linear(H, len(d2t), bias=False)
        self.register_buffer("d2t", d2t.clone().to(torch.int64))
        self.register_buffer("t2d", t2d.clone().to(torch.bool))

    def logits(self, h):
        return self.lm_head(self.norm(h))


class ResBlock(nn.Module):
    def __init__(self, H):
        super().__init__()
        self.linear = nn.Linear(H, H, bias=True)
        nn.init.zeros_(self.linear.weight)  # Medusa starts each block as the identity

    def forward(self, x):
        return x + F.silu(self.linear(x))


class MedusaHeads(nn.ModuleList):
    """Head i = Sequential(ResBlock x layers, Linear(H, V, no bias)); keys {i}.0.linear.*, {i}.1.weight."""

    def __init__(self, H, V, n_heads=5, n_layers=1, lm_head=None):
        super().__init__()
        for _ in range(n_heads):
            head = nn.Sequential(*[ResBlock(H) for _ in range(n_layers)], nn.Linear(H, V, bias=False))
            if lm_head is not None:
                head[-1].weight.data.copy_(lm_head)  # start from the base's LM head
            self.append(head)

    def forward(self, x):
        return [h(x) for h in self]


def draft_vocab(counts, vocab, n):
    """EAGLE-3 draft vocabulary: the n most frequent tokens (ties: lower id), padded with the lowest unused ids,
    sorted; d2t[i] = used[i] - i (target = draft + d2t[draft]); t2d[t] = t is in the draft vocabulary."""
    order = np.lexsort((np.arange(vocab), -counts.astype(np.int64)))
    used = [int(t) for t in order[:n] if counts[t] > 0]
    s = set(used)
    t = 0
    while len(used) < n:
        if t not in s:
            used.append(t)
            s.add(t)
        t += 1
    used.sort()
    d2t = torch.tensor([u - i for i, u in enumerate(used)], dtype=torch.int64)
    t2d = torch.zeros(vocab, dtype=torch.bool)
    t2d[torch.tensor(used)] = True
    return d2t, t2d


# ----------------------------------------------------------------------------------------------- the frozen base
class Base:
    """The frozen base model: f32 on the CPU, bf16 on CUDA (or --base-dtype)."""

    def __init__(self, path, device, dtype=None):
        from transformers import LlamaForCausalLM

        if dtype is None:
            dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        self.model = LlamaForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.path, self.device, self.dtype = path, device, dtype
        c = self.model.config
        self.config = c
        self.H, self.V, self.N = c.hidden_size, c.vocab_size, c.num_hidden_layers
        self.embed = self.model.model.embed_tokens.weight
        self.lm_head = self.model.lm_head.weight
        rp = getattr(c, "rope_parameters", None) or {}
        self.rope_theta = float(rp.get("rope_theta", getattr(c, "rope_theta", 10000.0)))
        self.eagle3_layers = sorted({2, self.N // 2, self.N - 3})

    @torch.no_grad()
    def features(self, x, fused=False):
        """x [B, T] -> dict(final [B,T,H] after the final norm, logits [B,T,V], fused [B,T,3H] if asked)."""
        out = self.model(input_ids=x, output_hidden_states=True)
        hs = out.hidden_states
        r = {"final": hs[-1].float(), "logits": out.logits.float()}
        if fused:
            if len(self.eagle3_layers) != 3 or min(self.eagle3_layers) < 0:
                raise SystemExit(f"EAGLE-3 needs 3 distinct layers; sorted({{2, N//2, N-3}}) = {self.eagle3_layers} "
                                 f"for N = {self.N}")
            r["fused"] = torch.cat([hs[l] for l in self.eagle3_layers], -1).float()
        return r


def head_llama_config(base, extra):
    """A Llama config for a one-layer head, sized like the base (as the official heads publish)."""
    c = base.config
    eos = c.eos_token_id
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
           "hidden_size": base.H, "intermediate_size": c.intermediate_size,
           "num_attention_heads": c.num_attention_heads, "num_key_value_heads": c.num_key_value_heads,
           "head_dim": getattr(c, "head_dim", None) or base.H // c.num_attention_heads,
           "num_hidden_layers": 1, "max_position_embeddings": c.max_position_embeddings,
           "rms_norm_eps": c.rms_norm_eps, "rope_theta": base.rope_theta, "rope_scaling": None,
           "vocab_size": base.V, "bos_token_id": c.bos_token_id, "eos_token_id": eos,
           "pad_token_id": c.pad_token_id, "tie_word_embeddings": False, "initializer_range": 0.02,
           "use_cache": True}
    cfg.update(extra)
    return cfg


def head_dims(base):
    c = base.config
    return {"H": base.H, "TH": base.H, "I": c.intermediate_size, "nh": c.num_attention_heads,
            "nkv": c.num_key_value_heads, "hd": getattr(c, "head_dim", None) or base.H // c.num_attention_heads,
            "eps": c.rms_norm_eps, "theta": base.rope_theta}


def save_safetensors(sd, path, dtype):
    from safetensors.torch import save_file

    out = {}
    for k, v in sd.items():
        v = v.detach().to("cpu")
        out[k] = (v.to(dtype) if v.is_floating_point() else v).contiguous()
    save_file(out, path, metadata={"format": "pt"})


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


# ----------------------------------------------------------------------------------------------- self-distillation
def self_distill(base, tok_dir, data_dir, n, out_dir, max_new, batch, device, temperature=0.0, seed=1234):
    """Rewrites the last assistant answer of the first n training conversations with the base's own answer
    (greedy by default), as EAGLE recommends; -> a data folder (train.jsonl.gz + the corpus validation split).
    Idempotent: an existing complete folder is reused. The generation is self_distill.py's (which does the same
    for the whole corpus as a resumable command; its output goes to the recipes through --extra-train)."""
    from tokenizers import Tokenizer

    import self_distill as sd

    done = os.path.join(out_dir, "DONE")
    if os.path.exists(done):
        log(f"self-distilled data: reusing {out_dir}")
        return out_dir
    os.makedirs(out_dir, exist_ok=True)
    tk = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    stops = sd.stop_ids(tk)
    convs = lm_train.load_conversations(os.path.join(data_dir, "train.jsonl.gz"), n)
    maxpos = base.config.max_position_embeddings
    t0 = time.time()
    out, gen_tokens = [], 0
    for i in range(0, len(convs), batch):
        asks = [sd.prompt_of(msgs) for msgs in convs[i:i + batch]]
        prompts = [sd.prompt_ids(tk, msgs)[-(maxpos - max_new):] for msgs in asks]
        seeds = [sd.sample_seed(seed, i + r, 0) for r in range(len(prompts))]
        answers, _ = sd.generate(base.model, prompts, max_new, stops, temperature, 1.0, seeds)
        for msgs, ids in zip(asks, answers):
            gen_tokens += len(ids)
            text = sd.answer_text(tk, ids)
            if text:
                out.append({"messages": msgs + [{"role": "assistant", "content": text}]})
        log(f"self-distill: {min(i + batch, len(convs))}/{len(convs)} conversations, "
            f"{gen_tokens / max(time.time() - t0, 1e-9):.0f} generated tok/s")
    with gzip.open(os.path.join(out_dir, "train.jsonl.gz"), "wt", encoding="utf-8") as f:
        for c in out:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    shutil.copy(os.path.join(data_dir, "validation.jsonl.gz"), os.path.join(out_dir, "validation.jsonl.gz"))
    with open(done, "w") as f:
        f.write(f"{len(out)} conversations from {base.path}\n")
    return out_dir


def extra_train_files(paths):
    """--extra-train: each path is a .jsonl.gz file of conversations in the corpus format, or a folder whose
    *.jsonl.gz files (self_distill.py's shards) are all taken, in name order."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            got = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".jsonl.gz"))
            if not got:
                raise SystemExit(f"--extra-train {p}: no .jsonl.gz files in it")
            files += got
        elif p.endswith(".jsonl.gz") and os.path.isfile(p):
            files.append(p)
        else:
            raise SystemExit(f"--extra-train {p}: not a folder or a .jsonl.gz file")
    return files


def export_tensors_path(recipe, path):
    """The tensor file of the export in folder `path` that --init-from reads (recipe.export_file), or an error."""
    if not recipe.export_file:
        raise SystemExit(f"--init-from is not supported by the {recipe.name} recipe")
    f = os.path.join(path, recipe.export_file)
    if not os.path.isfile(f):
        raise SystemExit(f"--init-from {path}: no {recipe.export_file}")
    return f


def load_export(head, recipe, path):
    """--init-from: an exported head (the official layout the recipe's export() writes) loaded back into the
    module: the same tensor names and shapes, or an error."""
    from safetensors.torch import load_file

    f = export_tensors_path(recipe, path)
    sd = load_file(f)
    own = head.state_dict()
    if hasattr(recipe, "adapt_export"):  # e.g. EAGLE-3's widened draft vocabulary
        sd = recipe.adapt_export(sd, own)
    bad = sorted(set(own) ^ set(sd)) + [k for k in own if k in sd and tuple(own[k].shape) != tuple(sd[k].shape)]
    if bad:
        raise SystemExit(f"--init-from {f}: not this head's tensors ({', '.join(bad[:6])})")
    head.load_state_dict({k: v.to(own[k].dtype) for k, v in sd.items()})
    log(f"{recipe.name}: initialised from {f}")


# ----------------------------------------------------------------------------------------------- arguments
def add_args(ap, d):
    ap.add_argument("--base", required=True, help="the exported base model (frozen)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer folder (default: --base)")
    ap.add_argument("--data", default=os.path.join(HERE, "data"), help="corpus folder (train/validation.jsonl.gz)")
    ap.add_argument("--out", required=True, help="export folder (the official head layout)")
    ap.add_argument("--work", default=None, help="checkpoints and training log (default: OUT.work)")
    ap.add_argument("--cache", default=None, help="tokenized-corpus cache (default: WORK)")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: torch's default)")
    ap.add_argument("--context", type=int, default=d.get("context", 256), help="tokens per packed row")
    ap.add_argument("--batch-size", type=int, default=d.get("batch_size", 8))
    ap.add_argument("--lr", type=float, default=d["lr"])
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=d.get("warmup", 50))
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--grad-clip", type=float, default=d.get("grad_clip", 0.5))
    ap.add_argument("--loss-on", choices=["assistant", "all"], default="assistant")
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--max-minutes", type=float, default=0.0)
    ap.add_argument("--max-epochs", type=float, default=0.0)
    ap.add_argument("--max-train-convs", type=int, default=0)
    ap.add_argument("--max-val-convs", type=int, default=500)
    ap.add_argument("--extra-train", action="append", default=[], metavar="PATH",
                    help="more training conversations (corpus format): a .jsonl.gz file, or a folder of them such as "
                         "self_distill.py's output; repeatable; added to --data's train split")
    ap.add_argument("--init-from", default=None, metavar="DIR",
                    help="start from an exported head (its official-layout tensors); a --resume checkpoint wins")
    ap.add_argument("--self-distill", type=int, default=0, metavar="N",
                    help="train on the base's own answers to the first N training prompts (generated first)")
    ap.add_argument("--sd-max-new", type=int, default=192, help="--self-distill: max new tokens per answer")
    ap.add_argument("--sd-batch", type=int, default=32, help="--self-distill: prompts per generate() call")
    ap.add_argument("--sd-temperature", type=float, default=0.0, help="--self-distill: 0 = greedy")
    ap.add_argument("--eval-every", type=int, default=d.get("eval_every", 100))
    ap.add_argument("--eval-rows", type=int, default=32)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--ckpt-every", type=int, default=100, help="steps between checkpoints (0: only at the end)")
    ap.add_argument("--ckpt-minutes", type=float, default=5.0, help="also checkpoint every N minutes (0: off)")
    lm_train.add_resume_args(ap)
    lm_train.add_precision_args(ap)
    ap.add_argument("--export-dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")


def parse(defaults, extra=None, argv=None):
    ap = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_args(ap, defaults)
    if extra:
        extra(ap)
    args = ap.parse_args(argv)
    args.tokenizer = args.tokenizer or args.base
    return args


# ----------------------------------------------------------------------------------------------- the loop
class Recipe:
    """What a head recipe supplies to run(): build(base, train_convs) -> module; loss(head, base, T, M) ->
    (loss tensor, metrics dict of floats); evaluate(head, base, T, M) -> dict of summed metrics incl. 'n';
    export(head, base, out, dtype) -> list of files written; extra_state() / load_extra_state(st); and, where the
    defaults do not fit, check_init(path) / init_from(module, path) and param_groups(module)."""
    name = "head"
    fused = False
    export_file = None  # the tensor file export() writes, which --init-from reads back (None: unsupported)

    def extra_state(self):
        return {}

    def check_init(self, path):
        """--init-from: an error now, before anything is built, if `path` holds no export of this recipe."""
        export_tensors_path(self, path)

    def init_from(self, module, path):
        """--init-from: the export in `path` loaded into the module."""
        load_export(module, self, path)

    def param_groups(self, module):
        """The optimizer's parameter groups; a group's "lr_scale" multiplies the schedule's learning rate."""
        return [{"params": list(module.parameters())}]

    def load_extra_state(self, st):
        pass


def run(args, recipe):
    T_START = time.time()
    if not args.max_steps and not args.max_minutes and not args.max_epochs:
        raise SystemExit("set --max-steps, --max-minutes and/or --max-epochs")
    work = args.work or (args.out.rstrip("/") + ".work")
    os.makedirs(work, exist_ok=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    budget_s = args.max_minutes * 60.0
    role = recipe.name

    from tokenizers import Tokenizer

    from chat_format import EOT_TEXT
    tk = Tokenizer.from_file(os.path.join(args.tokenizer, "tokenizer.json"))
    pad_id = tk.token_to_id(EOT_TEXT)
    base = Base(args.base, device)
    if base.V != tk.get_vocab_size():
        raise SystemExit(f"base vocab {base.V} != tokenizer vocab {tk.get_vocab_size()}")
    if args.context + 1 > base.config.max_position_embeddings:
        args.context = base.config.max_position_embeddings - 1
    log(f"{role}: device {device}, base {args.base} ({base.N} layers, hidden {base.H}, vocab {base.V}, "
        f"{'bf16' if base.dtype == torch.bfloat16 else 'f32'}, frozen)")

    data_dir = args.data
    if args.self_distill:
        data_dir = self_distill(base, args.tokenizer, args.data, args.self_distill,
                                os.path.join(work, f"self-distill-{args.self_distill}"), args.sd_max_new,
                                args.sd_batch, device, args.sd_temperature, args.seed)
    cache = args.cache or work
    if args.self_distill:
        cache = os.path.join(work, "cache-sd")
    train_convs = lm_train.tokenize_split(args.tokenizer, data_dir, "train", args.max_train_convs, cache, args.loss_on)
    extra_files, n_extra = extra_train_files(args.extra_train), 0
    for f in extra_files:  # each file is a one-split "folder": tokenized and cached like the corpus
        d = os.path.dirname(os.path.abspath(f))
        sub = os.path.join(cache, "extra-" + hashlib.sha1(d.encode()).hexdigest()[:10])  # shard names repeat
        got = lm_train.tokenize_split(args.tokenizer, d, os.path.basename(f)[:-len(".jsonl.gz")], 0, sub, args.loss_on)
        train_convs, n_extra = train_convs + got, n_extra + len(got)
    if extra_files:
        n_extra_tok = sum(len(c[0]) for c in train_convs[len(train_convs) - n_extra:])
        log(f"extra training data: {n_extra} conversations, {n_extra_tok / 1e6:.2f} M tokens from "
            f"{len(extra_files)} files ({', '.join(args.extra_train)})")
    val_convs = lm_train.tokenize_split(args.tokenizer, data_dir, "validation", args.max_val_convs, cache,
                                        args.loss_on)
    n_tok = sum(len(c[0]) for c in train_convs)
    log(f"train: {len(train_convs)} conversations, {n_tok / 1e6:.2f} M tokens; validation: {len(val_convs)}")
    row_len = args.context + 1
    batches = lm_train.Batches(train_convs, row_len, pad_id, args.batch_size, args.seed, device)
    vT, vM = lm_train.pack(val_convs, row_len, pad_id, np.arange(len(val_convs)))
    vT, vM = torch.from_numpy(vT).to(device), torch.from_numpy(vM).to(device)

    if args.init_from:
        recipe.check_init(args.init_from)  # fail before building
    torch.manual_seed(args.seed)
    head = recipe.build(base, train_convs).to(device)
    if args.init_from:
        recipe.init_from(head, args.init_from)
    n_params = sum(p.numel() for p in head.parameters())
    log(f"{role}: {n_params / 1e6:.2f} M trainable parameters")
    opt_kw = {"lr": args.lr, "betas": (args.beta1, args.beta2), "weight_decay": args.weight_decay}
    if cuda:
        opt_kw["fused"] = True
    opt = torch.optim.AdamW(recipe.param_groups(head), **opt_kw)

    step, progress0, tokens_seen = 0, 0.0, 0
    step_base = 0  # steps before this cycle: --max-steps and warm-up count from here after --restart-schedule
    ckpt_path = os.path.join(work, "checkpoint.pt")
    log_path = os.path.join(work, "train_log.jsonl")
    if args.resume:
        path = ckpt_path if args.resume == "auto" else args.resume
        if os.path.exists(path):
            ck = torch.load(path, map_location="cpu", weights_only=False)
            if ck.get("recipe") != role:
                raise SystemExit(f"checkpoint {path} is a {ck.get('recipe')} run, not {role}")
            recipe.load_extra_state(ck.get("extra", {}))
            head.load_state_dict(ck["model"])
            lm_train.restore_run_state(ck, opt, batches)
            for g, now in zip(opt.param_groups, recipe.param_groups(head)):  # this run's scales, not the saved ones
                g["lr_scale"] = now.get("lr_scale", 1.0)
            step, progress0, tokens_seen = ck["step"], ck["progress"], ck["tokens_seen"]
            log(f"resumed from {path} at step {step} (progress {progress0:.3f}, {tokens_seen / 1e6:.2f} M tokens)")
            progress0, step_base = lm_train.cycle_start(args, step, progress0)
        else:
            log(f"no checkpoint at {path}: starting fresh")
    if step == 0 and os.path.exists(log_path):
        os.remove(log_path)
    logf = open(log_path, "a")

    def write_log(rec):
        logf.write(json.dumps(rec) + "\n")
        logf.flush()

    def save_ckpt(progress):
        ck = {"recipe": role, "model": head.state_dict(), "optimizer": opt.state_dict(), "step": step,
              "progress": progress, "tokens_seen": tokens_seen, "data": batches.state(), "args": vars(args),
              "extra": recipe.extra_state(),
              "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}}
        torch.save(ck, ckpt_path + ".tmp")
        os.replace(ckpt_path + ".tmp", ckpt_path)

    amp, amp_name = lm_train.autocast_for(device, args.autocast)
    log(f"{role}: precision {amp_name}")

    @torch.no_grad()
    def evaluate(max_rows):
        head.eval()
        n = len(vT) if not max_rows else min(max_rows, len(vT))
        tot = {}
        for i in range(0, n, args.batch_size):
            with amp():
                r = recipe.evaluate(head, base, vT[i:min(i + args.batch_size, n)], vM[i:min(i + args.batch_size, n)])
            for k, v in r.items():
                tot[k] = tot.get(k, 0.0) + v
        head.train()
        cnt = max(tot.pop("n", 0.0), 1.0)
        return {k: v / cnt for k, v in tot.items()}

    tokens_per_step = args.batch_size * args.context
    log(f"training: batch {args.batch_size} x {args.context} tokens, lr {args.lr}, betas ({args.beta1}, "
        f"{args.beta2}), clip {args.grad_clip}, budget {args.max_minutes or '-'} min, "
        f"max steps {args.max_steps or '-'}, {batches.rows} rows per epoch")
    head.train()
    limits = lm_train.RunLimits(args, T_START, budget_s, step_base, progress0)
    t_loop = limits.t_loop
    win_t, win_tok, last_line, last_ck = time.time(), 0, 0.0, time.time()
    tokens_at_start = tokens_seen
    stop_reason, progress = None, progress0
    while True:
        progress, stop_reason = limits.check(step, batches)
        if stop_reason:
            break
        lr = limits.lr(step, progress)
        for g in opt.param_groups:
            g["lr"] = lr * g.get("lr_scale", 1.0)
        T, M = batches.next()
        with amp():
            loss, metrics = recipe.loss(head, base, T, M)
        loss.backward()
        if args.grad_clip:
            torch.nn.utils.clip_grad_norm_(head.parameters(), args.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens_seen += tokens_per_step
        win_tok += tokens_per_step
        if step % args.log_every == 0 or step == 1:
            now = time.time()
            tps = win_tok / max(now - win_t, 1e-9)
            rec = {"step": step, "loss": round(float(loss.detach()), 5), "lr": lr, "tokens": tokens_seen,
                   "tokens_per_s": round(tps), "elapsed_s": round(now - T_START, 1)}
            rec.update({k: round(float(v), 5) for k, v in metrics.items()})
            val_due = args.eval_every and step % args.eval_every == 0
            if val_due:
                rec.update({"val_" + k: round(v, 5) for k, v in evaluate(args.eval_rows).items()})
            write_log(rec)
            if val_due or now - last_line >= 15 or step == 1:
                shown = " ".join(f"{k} {v:.3f}" for k, v in rec.items()
                                 if k not in ("step", "lr", "tokens", "tokens_per_s", "elapsed_s", "loss"))
                log(f"{role} step {step}{'/' + str(args.max_steps) if args.max_steps else ''} loss {rec['loss']:.4f} "
                    f"{shown} lr {lr:.2e} {tps:.0f} tok/s epoch {batches.epoch} progress {progress:.0%}")
                last_line = now
            win_t, win_tok = time.time(), 0
        if (args.ckpt_every and step % args.ckpt_every == 0) or \
                (args.ckpt_minutes and time.time() - last_ck >= args.ckpt_minutes * 60):
            save_ckpt(progress)
            last_ck = time.time()
    train_s = time.time() - t_loop
    tps_run = (tokens_seen - tokens_at_start) / max(train_s, 1e-9)
    log(f"{role}: stopped at step {step} ({stop_reason}); {tokens_seen / 1e6:.2f} M tokens in total, "
        f"{tps_run:.0f} tok/s over this run's loop")
    final = evaluate(0)
    write_log({"step": step, "final": True, **{"val_" + k: round(v, 5) for k, v in final.items()}})
    logf.close()
    log(f"{role}: final validation " + " ".join(f"{k} {v:.4f}" for k, v in final.items()))
    save_ckpt(progress)

    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[args.export_dtype]
    os.makedirs(args.out, exist_ok=True)
    if hasattr(recipe, "calibrate"):  # e.g. Speculative Streaming's pruning threshold, on the validation rows
        with torch.no_grad(), amp():
            recipe.calibrate(head, base, vT, vM, args.batch_size)
    files = recipe.export(head, base, args.out, dtype)
    shutil.copy(log_path, os.path.join(args.out, "train_log.jsonl"))
    with open(log_path) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    tr = [(r["step"], r["loss"]) for r in recs if r.get("loss") is not None]
    if tr:
        import pngplot
        pngplot.plot(os.path.join(args.out, "loss_curve.png"), [("train", [a for a, _ in tr], [b for _, b in tr],
                                                                 "line")], title=role)
    summary = {"role": role, "base": os.path.abspath(args.base), "params": n_params, "steps": step,
               "tokens_seen": tokens_seen, "stop_reason": stop_reason, "device": str(device),
               "tokens_per_s": round(tps_run), "final_val": final, "self_distill": args.self_distill,
               "extra_train": [os.path.abspath(p) for p in args.extra_train],
               "init_from": os.path.abspath(args.init_from) if args.init_from else None,
               "epochs": round(batches.epoch + batches.pos / max(batches.rows, 1), 3),
               "wall_s": round(time.time() - T_START, 1), "files": files,
               "config": {k: getattr(args, k) for k in ("context", "batch_size", "lr", "warmup_steps", "seed",
                                                        "grad_clip", "beta1", "beta2")}}
    write_json(os.path.join(args.out, "training_summary.json"), summary)
    log(f"{role}: exported {args.export_dtype} to {args.out}: {', '.join(files)}")
    return summary
