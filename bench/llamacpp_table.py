#!/usr/bin/env python3
"""Prints the README's "Against llama.cpp on the same weights" table from bench/results/llamacpp/*.json
(written by bench/compare_llamacpp.sh)."""
import json
import os
import sys

DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "llamacpp")
ROWS = [("base_bf16", "default base, bf16 (14M)"), ("syn60_f32", "60M, f32"), ("syn60_f16", "60M, F16"),
        ("syn60_q8_0", "60M, Q8_0"), ("syn60_q4_k_s", "60M, Q4_K_S")]
print("| model | engine | decode tok/s | n = 1 | 2 | 4 | 8 | 16 | 32 | 64 |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key, label in ROWS:
    for eng, name in (("specscope", "SpecScope"), ("llamacpp", "llama.cpp")):
        j = json.load(open(os.path.join(DIR, f"{key}.{eng}.json")))
        st = {x["tokens"]: x for x in j["step_cost"]}
        cells = [f"{st[1]['ms']:.2f} ms"] + [f"{st[n]['ms']:.1f} ms ({st[n]['relative_to_first']:.2f}×)"
                                             for n in (2, 4, 8, 16, 32, 64)]
        b = "**" if eng == "specscope" else ""
        print(f"| {label if eng == 'specscope' else ''} | {name} | {b}{j['decode_tokens_per_second']:.0f}{b} | "
              + " | ".join(cells) + " |")
