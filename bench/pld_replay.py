#!/usr/bin/env python3
"""Prompt lookup's ceiling on a prompt set, without running it: the greedy output is the same whatever drafts, so
replaying each prompt's vanilla output through the lookup rule gives the exact tau of any draft length, n-gram size
or match rule, and the machine's step-cost curve (`specscope-cli bench --json`) prices each step by the rows it
verifies. Prints tau, the share of steps with no match, and the expected speedup per variant.

    python3 bench/pld_replay.py --bench STEP_COST.json [--prompts assets/prompts/heldout.jsonl] [--n 80]

Needs transformers (the project's venv) for the chat template's token ids; the outputs come from specscope-cli run.
"""
import argparse
import json
import os
import subprocess

import numpy as np
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def greedy_sequences(cli, model, prompts, max_tokens):
    tok = AutoTokenizer.from_pretrained(model)
    out = []
    for p in prompts:
        ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        r = subprocess.run([cli, "run", "--model", model, "--chat", "--prompt", p, "--max-tokens", str(max_tokens),
                            "--json", "--no-record"], capture_output=True, text=True, check=True)
        gen, prompt_len = [], None
        for line in r.stdout.splitlines():
            j = json.loads(line)
            if j.get("type") != "step":
                continue
            if j["step"] == 0:
                prompt_len = j["target_tokens"]
            gen += j["committed"]
        if prompt_len != len(ids):
            raise SystemExit(f"the chat template's ids ({len(ids)}) differ from the engine's prompt ({prompt_len})")
        out.append((list(ids), gen))
    return out


def lookup(t, max_ngram, min_ngram, k, rule):
    """The drafts of one step: 'earliest' (the engine's, Saxena's reference and transformers') or 'latest'."""
    n_tok = len(t)
    for n in range(min(max_ngram, n_tok - 1), min_ngram - 1, -1):
        suffix = t[n_tok - n:]
        starts = range(0, n_tok - n) if rule == "earliest" else range(n_tok - n - 1, -1, -1)
        for s in starts:
            if t[s:s + n] == suffix:
                return t[s + n:s + n + k]
    return []


def replay(seqs, cost, max_ngram=3, min_ngram=1, k=3, rule="earliest"):
    tokens = steps = unmatched = 0
    spent = 0.0
    for prompt, gen in seqs:
        ctx, i = prompt + gen[:1], 1  # the first token comes from the prefill
        while i < len(gen):
            d = lookup(ctx, max_ngram, min_ngram, k, rule)
            a = 0
            while a < len(d) and i + a < len(gen) and d[a] == gen[i + a]:
                a += 1
            adv = min(a + 1, len(gen) - i)
            ctx += gen[i:i + adv]
            i += adv
            tokens, steps, unmatched = tokens + adv, steps + 1, unmatched + (not d)
            spent += cost(len(d) + 1)
    return tokens / steps, unmatched / steps, tokens / spent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="specscope-cli bench --json output (its step_cost curve)")
    ap.add_argument("--prompts", default=os.path.join(ROOT, "assets/prompts/heldout.jsonl"))
    ap.add_argument("--n", type=int, default=80)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--model", default=os.path.join(ROOT, "assets/models/base"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build/app/specscope-cli"))
    args = ap.parse_args()
    curve = json.load(open(args.bench))["step_cost"]
    xs = [c["tokens"] for c in curve]
    ys = [c["relative_to_first"] for c in curve]
    cost = lambda rows: float(np.interp(rows, xs, ys))  # noqa: E731
    prompts = [json.loads(line)["prompt"] for line in open(args.prompts)][:args.n]
    seqs = greedy_sequences(args.cli, args.model, prompts, args.max_tokens)
    print(f"{len(seqs)} prompts; step cost relative to one token: " +
          ", ".join(f"{x}: {y:.2f}" for x, y in zip(xs, ys)))
    print("| rule | max n-gram | drafts | tau | steps with no match | expected speedup |")
    print("|---|---|---|---|---|---|")
    for rule in ("earliest", "latest"):
        for k in (1, 2, 3, 5, 8, 10):
            tau, none, speedup = replay(seqs, cost, k=k, rule=rule)
            print(f"| {rule} | 3 | {k} | {tau:.3f} | {none:.0%} | {speedup:.3f}x |")
    for max_ngram in (1, 2, 4):
        tau, none, speedup = replay(seqs, cost, max_ngram=max_ngram, k=5)
        print(f"| earliest | {max_ngram} | 5 | {tau:.3f} | {none:.0%} | {speedup:.3f}x |")
    # The ceiling: drafts that cost nothing to verify.
    tau, none, speedup = replay(seqs, lambda rows: 1.0, k=10)
    print(f"\nwith verification free (every step costs one token's): tau {tau:.3f} = the speedup's upper bound")


if __name__ == "__main__":
    main()
