#!/usr/bin/env python3
"""Prints the README's "Against llama.cpp on the same weights" tables from the JSON that bench/compare_llamacpp.sh
writes (default bench/results/llamacpp; pass another directory as the argument). Models whose files are absent
are left out. In the llama.cpp rows each cell carries SpecScope / llama.cpp in parentheses: decode >= 1 and
n-token ms <= 1 are the cells where SpecScope is at least as fast. With rounds (compare_llamacpp.sh --rounds), a
second table gives each file's ratios against llama-bench round by round: their median, range, and the rounds
SpecScope was ahead in.

    python3 bench/llamacpp_table.py [DIR]
"""
import json
import os
import statistics
import sys

DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "llamacpp")
SIZES = (1, 2, 4, 8, 16, 32)
ROWS = [("base_bf16", "default base, bf16 (14M)"), ("syn60_f32", "60M, f32"), ("syn60_f16", "60M, F16"),
        ("syn60_q8_0", "60M, Q8_0"), ("syn60_q4_k_s", "60M, Q4_K_S"), ("syn1b_f16", "1B-shaped, F16"),
        ("syn1b_bf16", "1B-shaped, BF16"), ("syn1b_q8_0", "1B-shaped, Q8_0"), ("syn1b_q4_k_m", "1B-shaped, Q4_K_M"),
        ("syn1b_q5_k_m", "1B-shaped, Q5_K_M"), ("syn1b_q6_k", "1B-shaped, Q6_K"),
        ("synq3_f16", "Qwen3-0.6B-shaped, F16"), ("synq3_q8_0", "Qwen3-0.6B-shaped, Q8_0"),
        ("synq3_q4_k_m", "Qwen3-0.6B-shaped, Q4_K_M"), ("syng3_f16", "Gemma-3-1B-shaped, F16"),
        ("syng3_q8_0", "Gemma-3-1B-shaped, Q8_0"), ("syng3_q4_k_m", "Gemma-3-1B-shaped, Q4_K_M"),
        ("syng2_q4_0", "Gemma-2-2B-shaped, Q4_0"), ("syng2_q4_k_m", "Gemma-2-2B-shaped, Q4_K_M"),
        ("synmoe_q4_0", "Qwen3-30B-A3B layers (MoE), Q4_0"), ("synmoe_q4_k_m", "Qwen3-30B-A3B layers (MoE), Q4_K_M"),
        ("synmoe2_q4_0", "Qwen1.5-MoE-A2.7B layers (shared expert), Q4_0"),
        ("synmoe2_q4_k_m", "Qwen1.5-MoE-A2.7B layers (shared expert), Q4_K_M"),
        ("synoss_mxfp4_moe", "gpt-oss-20b layers (MXFP4 experts), MXFP4_MOE"),
        ("synds_q4_k_m", "DeepSeek-V2-Lite layers (latent attention), Q4_K_M")]
ENGINES = [("llamabench", "llama.cpp `llama-bench`"), ("llamacpp", "llama.cpp binding, all n logits")]


def load(key, eng):
    p = os.path.join(DIR, f"{key}.{eng}.json")
    return json.load(open(p)) if os.path.exists(p) else None


def ms(j):
    return {x["tokens"]: x["ms"] for x in j["step_cost"]}


print("| model | engine | decode tok/s | " + " | ".join(f"n = {n}" if n == 1 else str(n) for n in SIZES) + " |")
print("|---|---|---|" + "---|" * len(SIZES))
for key, label in ROWS:
    ss = load(key, "specscope")
    if ss is None:
        continue
    s_ms = ms(ss)
    print(f"| {label} | SpecScope | **{ss['decode_tokens_per_second']:.1f}** | "
          + " | ".join(f"{s_ms[n]:.1f} ms" for n in SIZES) + " |")
    for eng, name in ENGINES:
        j = load(key, eng)
        if j is None:
            continue
        l_ms = ms(j)
        d = j["decode_tokens_per_second"]
        print(f"|  | {name} | {d:.1f} ({ss['decode_tokens_per_second'] / d:.2f}×) | "
              + " | ".join(f"{l_ms[n]:.1f} ms ({s_ms[n] / l_ms[n]:.2f}×)" for n in SIZES) + " |")

# Round by round (--rounds K; bench/merge_rounds.py keeps every round's figures, in order, under "rounds"): each round
# runs the engines back to back, so the machine's drift, which moves the medians above by up to a third between
# rounds, reaches both engines of one round alike; the spread of the ratios is what a single figure hides.
def round_ratios(key):
    """Per round: (SpecScope / llama-bench decode tok/s, SpecScope / llama-bench one-token forward time)."""
    ss, lb = load(key, "specscope"), load(key, "llamabench")
    if ss is None or lb is None or "rounds" not in ss or "rounds" not in lb:
        return []
    s, l = ss["rounds"], lb["rounds"]
    return [(a / b, c / d) for a, b, c, d in zip(s["decode_tokens_per_second"], l["decode_tokens_per_second"],
                                                  s["step_ms"]["1"], l["step_ms"]["1"])]


def spread(values, ahead):
    return (f"{statistics.median(values):.2f}× ({min(values):.2f}-{max(values):.2f}×) | "
            f"{sum(1 for x in values if ahead(x))} of {len(values)}")


rows = [(label, round_ratios(key)) for key, label in ROWS]
rows = [(label, r) for label, r in rows if len(r) > 1]
if rows:
    print()
    print("| model (against `llama-bench`, round by round) | decode, median ratio (range) | SpecScope ahead "
          "| n = 1 time, median ratio (range) | SpecScope ahead |")
    print("|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {spread([d for d, _ in r], lambda x: x >= 1)} | "
              f"{spread([t for _, t in r], lambda x: x <= 1)} |")

spec = os.path.join(DIR, "spec.json")
if os.path.exists(spec):
    j = json.load(open(spec))
    print()
    print(f"| speculative: default base + its draft, γ = {j['gamma']}, greedy, {j['prompts']} held-out prompts, "
          f"≤ {j['max_tokens']} tokens, {j['threads']} threads | decode tok/s | acceptance | new tokens |")
    print("|---|---|---|---|")
    for k, name in (("specscope", "SpecScope `run --method sps`"), ("llamacpp", "llama.cpp `llama-speculative`")):
        d = j[k]
        print(f"| {name} | {d['tokens_per_second']:.1f} | {100 * d['acceptance']:.1f}% | {d['new_tokens']} |")
