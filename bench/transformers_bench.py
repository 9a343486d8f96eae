#!/usr/bin/env python3
"""What a user would pick instead of SpecScope on a GPU (issue 23): Hugging Face transformers' `generate` with a
static KV cache, greedy, batch 1, on the same model directory `specscope-cli bench` reads, in the same dtype.
The protocol mirrors `specscope-cli bench`: a prompt of --prompt-tokens ids, then --gen-tokens new tokens;
decode tokens/s = gen_tokens / (time of a (1 + gen_tokens)-token generate - time of a 1-token generate), medians
of --repeat runs after one untimed warm-up. Writes JSON.

    python3 bench/transformers_bench.py MODEL_DIR [--dtype bf16] [--prompt-tokens 128] [--gen-tokens 64]
                                        [--repeat 5] [--compile] [--out FILE]

Without a CUDA device it prints "no device" and exits 3 (gpu-check.sh records that and goes on).
"""
import argparse
import json
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--compile", action="store_true", help="torch.compile the forward (the static cache's point)")
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("transformers_bench.py: no device (torch sees no CUDA device)", file=sys.stderr)
        return 3
    from transformers import AutoModelForCausalLM
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    # The keyword is `dtype` from transformers 4.56 on (`torch_dtype` deprecated), `torch_dtype` before: an older
    # release would keep an unknown `dtype` as a config attribute and load f32 silently, hence the check after.
    import transformers
    major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
    key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(a.model, device_map="cuda", **{key: dtype})
    if model.dtype != dtype:
        model = model.to(dtype)
    model.eval()
    if a.compile:
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    V = model.config.vocab_size
    # The same ids as specscope-cli bench's (runs::benchmark_tokens in runs/step_cost.cpp).
    ids = torch.tensor([[((1000003 * (i + 1)) % max(V - 300, 1) + 256) % V for i in range(a.prompt_tokens)]],
                       device="cuda")

    def timed(new_tokens):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                 cache_implementation="static", pad_token_id=0)
        torch.cuda.synchronize()
        assert out.shape[1] == a.prompt_tokens + new_tokens
        return time.perf_counter() - t0

    timed(1 + a.gen_tokens)  # warm-up (and compilation)
    one, full = [], []
    for _ in range(a.repeat):
        one.append(timed(1))
        full.append(timed(1 + a.gen_tokens))
    decode_s = statistics.median(full) - statistics.median(one)
    params = sum(p.numel() for p in model.parameters())
    result = {"engine": "transformers", "transformers": transformers.__version__,
              "torch": torch.__version__, "device": torch.cuda.get_device_name(0), "model": a.model,
              "dtype": a.dtype, "loaded_dtype": str(model.dtype), "parameters": params, "compiled": a.compile,
              "cache": "static",
              "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens, "repeat": a.repeat,
              "prefill_plus_one_seconds": statistics.median(one), "decode_tokens_per_second": a.gen_tokens / decode_s,
              "command": " ".join(sys.argv)}
    text = json.dumps(result, indent=2)
    if a.out:
        open(a.out, "w").write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
