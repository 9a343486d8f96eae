#!/usr/bin/env python3
"""A randomly initialised Llama of a chosen size, saved as a Hugging Face f32 directory with the default model's
tokenizer, for speed benchmarks only (its text is noise). The default shape is the 58M-parameter f32 Llama of
the llama.cpp cost curve in ../shared/reference (hidden 768, 9 layers, 12 heads / 4 KV heads, FFN 2048, vocab
4096: 59.8M parameters, 239 MB), with every row length a multiple of 256 so that llama.cpp's K-quants apply to
every matrix without fallbacks. `--shape 8b` is Llama-3.1-8B's (bf16; draw it with `--device cuda`). `--shape 1b` is Llama-3.2-1B's shape instead (hidden 2048, 16 layers, 32 heads /
8 KV heads, FFN 8192, tied embeddings; vocab 32000 where the real one has 128256, rope theta 500000 without the
llama3 scaling): 1.05B parameters, written as f16 (2.1 GB) because an f32 copy would be 4.2 GB for nothing (the
GGUF converter reads f16 safetensors exactly; numpy has no bf16). The tokenizer stays the default model's 4096
tokens; the converter pads the rest of the 32000 ids as unused tokens, so only the embedding and output shapes
change, which is all a speed benchmark needs. `--shape qwen3-0.6b` is Qwen3-0.6B's (Qwen3ForCausalLM: per-head q/k
norms, head_dim 128 so that attention is 2048 wide on a 1024-wide model, 28 layers, 16 heads / 8 KV heads, FFN 3072,
its real 151936-entry tied vocabulary, rope theta 1000000): 0.60B parameters, f16 (1.2 GB). `--shape gemma3-1b` is
Gemma-3-1B's (Gemma3ForCausalLM: 26 layers, hidden 1152, 4 heads / 1 KV head of 256, FFN 6912, its 262144-entry
tied vocabulary, a 512-token window on five layers of six): 1.0B parameters, f16 (2.0 GB). `--shape gemma2-2b` is
Gemma-2-2B's (Gemma2ForCausalLM: 26 layers, hidden 2304, 8 heads / 4 KV heads of 256, FFN 9216, its 256000-entry
tied vocabulary, a 4096-token window on every other layer, soft caps 50 and 30): 2.6B parameters, f16 (5.2 GB).
`--shape qwen3moe-4l` is four of Qwen3-30B-A3B's 48 layers (Qwen3MoeForCausalLM: hidden 2048, 32 heads / 4 KV heads
of 128, 128 experts of 768 per layer with 8 per token, renormalized; vocab 32000 where the real one has 151936):
2.55B parameters of which 0.23B are read per token, f16 (5.1 GB). Its router is random, so tokens pick experts
nearly uniformly, where a trained router's choices for neighbouring tokens overlap more. `--shape qwen2moe-4l` is four
of Qwen1.5-MoE-A2.7B's 24 layers (Qwen2MoeForCausalLM: hidden 2048, 16 heads / 16 KV heads of 128 with q/k/v biases,
60 experts of 1408 per layer with 4 per token, not renormalized, and a shared expert of 5632 on every token; vocab
32000 where the real one has 151936; untied, as published, since llama.cpp's qwen2moe needs output.weight): 2.41B
parameters of which 0.41B are read per token, f16 (4.8 GB). `--shape gptoss-4l` is four of gpt-oss-20b's 24 layers
(GptOssForCausalLM: hidden 2880, 64 heads / 8 KV heads of 64 with q/k/v/o biases and sinks, 32 experts of 2880 per
layer with 4 per token and biases, a 128-token window on every other layer, YaRN; vocab 32000 where the real one has
201088; untied, as published): 3.52B parameters of which 0.52B are read per token, f16 (7.0 GB), drawn in f16 (an
f32 draw would take 14 GB). Quantized with llama-quantize's MXFP4_MOE, its experts are MXFP4 as the published files'.
`--shape dsv2lite-4l` is four of DeepSeek-V2-Lite's 27 layers (DeepseekV2ForCausalLM: hidden 2048, 16 heads of
multi-head latent attention (a 512-value latent, a 64-value rotary key, 128 + 64 query/key and 128 value values a
head, no q_lora), one dense layer (10944) then three of 64 experts of 1408 with 6 per token and 2 shared, YaRN 40x over
4,096 with mscale 0.707; vocab 32000 where the real one has 102400; untied): 1.98B parameters, f16 (4.0 GB), drawn
in f16. `--shape olmo2-1b` is OLMo-2-0425-1B's (Olmo2ForCausalLM: hidden 2048, 16 layers, 16 heads / 16 KV heads
of 128, FFN 8192, norms after the sublayers and over whole q/k projections, its real 100352-entry untied vocabulary,
rope theta 500000): 1.48B parameters, f16 (3.0 GB).

    /root/.cache/specscope/venv/bin/python bench/make_synthetic_llama.py /tmp/syn60
    /root/.cache/specscope/venv/bin/python tests/fixtures/make_gguf_models.py --convert /tmp/syn60 f32 /tmp/syn60.f32.gguf
    /root/.cache/specscope/venv/bin/python bench/make_synthetic_llama.py --shape 1b /tmp/syn1b     (then --convert f16)
"""
import argparse
import os
import shutil

