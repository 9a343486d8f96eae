#!/usr/bin/env python3
"""llama.cpp on the same weights and the same protocol as `specscope-cli bench`: the comparison issue 2 asks for
(decode tokens/s, prefill tokens/s, and the cost of one forward with n new tokens at context 128), and the
quantizer that writes the Q4_K/Q5_0/... files SpecScope must read (llama.cpp's own, so nobody here wrote it).

llama.cpp comes from PyPI (llama-cpp-python vendors llama.cpp and builds it on install, ~15 minutes on 2 cores):

    python3 -m venv ~/.cache/specscope/llamacpp-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DGGML_OPENMP=ON" \\
        ~/.cache/specscope/llamacpp-venv/bin/pip install llama-cpp-python==0.3.36 numpy==2.4.6
    PY=~/.cache/specscope/llamacpp-venv/bin/python

    $PY bench/llamacpp_bench.py quantize IN.gguf OUT.gguf q4_k_s     # f16, bf16, q8_0, q4_0, q4_k_s, q4_k_m, ...
    $PY bench/llamacpp_bench.py bench MODEL.gguf --threads 2 --repeat 5 --out bench/results/x.json
    $PY bench/llamacpp_bench.py logits MODEL.gguf --tokens 1,2,3 --out logits.npy   # for test fixtures

The bench protocol mirrors app/cli/cmd_bench.cpp exactly: the same deterministic prompt ids, a 128-token prefill
(logits of the last row), then for each n the forward of n new tokens with logits for all n rows (as verification
needs), run 4 times back to back with the first untimed and the KV cache cut back to the prompt after each, then
64 greedy one-token decode steps. Medians over --repeat runs. Nothing is downloaded.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import llama_cpp as L
import numpy as np

FTYPES = {
    "f32": L.LLAMA_FTYPE_ALL_F32, "f16": L.LLAMA_FTYPE_MOSTLY_F16, "bf16": L.LLAMA_FTYPE_MOSTLY_BF16,
    "q8_0": L.LLAMA_FTYPE_MOSTLY_Q8_0, "q4_0": L.LLAMA_FTYPE_MOSTLY_Q4_0, "q4_1": L.LLAMA_FTYPE_MOSTLY_Q4_1,
    "q5_0": L.LLAMA_FTYPE_MOSTLY_Q5_0, "q5_1": L.LLAMA_FTYPE_MOSTLY_Q5_1, "q4_k_s": L.LLAMA_FTYPE_MOSTLY_Q4_K_S,
    "q4_k_m": L.LLAMA_FTYPE_MOSTLY_Q4_K_M, "q5_k_m": L.LLAMA_FTYPE_MOSTLY_Q5_K_M, "q6_k": L.LLAMA_FTYPE_MOSTLY_Q6_K,
}


def quantize(src, dst, kind, threads):
    p = L.llama_model_quantize_default_params()
    p.ftype = FTYPES[kind]
    p.nthread = threads
    rc = L.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize failed ({rc})")
    print(f"wrote {dst} ({kind}, {os.path.getsize(dst) / 1e6:.1f} MB)")


class Runner:
    def __init__(self, path, threads, n_ctx, repack=True):
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        # repack=False: the weights stay as the file has them (no AMX or interleaved copies), as llama-bench --repack 0.
        mp.use_extra_bufts = repack
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise SystemExit(f"{path}: llama.cpp could not load it")
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_ctx
        cp.n_ubatch = n_ctx
        cp.n_threads = threads
        cp.n_threads_batch = threads
        self.ctx = L.llama_init_from_model(self.model, cp)
        self.mem = L.llama_get_memory(self.ctx)
        self.V = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
        self.batch = L.llama_batch_init(n_ctx, 0, 1)

    def forward(self, tokens, pos0, all_logits):
        b = self.batch
        b.n_tokens = len(tokens)
        for i, t in enumerate(tokens):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if (all_logits or i == len(tokens) - 1) else 0
        if L.llama_decode(self.ctx, b) != 0:
            raise SystemExit("llama_decode failed")
        L.llama_synchronize(self.ctx)

    def argmax_last(self, n):
        row = L.llama_get_logits_ith(self.ctx, n - 1)
        return int(np.ctypeslib.as_array(row, shape=(self.V,)).argmax())

    def cut(self, n_keep):
        L.llama_memory_seq_rm(self.mem, 0, n_keep, -1)


def bench(a):
    sizes = [int(s) for s in a.step_sizes.split(",")]
    r = Runner(a.model, a.threads, a.prompt_tokens + max(a.gen_tokens, max(sizes)) + 8, repack=not a.no_repack)
    V = r.V
    prompt = [int((1000003 * (i + 1)) % max(V - 300, 1) + 256) for i in range(a.prompt_tokens)]
    prefill, decode, steps = [], [], {n: [] for n in sizes}
    for rep in range(a.repeat):
        print(f"[llamacpp-bench] run {rep + 1}/{a.repeat}", file=sys.stderr)
        L.llama_memory_clear(r.mem, True)
        t0 = time.perf_counter()
        r.forward(prompt, 0, False)
        prefill.append(a.prompt_tokens / (time.perf_counter() - t0))
        for n in sizes:
            for it in range(4):
                s0 = time.perf_counter()
                r.forward(prompt[:n], a.prompt_tokens, True)
                if it > 0:
                    steps[n].append((time.perf_counter() - s0) * 1e3)
                r.cut(a.prompt_tokens)
        tok = prompt[0]
        pos = a.prompt_tokens
        d0 = time.perf_counter()
        for g in range(a.gen_tokens):
            r.forward([tok], pos, False)
            pos += 1
            tok = r.argmax_last(1)
        decode.append(a.gen_tokens / (time.perf_counter() - d0))
    one = statistics.median(steps[sizes[0]])
    j = {"engine": "llama.cpp", "llama_cpp_python": L.__version__, "model": a.model, "threads": a.threads,
         "system_info": L.llama_print_system_info().decode().strip(), "prompt_tokens": a.prompt_tokens,
         "gen_tokens": a.gen_tokens, "repeat": a.repeat, "repack": not a.no_repack,
         "prefill_tokens_per_second": statistics.median(prefill),
         "decode_tokens_per_second": statistics.median(decode),
         "step_cost": [{"tokens": n, "ms": statistics.median(steps[n]),
                        "relative_to_first": statistics.median(steps[n]) / one} for n in sizes]}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(j, f, indent=2)
            f.write("\n")
    print(f"model    {a.model} (llama.cpp, {a.threads} threads)")
    print(f"prefill  {j['prefill_tokens_per_second']:.1f} tok/s ({a.prompt_tokens} tokens, median of {a.repeat})")
    print(f"decode   {j['decode_tokens_per_second']:.1f} tok/s ({a.gen_tokens} tokens, median of {a.repeat})")
    print(f"step cost with n new tokens (context {a.prompt_tokens}):")
    for s in j["step_cost"]:
        print(f"  n={s['tokens']:<4d} {s['ms']:8.3f} ms  {s['relative_to_first']:5.2f}x")


def logits(a):
    """llama.cpp's logits for every row of one causal forward of --tokens (f32 .npy, [T, V]) for fixtures."""
    toks = [int(t) for t in a.tokens.split(",")]
    r = Runner(a.model, a.threads, len(toks) + 8)
    r.forward(toks, 0, True)
    out = np.stack([np.ctypeslib.as_array(L.llama_get_logits_ith(r.ctx, i), shape=(r.V,)).copy()
                    for i in range(len(toks))])
    np.save(a.out, out.astype(np.float32))
    print(f"wrote {a.out}: {out.shape}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quantize", help="llama.cpp's quantizer: IN.gguf -> OUT.gguf of TYPE")
    q.add_argument("src")
    q.add_argument("dst")
    q.add_argument("type", choices=sorted(FTYPES))
    q.add_argument("--threads", type=int, default=2)
    b = sub.add_parser("bench", help="the specscope-cli bench protocol on llama.cpp")
    b.add_argument("model")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--prompt-tokens", type=int, default=128)
    b.add_argument("--gen-tokens", type=int, default=64)
    b.add_argument("--step-sizes", default="1,2,4,8,16,32,64")
    b.add_argument("--no-repack", action="store_true",
                   help="keep the weights as the file has them (no AMX or interleaved copies), as llama-bench --repack 0")
    b.add_argument("--out")
    g = sub.add_parser("logits", help="llama.cpp's logits of one causal forward, every row, to a .npy file")
    g.add_argument("model")
    g.add_argument("--tokens", required=True, help="comma-separated token ids")
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "quantize":
        quantize(a.src, a.dst, a.type, a.threads)
    elif a.cmd == "logits":
        logits(a)
    else:
        bench(a)


if __name__ == "__main__":
    main()
