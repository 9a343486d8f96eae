#!/usr/bin/env python3
"""How well tree=auto's calibration windows predict a race's tau, replayed from a recorded race.

  specscope-cli compare --chat --prompt-file P --methods vanilla --lane L1 --lane L2 ... --max-tokens 96 \\
      --session-db race.db
  python3 bench/calibration_windows_replay.py race.db [--prompts 8]

A calibration (runs/tree_tuner.cpp) measures each candidate on windows of 24 tokens of vanilla's answers to a job's
first eight prompts. Greedy speculative decoding commits vanilla's tokens, so a recorded race tells exactly what
tau each window would have read: the mean of accepted + 1 over the race's steps that start inside it. For every
set of consecutive prompts (0-7, 8-15, ...) this prints each placement's tau over the race's tau on the same prompts
and on all of them:
- fixed: prompt i's window at offset (i mod 3) x 24 of an answer of at most 60 tokens (the placement before
  2026-11-30);
- spread: the windows spread evenly over all the answers' tokens (runs::calibration_windows; this script's
  spread() follows it, for the replay only).
"""
import argparse
import json
import sqlite3

WINDOW = 24


def load(db_path):
    db = sqlite3.connect(db_path)
    runs = db.execute("select id, method_json, prompt, prompt_tokens, new_tokens from runs order by id").fetchall()
    prompts, lengths, steps = [], {}, {}
    for rid, method_json, prompt, prompt_tokens, new_tokens in runs:
        if prompt not in prompts:
            prompts.append(prompt)
        i = prompts.index(prompt)
        method = json.loads(method_json)
        lane = method["name"] + "".join(f" {k}={v}" for k, v in sorted(method["options"].items()))
        if method["name"] == "vanilla":
            lengths[i] = new_tokens
        steps[(lane, i)] = [(pos - prompt_tokens, acc) for pos, acc in db.execute(
            "select position, accepted from steps where run_id=? and step>0", (rid,))]
    return prompts, lengths, steps


def fixed(sub, lengths):
    out = []
    for k, i in enumerate(sub):
        offset = max(0, min(k % 3 * WINDOW, min(lengths[i], 60) - WINDOW // 2))
        out.append((i, offset))
    return out


def spread(sub, lengths):
    total = sum(lengths[i] for i in sub)
    starts, c = [], 0
    for i in sub:
        starts.append(c)
        c += lengths[i]
    out = []
    for k in range(len(sub)):
        centre = int((k + 0.5) * total / len(sub))
        j = next(j for j in range(len(sub)) if starts[j] <= centre < starts[j] + lengths[sub[j]])
        i = sub[j]
        out.append((i, max(0, min(centre - starts[j] - WINDOW // 2, lengths[i] - WINDOW))))
    return out


def tau(steps, lane, windows):
    tokens = count = 0
    for i, offset in windows:
        for root, accepted in steps[(lane, i)]:
            if offset <= root < offset + WINDOW - 1:
                tokens += accepted + 1
                count += 1
    return tokens / max(count, 1)


def race_tau(steps, lane, sub):
    pairs = [s for i in sub for s in steps[(lane, i)]]
    return sum(a + 1 for _, a in pairs) / max(len(pairs), 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("--prompts", type=int, default=8, help="prompts a calibration reads (kCalibrationPrompts)")
    args = ap.parse_args()
    prompts, lengths, steps = load(args.db)
    lanes = sorted({lane for lane, _ in steps if lane != "vanilla"})
    n = len(prompts)
    sets = [list(range(s, min(s + args.prompts, n))) for s in range(0, n, args.prompts)]
    for lane in lanes:
        everything = race_tau(steps, lane, range(n))
        print(f"{lane}\n  race tau over all {n} prompts: {everything:.2f}")
        for name, place in (("fixed", fixed), ("spread", spread)):
            same = [tau(steps, lane, place(s, lengths)) / race_tau(steps, lane, s) for s in sets]
            whole = [tau(steps, lane, place(s, lengths)) / everything for s in sets]
            mean = lambda xs: sum(xs) / len(xs)
            print(f"  {name:6s} / the same prompts' race: mean {mean(same):.3f}, {min(same):.2f}-{max(same):.2f}"
                  f" | / all {n}: mean {mean(whole):.3f}, {min(whole):.2f}-{max(whole):.2f}"
                  f" | per set: {' '.join(f'{x:.2f}' for x in same)}")


if __name__ == "__main__":
    main()
