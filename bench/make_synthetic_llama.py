#!/usr/bin/env python3
"""A randomly initialised Llama of a chosen size, saved as a Hugging Face f32 directory with the default model's
tokenizer, for speed benchmarks only (its text is noise). The default shape is the 58M-parameter f32 Llama of
the llama.cpp cost curve in ../shared/reference (hidden 768, 9 layers, 12 heads / 4 KV heads, FFN 2048, vocab
4096: 59.8M parameters, 239 MB), with every row length a multiple of 256 so that llama.cpp's K-quants apply to
every matrix without fallbacks.

    /root/.cache/specscope/venv/bin/python bench/make_synthetic_llama.py /tmp/syn60
    /root/.cache/specscope/venv/bin/python tests/fixtures/make_gguf_models.py --convert /tmp/syn60 f32 /tmp/syn60.f32.gguf
"""
import argparse
import os
import shutil

import torch
from transformers import LlamaConfig, LlamaForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--layers", type=int, default=9)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    tok = os.path.join(ROOT, "assets", "models", "base")
    torch.manual_seed(a.seed)
    cfg = LlamaConfig(vocab_size=4096, hidden_size=a.hidden, intermediate_size=a.intermediate,
                      num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                      max_position_embeddings=1024, tie_word_embeddings=True, bos_token_id=0, eos_token_id=1)
    model = LlamaForCausalLM(cfg).float()
    model.save_pretrained(a.out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(tok, f), os.path.join(a.out, f))
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: {n / 1e6:.1f}M parameters (random weights, for speed only)")


if __name__ == "__main__":
    main()
