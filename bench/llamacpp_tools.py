#!/usr/bin/env python3
"""llama.cpp's own C++ tools (built by bench/build_llamacpp.sh) run with SpecScope's protocols, their figures
written in the JSON shapes that bench/llamacpp_table.py reads beside `specscope-cli bench` / `run --json`.

    python3 bench/llamacpp_tools.py bench --bin BINDIR MODEL.gguf --threads 2 --repeat 5 --out X.json
    python3 bench/llamacpp_tools.py bench --bin CUDA_BINDIR MODEL.gguf --depth 1024 --step-sizes 1,2,...,128 ...
        (on a GPU: llama-bench's defaults offload every layer and pick flash attention, as a user's run does)
    $TRAINING_VENV/bin/python bench/llamacpp_tools.py speculative --bin BINDIR --cli build/app/specscope-cli \\
        --target-gguf base.bf16.gguf --draft-gguf draft.bf16.gguf --hf-target assets/models/base \\
        --prompts assets/prompts/heldout.jsonl --count 10 --out spec.json

bench: `llama-bench -d 128 -p 1,2,...,64` times the forward of n new tokens at context 128 (pp n @ d128) and
`-n 64 -d 128` 64 one-token decode steps after a 128-token context (tg64 @ d128; --depth sets the context, as
specscope-cli bench's --prompt-tokens does), both after llama-bench's own
warm-up; medians of its samples. The n-token forward runs 3 x --repeat times (specscope-cli bench times 3 per
repeat), decode --repeat times. One difference from specscope-cli bench and bench/llamacpp_bench.py: llama-bench
asks for the logits of the last of the n rows only, where verification (and those two) needs all n; for a
32000-token vocabulary that is (n - 1) x 2 x 32000 x hidden multiply-adds it skips, so its n-token figure is a
lower bound on what llama.cpp spends verifying n tokens. The binding's figure (llamacpp_bench.py) is the like one.

speculative: `llama-speculative` (one draft chain of --gamma tokens, greedy) beside `specscope-cli run --method sps
--gamma G`, on the same prompt text per held-out prompt: the chat template applied by transformers (this script's
only non-stdlib need, hence the training venv) minus the leading BOS, which both engines add themselves. Decode
tokens/s is the sum of new tokens over the sum of decode seconds (prompt encoding excluded in both); acceptance
is accepted / drafted draft tokens in both.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

SIZES = [1, 2, 4, 8, 16, 32, 64]


def die(msg):
    raise SystemExit(f"llamacpp_tools.py: {msg}")


def tool(bindir, name):
    p = os.path.join(bindir, name)
    if not os.access(p, os.X_OK):
        die(f"{p} missing: run bash bench/build_llamacpp.sh first")
    return p


def llama_bench(bin_, model, threads, reps, depth, extra):
    cmd = [bin_, "-m", model, "-t", str(threads), "-r", str(reps), "-d", str(depth), "-o", "json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def bench(a):
    b = tool(a.bin, "llama-bench")
    if not os.path.exists(a.model):
        die(f"{a.model} missing")
    sizes = [int(s) for s in a.step_sizes.split(",")]
    pp = llama_bench(b, a.model, a.threads, 3 * a.repeat, a.depth, ["-p", ",".join(map(str, sizes)), "-n", "0"])
    tg = llama_bench(b, a.model, a.threads, a.repeat, a.depth, ["-p", "0", "-n", str(a.gen_tokens)])
    ms = {t["n_prompt"]: statistics.median(t["samples_ns"]) / 1e6 for t in pp}
    t0 = tg[0]
    if a.require_gpu and not t0.get("gpu_info"):
        # A CUDA build that cannot reach a device still runs, on the CPU, and still says "backends": "CUDA".
        die(f"llama-bench saw no GPU (its gpu_info is empty; backends {t0.get('backends')!r}): "
            "its figures would be the CPU's, so none are written")
    decode = statistics.median(a.gen_tokens / (ns / 1e9) for ns in t0["samples_ns"])
    j = {"engine": "llama.cpp llama-bench", "build_commit": t0.get("build_commit"), "model": a.model,
         "model_type": t0.get("model_type"), "threads": a.threads, "cpu_info": t0.get("cpu_info"),
         "backends": t0.get("backends"), "gpu_info": t0.get("gpu_info"), "n_gpu_layers": t0.get("n_gpu_layers"),
         "flash_attn": t0.get("flash_attn"), "repack": t0.get("repack"),
         "type_k": t0.get("type_k"), "prompt_tokens": a.depth, "gen_tokens": a.gen_tokens, "repeat": a.repeat,
         "decode_tokens_per_second": decode,
         "step_cost": [{"tokens": n, "ms": ms[n], "relative_to_first": ms[n] / ms[sizes[0]]} for n in sizes],
         "note": "n-token forward: logits of the last row only (llama-bench's pp test)",
         "raw": {"pp": pp, "tg": tg}}
    with open(a.out, "w") as f:
        json.dump(j, f, indent=2)
        f.write("\n")
    print(f"decode   {decode:.1f} tok/s (tg{a.gen_tokens} @ d{a.depth}, median of {a.repeat}; "
          f"{t0.get('backends')}, {t0.get('gpu_info') or t0.get('cpu_info')})")
    for s in j["step_cost"]:
        print(f"  n={s['tokens']:<4d} {s['ms']:8.3f} ms  {s['relative_to_first']:5.2f}x")


def speculative(a):
    from transformers import AutoTokenizer  # the training venv's; only for the chat template

    spec = tool(a.bin, "llama-speculative")
    tok = AutoTokenizer.from_pretrained(a.hf_target)
    bos = tok.bos_token or ""
    prompts = [json.loads(l)["prompt"] for l in open(a.prompts) if l.strip()][: a.count]
    env = dict(os.environ, SPECSCOPE_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    ss = {"new_tokens": 0, "decode_seconds": 0.0, "drafted": 0, "accepted": 0, "prompt_tokens": []}
    lc = {"new_tokens": 0, "decode_seconds": 0.0, "drafted": 0, "accepted": 0, "prompt_tokens": []}
    same = 0  # prompts whose greedy texts agree (the shorter a prefix of the longer: the stopping rules differ)
    for i, p in enumerate(prompts):
        text = tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        text = text[len(bos):] if bos and text.startswith(bos) else text
        print(f"[speculative] prompt {i + 1}/{len(prompts)}", file=sys.stderr)
        r = subprocess.run([a.cli, "run", "--model", a.hf_target, "--method", "sps", "--gamma", str(a.gamma),
                            "--prompt", text, "--max-tokens", str(a.max_tokens), "--no-record", "--json"],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            die(f"specscope-cli run failed:\n{r.stderr[-2000:]}")
        ev = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        s = ev[-1]
        ss["new_tokens"] += s["new_tokens"]
        ss["decode_seconds"] += s["decode_seconds"]
        ss["accepted"] += sum(len(e["accepted_path"]) for e in ev if e.get("type") == "step")
        ss["drafted"] += sum(len(e["nodes"]) for e in ev if e.get("type") == "step")
        ss_text = "".join("".join(e["nodes"][k]["text"] for k in e["accepted_path"]) + e["bonus_text"]
                          for e in ev if e.get("type") == "step")
        ss["prompt_tokens"].append(s["prompt_tokens"])
        r = subprocess.run([spec, "-m", a.target_gguf, "-md", a.draft_gguf, "-p", text, "-n", str(a.max_tokens),
                            "--spec-draft-n-max", str(a.gamma), "--spec-draft-n-min", "0", "-np", "1", "--temp", "0",
                            "--seed", "0", "-t", str(a.threads), "-td", str(a.threads), "-c", "512"],
                           capture_output=True, text=True, env=env)
        log = r.stderr + r.stdout
        m = {k: re.search(rx, log) for k, rx in
             (("enc", r"encoded\s+(\d+) tokens"), ("dec", r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds"),
              ("drafted", r"n_drafted\s*=\s*(\d+)"), ("accept", r"n_accept\s*=\s*(\d+)"))}
        if r.returncode != 0 or not all(m.values()):
            die(f"llama-speculative failed or printed no statistics:\n{log[-2000:]}")
        lc["new_tokens"] += int(m["dec"].group(1))
        lc["decode_seconds"] += float(m["dec"].group(2))
        lc["drafted"] += int(m["drafted"].group(1))
        lc["accepted"] += int(m["accept"].group(1))
        lc["prompt_tokens"].append(int(m["enc"].group(1)))
        # Its stdout: the prompt as llama.cpp detokenizes it (with BOS), then the generated text.
        lc_text = r.stdout.split(text, 1)[-1]
        a_, b_ = (x.replace(tok.eos_token or "\0", "").strip() for x in (ss_text, lc_text))
        same += a_.startswith(b_) or b_.startswith(a_)
    out = {"prompts": len(prompts), "prompt_file": a.prompts, "gamma": a.gamma, "max_tokens": a.max_tokens,
           "threads": a.threads, "sampling": "greedy", "target": a.target_gguf, "draft": a.draft_gguf,
           "same_text": same}
    for name, d in (("specscope", ss), ("llamacpp", lc)):
        d["tokens_per_second"] = d["new_tokens"] / d["decode_seconds"]
        d["acceptance"] = d["accepted"] / max(d["drafted"], 1)
        out[name] = d
        print(f"{name:10s} {d['tokens_per_second']:7.1f} tok/s  acceptance {100 * d['acceptance']:.1f}%  "
              f"({d['new_tokens']} tokens, prompts {sum(d['prompt_tokens'])} tokens)")
    print(f"same greedy text on {same} of {len(prompts)} prompts")
    if ss["prompt_tokens"] != lc["prompt_tokens"]:
        print("warning: the engines tokenized the prompts differently", file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("model")
    b.add_argument("--bin", required=True, help="the directory holding llama-bench")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--gen-tokens", type=int, default=64)
    b.add_argument("--depth", type=int, default=128, help="the context before each test (llama-bench -d)")
    b.add_argument("--require-gpu", action="store_true", help="fail unless llama-bench ran on a GPU")
    b.add_argument("--step-sizes", default=",".join(map(str, SIZES)))
    b.add_argument("--out", required=True)
    s = sub.add_parser("speculative")
    s.add_argument("--bin", required=True)
    s.add_argument("--cli", required=True)
    s.add_argument("--target-gguf", required=True)
    s.add_argument("--draft-gguf", required=True)
    s.add_argument("--hf-target", required=True, help="the HF directory SpecScope runs (with its draft in family.json)")
    s.add_argument("--prompts", required=True)
    s.add_argument("--count", type=int, default=10)
    s.add_argument("--gamma", type=int, default=4)
    s.add_argument("--max-tokens", type=int, default=128)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--out", required=True)
    a = ap.parse_args()
    bench(a) if a.cmd == "bench" else speculative(a)


if __name__ == "__main__":
    main()
