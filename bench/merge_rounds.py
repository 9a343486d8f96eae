#!/usr/bin/env python3
"""Merges the JSON files of one engine's interleaved rounds (bench/compare_llamacpp.sh --rounds) into one file of the
same shape: decode tokens/s and each n-token forward's ms become the medians over the rounds, and `rounds` keeps every
round's figures. The engines take turns round by round, so a slow spell of this machine (its speed drifts by up to
30% within minutes) lands on all of them alike instead of on whichever engine it overlapped.

    python3 bench/merge_rounds.py OUT.json ROUND1.json ROUND2.json ...
"""
import json
import statistics
import sys


def main(out, rounds):
    docs = [json.load(open(p)) for p in rounds]
    merged = dict(docs[0])
    merged["decode_tokens_per_second"] = statistics.median(d["decode_tokens_per_second"] for d in docs)
    per_n = {}
    for d in docs:
        for s in d["step_cost"]:
            per_n.setdefault(s["tokens"], []).append(s["ms"])
    first = statistics.median(per_n[min(per_n)])
    merged["step_cost"] = [{"tokens": n, "ms": statistics.median(v), "relative_to_first": statistics.median(v) / first}
                           for n, v in sorted(per_n.items())]
    merged["rounds"] = {"count": len(docs),
                        "decode_tokens_per_second": [d["decode_tokens_per_second"] for d in docs],
                        "step_ms": {str(n): v for n, v in sorted(per_n.items())}}
    with open(out, "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: merge_rounds.py OUT.json ROUND.json...")
    main(sys.argv[1], sys.argv[2:])
