"""Speculative Streaming (Bhendawade et al., arXiv 2402.11131) on a Llama model: the reference forward pass.

The C++ engine (engine/methods/streaming_*) implements exactly this; tests/fixtures/streaming holds its outputs
on a tiny model (make_streaming_fixture.py). Terms, with N decoder layers of which the top Ns are multi-stream
attention (MSA) layers and gamma speculative streams:

* Main stream: the ordinary Llama forward. In the MSA layers every linear map carries a LoRA adapter
  (rank r, scale alpha/r) that is merged into the weights on export, so the exported model is a plain Llama
  checkpoint: "the fine-tuned model".
* Stream initialisation (eq. 3): at the input of layer N-Ns, stream j of position t starts from the main
  stream's residual state there: s_{t,j} = up(down(h_t)) + P_j, with down [eta, H] and up [H, eta] (the rank-eta
  map f_eta) and P_j the stream identifier embedding [gamma, H].
* MSA attention (eq. 2): in each MSA layer, stream j at position t has query/key/value from the layer's own
  (LoRA-adapted) projections, RoPE at position t+j; it attends to the main stream's keys/values at positions
  <= t (the KV cache and the tree ancestors at inference) and to the keys/values of streams 1..j of the same
  position t. Streams keep no KV cache. The MLP and norms are the layer's own.
* Outputs: the main stream at t predicts token t+1; stream j (1-based) at t predicts token t+1+j, through the
  model's final norm and LM head.
* Pruning adapter: after decoder layer `prune_layer` (its output, the residual stream entering the next layer),
  e = h + up_p(down_p(h)) (rank 8), early logits = lm_head(final_norm(e)). In a tree, softmax(early logits of a
  parent) at a child's token is the parent-to-child transition probability used to prune the draft.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import lora as lora_lib
from lora import PROJ  # noqa: F401  (the projections, as train_streaming.py names them)


def rope(x, positions, theta):
    """x [..., T, hd] with positions broadcastable to [..., T]: Llama's rotate-half RoPE."""
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd))
    fr = positions.to(torch.float32)[..., None] * inv
    emb = torch.cat([fr, fr], -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    h = hd // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


def rms(x, w, eps):
    xf = x.float()
    return (w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))).to(x.dtype)


class StreamingParts(nn.Module):
    """Everything Speculative Streaming trains: LoRA on the MSA layers, the stream map and embeddings, and the
    pruning adapter. The base weights stay outside (frozen, passed in as a state dict)."""

    def __init__(self, cfg, base_sd):
        super().__init__()
        self.cfg = dict(cfg)
        H, N, Ns = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["msa_layers"]
        if not 1 <= Ns <= N:
            raise SystemExit(f"msa_layers {Ns} must be in 1..{N}")
        if not 0 <= cfg["prune_layer"] < N - 1:
            raise SystemExit(f"prune_layer {cfg['prune_layer']} must be in 0..{N - 2}")
        self.lora = lora_lib.modules(base_sd, range(N - Ns, N), cfg["lora_rank"])
        self.stream_down = nn.Parameter(torch.randn(cfg["stream_rank"], H) / math.sqrt(H))
        self.stream_up = nn.Parameter(torch.zeros(H, cfg["stream_rank"]))
        self.stream_embeddings = nn.Parameter(torch.randn(cfg["num_streams"], H) * 0.02)
        self.prune_down = nn.Parameter(torch.randn(cfg["prune_rank"], H) / math.sqrt(H))
        self.prune_up = nn.Parameter(torch.zeros(H, cfg["prune_rank"]))

    def delta(self, layer, proj):
        """The LoRA update of one weight, [out, in] (what export merges)."""
        return lora_lib.delta(self.lora, layer, proj, self.cfg["lora_alpha"], self.cfg["lora_rank"])

    # streaming.safetensors' tensor names (docs/streaming-format.md) and the parameters they hold
    EXTRAS = {"stream.down.weight": "stream_down", "stream.up.weight": "stream_up",
              "stream.embeddings": "stream_embeddings", "prune.down.weight": "prune_down",
              "prune.up.weight": "prune_up"}

    def extras_state_dict(self):
        """streaming.safetensors: the tensors the engine needs besides the merged model."""
        return {name: getattr(self, attr) for name, attr in self.EXTRAS.items()}

    def load_extras(self, tensors, source):
        """streaming.safetensors' tensors back into the parameters, or SystemExit naming `source` and what does
        not fit (a name, or a shape another --streams, --stream-rank or hidden size gives)."""
        bad = sorted(set(tensors) ^ set(self.EXTRAS))
        bad += [n for n, a in self.EXTRAS.items() if n in tensors and tensors[n].shape != getattr(self, a).shape]
        if bad:
            raise SystemExit(f"{source}: not this model's streams ({', '.join(bad[:5])})")
        with torch.no_grad():
            for name, attr in self.EXTRAS.items():
                getattr(self, attr).copy_(tensors[name].to(getattr(self, attr).dtype))


def linear(sd, parts, layer, proj, x):
    y = x @ sd[f"model.layers.{layer}.{proj}.weight"].t()
    if parts is not None and lora_lib.key(layer, proj) in parts.lora:
        m = parts.lora[lora_lib.key(layer, proj)]
        y = y + ((x @ m.A.t()) @ m.B.t()) * (parts.cfg["lora_alpha"] / parts.cfg["lora_rank"])
    return y


def mlp(sd, parts, l, x):
    return linear(sd, parts, l, "mlp.down_proj",
                  F.silu(linear(sd, parts, l, "mlp.gate_proj", x)) * linear(sd, parts, l, "mlp.up_proj", x))