import torch
from transformers import (DeepseekV2Config, DeepseekV2ForCausalLM, Gemma2Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig, GptOssConfig,
                          GptOssForCausalLM, LlamaConfig,
                          LlamaForCausalLM, Olmo2Config, Olmo2ForCausalLM, Qwen2MoeConfig, Qwen2MoeForCausalLM, Qwen3Config, Qwen3ForCausalLM,
                          Qwen3MoeConfig, Qwen3MoeForCausalLM)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# name: (hidden, layers, heads, kv heads, FFN, vocab, max positions, rope theta, saved dtype)
SHAPES = {"60m": (768, 9, 12, 4, 2048, 4096, 1024, 10000.0, torch.float32),
          "1b": (2048, 16, 32, 8, 8192, 32000, 2048, 500000.0, torch.float16),
          # Llama-3.1-8B's shape (its real vocabulary; no llama3 RoPE scaling): 8.03B parameters, for the GPU
          # benchmarks of issue 23 (--dtype bf16 --device cuda: made on the GPU in seconds, 16 GB on disk).
          "8b": (4096, 32, 32, 8, 14336, 128256, 8192, 500000.0, torch.bfloat16),
          "qwen3-0.6b": (1024, 28, 16, 8, 3072, 151936, 4096, 1000000.0, torch.float16),
          "gemma3-1b": (1152, 26, 4, 1, 6912, 262144, 32768, 1000000.0, torch.float16),
          "gemma2-2b": (2304, 26, 8, 4, 9216, 256000, 8192, 10000.0, torch.float16),
          "qwen3moe-4l": (2048, 4, 32, 4, 6144, 32000, 4096, 1000000.0, torch.float16),
          "qwen2moe-4l": (2048, 4, 16, 16, 5632, 32000, 8192, 1000000.0, torch.float16),
          "gptoss-4l": (2880, 4, 64, 8, 2880, 32000, 131072, 150000.0, torch.float16),
          "dsv2lite-4l": (2048, 4, 16, 16, 10944, 32000, 163840, 10000.0, torch.float16),
          "olmo2-1b": (2048, 16, 16, 16, 8192, 100352, 4096, 500000.0, torch.float16)}
