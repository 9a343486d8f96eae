"""LoRA on a Llama's decoder projections, trained here and saved as the `peft` library saves it
(adapter_config.json + adapter_model.safetensors), which the C++ engine merges into the base at load time
(engine/model/lora_adapter.h). Shared by the recipes that fine-tune the base itself: Speculative Streaming
(train_streaming.py) and Medusa-2 (train_medusa.py --joint-layers).

The module keys are "{layer}_{projection with '.' -> '_'}" (e.g. "5_self_attn_q_proj"), each holding A [r, in]
and B [out, r]; the update of a weight is B A * alpha / r, B starting at zero so that training starts from the
base exactly.
"""
import json
import math
import os

import torch
import torch.nn as nn

PROJ = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def key(layer, proj):
    return f"{layer}_{proj.replace('.', '_')}"


class LoRA(nn.Module):
    def __init__(self, d_in, d_out, r):
        super().__init__()
        self.A = nn.Parameter(torch.empty(r, d_in))
        self.B = nn.Parameter(torch.zeros(d_out, r))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))


def modules(base_sd, layers, rank):
    """A ModuleDict of LoRA on every projection of `layers`, shaped from the base state dict (HF names)."""
    d = nn.ModuleDict()
    for l in layers:
        for p in PROJ:
            out_dim, in_dim = base_sd[f"model.layers.{l}.{p}.weight"].shape
            d[key(l, p)] = LoRA(in_dim, out_dim, rank)
    return d


def delta(lora, layer, proj, alpha, rank):
    """The update of one weight, [out, in] (what a merge adds)."""
    m = lora[key(layer, proj)]
    return (m.B @ m.A) * (alpha / rank)


def write_peft_adapter(lora, layers, rank, alpha, out, base_ref, save_safetensors, write_json):
    """The layout peft's save_pretrained writes. A and B stay f32 so that a merge rounds once, into the base's
    dtype. base_ref is base_model_name_or_path (the engine resolves it relative to `out` first)."""
    tensors = {}
    for l in layers:
        for p in PROJ:
            m = lora[key(l, p)]
            name = f"base_model.model.model.layers.{l}.{p}"
            tensors[f"{name}.lora_A.weight"] = m.A.detach().float().contiguous()
            tensors[f"{name}.lora_B.weight"] = m.B.detach().float().contiguous()
    save_safetensors(tensors, os.path.join(out, "adapter_model.safetensors"), torch.float32)
    write_json(os.path.join(out, "adapter_config.json"), {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base_ref,
        "r": rank, "lora_alpha": alpha, "lora_dropout": 0.0, "bias": "none",
        "fan_in_fan_out": False, "use_rslora": False, "use_dora": False, "inference_mode": True,
        "target_modules": sorted({p.split(".")[-1] for p in PROJ}),
        "layers_to_transform": list(layers), "rank_pattern": {}, "alpha_pattern": {},
        "modules_to_save": None})
    return ["adapter_config.json", "adapter_model.safetensors"]


def check_peft_config(path, layers, rank, alpha, flags):
    """SystemExit unless the adapter in folder `path` is this run's LoRA: the same rank, alpha and layers (another
    alpha would rescale it silently). `flags` names the options that set them, for the message."""
    with open(os.path.join(path, "adapter_config.json")) as f:
        c = json.load(f)
    want = {"r": rank, "lora_alpha": float(alpha), "layers_to_transform": list(layers)}
    got = {"r": c.get("r"), "lora_alpha": float(c.get("lora_alpha", 0)),
           "layers_to_transform": c.get("layers_to_transform")}
    if got != want:
        raise SystemExit(f"--init-from {path}: its adapter is {got}, this run trains {want} ({flags})")


def read_peft_adapter(path, layers, rank):
    """The adapter write_peft_adapter wrote in folder `path`, as the state dict of modules(...) on `layers`, or
    SystemExit naming what does not fit."""
    from safetensors.torch import load_file

    got = load_file(os.path.join(path, "adapter_model.safetensors"))
    want = {}
    for l in layers:
        for p in PROJ:
            name = f"base_model.model.model.layers.{l}.{p}"
            want[f"{key(l, p)}.A"] = got.pop(f"{name}.lora_A.weight", None)
            want[f"{key(l, p)}.B"] = got.pop(f"{name}.lora_B.weight", None)
    missing = sorted(k for k, v in want.items() if v is None)
    if missing or got:
        layers = list(layers)
        raise SystemExit(f"--init-from {path}: its adapter is not a LoRA of rank {rank} on layers {layers[0]}-"
                         f"{layers[-1]} ({', '.join((missing or sorted(got))[:4])})")
    return want