def forward(sd, cfg, x, parts=None, streams=True, prune=True, stream_at=None):
    """sd: the base state dict (HF names, tied or not), cfg: the model + streaming config, x [B, T] token ids,
    parts: StreamingParts (None: the plain base model). Returns dict with
      main [B, T, V] logits, final [B, T, H] (the LM head's input), streams [B, gamma, S, V] (if asked),
      early [B, T, V] (if asked).
    Positions are 0..T-1; the main stream is causal. stream_at (sorted long [S]): the positions that get streams
    (default: all T); training samples a subset, since streams never influence the main stream."""
    H, N = cfg["hidden_size"], cfg["num_hidden_layers"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or H // nh
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    Ns = cfg["msa_layers"] if parts is not None else 0
    G = cfg["num_streams"] if (parts is not None and streams) else 0
    B, T = x.shape
    emb = sd["model.embed_tokens.weight"]
    lm_head = sd.get("lm_head.weight", emb)
    pos = torch.arange(T, device=x.device)
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    at = pos if stream_at is None else stream_at
    S = at.shape[0]
    s_causal = at[:, None] >= pos[None, :]  # [S, T]: stream queries at position at[i] see main keys <= at[i]
    rep = nh // nkv
    scale = 1.0 / math.sqrt(hd)
    out = {}

    h = emb[x]
    s = None  # streams [B, G, T, H]
    for l in range(N):
        P = parts  # linear() adds LoRA where parts has it: the top Ns layers here, any layers for Medusa-2
        if G and l == N - Ns:
            s = (h[:, at] @ parts.stream_down.t()) @ parts.stream_up.t()
            s = s[:, None] + parts.stream_embeddings[:G, None, :]
        a = rms(h, sd[f"model.layers.{l}.input_layernorm.weight"], eps)
        q = linear(sd, P, l, "self_attn.q_proj", a).view(B, T, nh, hd).transpose(1, 2)
        k = linear(sd, P, l, "self_attn.k_proj", a).view(B, T, nkv, hd).transpose(1, 2)
        v = linear(sd, P, l, "self_attn.v_proj", a).view(B, T, nkv, hd).transpose(1, 2)
        q, k = rope(q, pos, theta), rope(k, pos, theta)
        kr, vr = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)  # [B, nh, T, hd]
        o = F.scaled_dot_product_attention(q, kr, vr, is_causal=True)
        o = o.transpose(1, 2).reshape(B, T, nh * hd)
        if s is not None:
            sa = rms(s, sd[f"model.layers.{l}.input_layernorm.weight"], eps)
            spos = at[None, :] + torch.arange(1, G + 1, device=x.device)[:, None]  # [G, S]
            qs = linear(sd, P, l, "self_attn.q_proj", sa).view(B, G, S, nh, hd).permute(0, 1, 3, 2, 4)
            ks = linear(sd, P, l, "self_attn.k_proj", sa).view(B, G, S, nkv, hd).permute(0, 1, 3, 2, 4)
            vs = linear(sd, P, l, "self_attn.v_proj", sa).view(B, G, S, nkv, hd).permute(0, 1, 3, 2, 4)
            qs = rope(qs, spos[None, :, None, :], theta)  # [B, G, nh, T, hd]
            ks = rope(ks, spos[None, :, None, :], theta)
            ksr, vsr = ks.repeat_interleave(rep, 2), vs.repeat_interleave(rep, 2)
            s_main = (qs @ kr[:, None].transpose(-1, -2)) * scale  # [B, G, nh, S, T]
            s_main = s_main.masked_fill(~s_causal, float("-inf"))
            # stream j (0-based) sees streams 0..j of its own position
            s_str = (qs[:, :, None] * ksr[:, None, :]).sum(-1) * scale  # [B, G(query), G(key), nh, S]
            s_str = s_str.permute(0, 1, 3, 4, 2)  # [B, G, nh, S, G]
            smask = torch.ones(G, G, dtype=torch.bool, device=x.device).tril()  # query j, key i <= j
            s_str = s_str.masked_fill(~smask[None, :, None, None, :], float("-inf"))
            p = torch.softmax(torch.cat([s_main, s_str], -1).float(), -1).to(qs.dtype)
            os_ = p[..., :T] @ vr[:, None]  # [B, G, nh, S, hd]
            os_ = os_ + torch.einsum("bgnti,bintd->bgntd", p[..., T:], vsr)
            os_ = os_.permute(0, 1, 3, 2, 4).reshape(B, G, S, nh * hd)
            s = s + linear(sd, P, l, "self_attn.o_proj", os_)
            s = s + mlp(sd, P, l, rms(s, sd[f"model.layers.{l}.post_attention_layernorm.weight"], eps))
        h = h + linear(sd, P, l, "self_attn.o_proj", o)
        h = h + mlp(sd, P, l, rms(h, sd[f"model.layers.{l}.post_attention_layernorm.weight"], eps))
        if parts is not None and prune and l == cfg["prune_layer"]:
            e = h + (h @ parts.prune_down.t()) @ parts.prune_up.t()
            out["early"] = rms(e, sd["model.norm.weight"], eps) @ lm_head.t()
    out["final"] = rms(h, sd["model.norm.weight"], eps)
    out["main"] = out["final"] @ lm_head.t()
    if s is not None:
        out["streams"] = rms(s, sd["model.norm.weight"], eps) @ lm_head.t()
    return out


def merged_state_dict(sd, parts):
    """The fine-tuned model: the base state dict with every LoRA update added to its weight."""
    N, Ns = parts.cfg["num_hidden_layers"], parts.cfg["msa_layers"]
    m = {k: v.detach().clone() for k, v in sd.items()}
    with torch.no_grad():
        for l in range(N - Ns, N):
            for p in PROJ:
                key = f"model.layers.{l}.{p}.weight"
                m[key] = (m[key].float() + parts.delta(l, p).float()).to(m[key].dtype)
    return m