# The shapes of another architecture: (config class, model class, extra config keys).
ARCHS = {"qwen3-0.6b": (Qwen3Config, Qwen3ForCausalLM, dict(head_dim=128)),
         "olmo2-1b": (Olmo2Config, Olmo2ForCausalLM, dict(tie_word_embeddings=False, rms_norm_eps=1e-6)),
         "gemma3-1b": (Gemma3TextConfig, Gemma3ForCausalLM,
                       dict(head_dim=256, query_pre_attn_scalar=256, sliding_window=512)),
         "gemma2-2b": (Gemma2Config, Gemma2ForCausalLM,
                       dict(head_dim=256, query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                            final_logit_softcapping=30.0)),
         "qwen3moe-4l": (Qwen3MoeConfig, Qwen3MoeForCausalLM,
                         dict(head_dim=128, num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768,
                              norm_topk_prob=True)),
         "qwen2moe-4l": (Qwen2MoeConfig, Qwen2MoeForCausalLM,
                         dict(num_experts=60, num_experts_per_tok=4, moe_intermediate_size=1408,
                              shared_expert_intermediate_size=5632, norm_topk_prob=False, tie_word_embeddings=False)),
         "gptoss-4l": (GptOssConfig, GptOssForCausalLM,
                       dict(head_dim=64, num_local_experts=32, num_experts_per_tok=4, sliding_window=128,
                            tie_word_embeddings=False, attention_bias=True,
                            rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0,
                                             "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                                             "original_max_position_embeddings": 4096})),
         "dsv2lite-4l": (DeepseekV2Config, DeepseekV2ForCausalLM,
                         dict(kv_lora_rank=512, q_lora_rank=None, qk_nope_head_dim=128, qk_rope_head_dim=64,
                              v_head_dim=128, n_routed_experts=64, num_experts_per_tok=6, n_shared_experts=2,
                              moe_intermediate_size=1408, first_k_dense_replace=1, topk_method="greedy",
                              norm_topk_prob=False, routed_scaling_factor=1.0, tie_word_embeddings=False,
                              rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                               "original_max_position_embeddings": 4096, "mscale": 0.707,
                                               "mscale_all_dim": 0.707, "beta_fast": 32.0, "beta_slow": 1.0}))}
# Shapes too large to draw in f32 on this machine's memory: drawn in the saved dtype directly.
DRAW_IN_DTYPE = {"gptoss-4l", "dsv2lite-4l"}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="60m", help="the defaults of the options below")
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(DTYPES), help="the saved dtype (default: the shape's)")
    ap.add_argument("--device", default="cpu", help="where the weights are drawn (cuda: fast for large shapes)")
    ap.add_argument("--tokenizer-from", help="a model directory to copy the tokenizer from (default: the shipped base)")
    a = ap.parse_args()
    hidden, layers, heads, kv_heads, ffn, vocab, max_pos, theta, dtype = SHAPES[a.shape]
    pick = lambda v, d: d if v is None else v
    tok = a.tokenizer_from or os.path.join(ROOT, "assets", "models", "base")
    if a.dtype:
        dtype = DTYPES[a.dtype]
    torch.manual_seed(a.seed)
    config_cls, model_cls, extra = ARCHS.get(a.shape, (LlamaConfig, LlamaForCausalLM, {}))
    extra = dict(extra)
    tied = extra.pop("tie_word_embeddings", True)
    cfg = config_cls(vocab_size=pick(a.vocab, vocab), hidden_size=pick(a.hidden, hidden),
                      intermediate_size=pick(a.intermediate, ffn), num_hidden_layers=pick(a.layers, layers),
                      num_attention_heads=pick(a.heads, heads), num_key_value_heads=pick(a.kv_heads, kv_heads),
                      max_position_embeddings=max_pos, tie_word_embeddings=tied,
                      **({} if "rope_parameters" in extra else {"rope_theta": theta}),
                      bos_token_id=0, eos_token_id=1, **extra)
    if a.device == "cpu" and a.shape not in DRAW_IN_DTYPE:
        model = model_cls(cfg).to(dtype)
    else:  # drawn on the device in the saved dtype: an 8B model in f32 on the CPU would take 32 GB and minutes
        torch.manual_seed(a.seed)
        with torch.device(a.device):
            model = model_cls._from_config(cfg, dtype=dtype)
    model.save_pretrained(a.out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(tok, f), os.path.join(a.out, f))
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: {n / 1e6:.1f}M parameters (random weights, for speed only)")


if __name__ == "__main__":
    main()
