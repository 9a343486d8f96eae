#!/usr/bin/env python3
"""Checks an exported base/draft pair on held-out prompts: greedy samples, validation-free agreement numbers.

  python3 training/eval_pair.py --base runs/x/base --draft runs/x/draft [--prompts assets/prompts/heldout.jsonl]

For each prompt the base model writes a greedy continuation (up to --max-new tokens, stopping at <|eot_id|>).
The draft model then reads that continuation teacher-forced; where its argmax equals the base token, a greedy
speculative decoder would accept the draft token. Since a draft's proposals are conditioned on the accepted
prefix, which is the base's own output, these per-position matches decide greedy speculative decoding exactly:
the script replays it with --gamma draft tokens per step and reports the mean tokens per base forward pass.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--draft", default=None)
    ap.add_argument("--prompts", default=os.path.join(os.path.dirname(HERE), "assets", "prompts", "heldout.jsonl"))
    ap.add_argument("--n", type=int, default=48, help="number of prompts")
    ap.add_argument("--max-new", type=int, default=96)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--show", type=int, default=3, help="samples to print")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--json", default=None, help="write the numbers here")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                       (args.device if args.device != "auto" else "cpu"))
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(args.base)
    base = AutoModelForCausalLM.from_pretrained(args.base, dtype=dtype).to(dev).eval()
    draft = AutoModelForCausalLM.from_pretrained(args.draft, dtype=dtype).to(dev).eval() if args.draft else None
    with open(args.prompts, encoding="utf-8") as f:
        prompts = [json.loads(l)["prompt"] for l in f if l.strip()][:args.n]
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    end = tok.convert_tokens_to_ids("<|end_of_text|>")

    # batched greedy generation with left padding
    encs = [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True,
                                    return_dict=True)["input_ids"] for p in prompts]
    L = max(len(e) for e in encs)
    ids = torch.full((len(encs), L), end, dtype=torch.long)
    att = torch.zeros((len(encs), L), dtype=torch.long)
    for i, e in enumerate(encs):
        ids[i, L - len(e):] = torch.tensor(e)
        att[i, L - len(e):] = 1
    ids, att = ids.to(dev), att.to(dev)
    with torch.no_grad():
        out = base.generate(input_ids=ids, attention_mask=att, max_new_tokens=args.max_new, do_sample=False,
                            eos_token_id=[eot, end], pad_token_id=end)
    conts = []
    for i in range(len(encs)):
        c = out[i, L:].tolist()
        if eot in c:
            c = c[:c.index(eot) + 1]
        elif end in c:
            c = c[:c.index(end)]
        conts.append(c)

    res = {"prompts": len(prompts), "base_tokens": sum(len(c) for c in conts)}
    for i in range(min(args.show, len(prompts))):
        print(f"--- prompt: {prompts[i]}\n    base : {tok.decode(conts[i], skip_special_tokens=True)[:400]!r}")

    if draft is not None:
        matches_all = []
        for e, c in zip(encs, conts):
            if not c:
                continue
            seq = torch.tensor([e + c], device=dev)
            with torch.no_grad():
                logits = draft(input_ids=seq).logits[0]
            pred = logits[len(e) - 1:len(e) - 1 + len(c)].argmax(-1).tolist()
            matches_all.append([int(a == b) for a, b in zip(pred, c)])
        tot = sum(len(m) for m in matches_all)
        agree = sum(sum(m) for m in matches_all) / max(tot, 1)
        steps = produced = 0
        for m in matches_all:
            pos = 0
            while pos < len(m):
                j = 0
                while j < args.gamma and pos + j < len(m) and m[pos + j]:
                    j += 1
                produced += min(j + 1, len(m) - pos)
                pos += j + 1
                steps += 1
        res.update({"draft_agreement": agree, "gamma": args.gamma,
                    "tokens_per_base_pass": produced / max(steps, 1)})
        # draft's own greedy sample for the first prompts
        for i in range(min(args.show, len(prompts))):
            with torch.no_grad():
                o = draft.generate(input_ids=torch.tensor([encs[i]], device=dev), max_new_tokens=args.max_new,
                                   do_sample=False, eos_token_id=[eot, end], pad_token_id=end)
            print(f"--- prompt: {prompts[i]}\n    draft: "
                  f"{tok.decode(o[0, len(encs[i]):], skip_special_tokens=True)[:400]!r}")
        print(f"[eval] greedy agreement of draft with base on {len(matches_all)} held-out prompts: {agree:.1%}; "
              f"speculative decoding (greedy, gamma={args.gamma}) would average "
              f"{res['tokens_per_base_pass']:.2f} tokens per base forward pass")
    res["seconds"] = round(time.time() - t0, 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    return res


if __name__ == "__main__":
    main()
