#!/usr/bin/env python3
"""Self-distilled training data: the base model's own answers to the corpus prompts, as the EAGLE authors
regenerate the ShareGPT answers with the target model. Draft heads trained on them see the inputs they will
draft for (the base's own text), not the corpus writers'.

  $PY training/self_distill.py --base assets/models/base --out training/runs/selfdistill --threads 2 --max-minutes 60
  $PY training/train_eagle3.py --base assets/models/base --extra-train training/runs/selfdistill ...

Prompts: every conversation of --prompts (training/data/train.jsonl.gz) up to its last user turn, in an order
permuted by --seed (so a partial run is a uniform sample of the corpus, not its first categories), --samples
answers each (sampled answers need --temperature > 0; greedy answers are all the same).
Generation: continuous batching with a KV cache: up to --batch-size answers in flight, right-aligned in one
cache; rows that stop (<|eot_id|> or <|end_of_text|>) leave the batch and waiting prompts are prefilled into
their slots, so one long answer does not hold a whole batch back. Within a shard, prompts join in length order
(less padding); each shard starts from an empty batch, so shards are independent of each other. An answer that reaches --max-new-tokens without stopping is kept as it is (it is what the
base does; the heads' targets are the base's own distributions anyway) and counted as truncated.

Output (--out): shard-NNNNN.jsonl.gz, one conversation per line in the corpus format ({"messages": [...]}: the
prompt's turns, then the base's answer as the last assistant turn), in prompt order; meta.json (the settings;
a run into an existing folder must use the same ones); progress.jsonl (one line per shard: prompts, tokens,
truncated, seconds). Shard k holds the prompts k*S .. (k+1)*S-1 of the permuted order (S = --shard-size), each
written atomically when complete, so an interrupted run (or one stopped by --max-minutes) resumes by running the
same command again: finished shards are skipped and the output is the same as an uninterrupted run's.
--limit N asks for the first N prompts, rounded up to whole shards.

Deterministic from --seed: the prompt order, and with --temperature > 0 each answer's sampling stream (a
generator per (seed, prompt, sample), so it does not depend on the batch it lands in). Same settings, same
torch build and same --threads give byte-identical shards.
"""
import argparse
import gzip
import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import lm_train  # noqa: E402
from chat_format import EOT, EOT_TEXT, render  # noqa: E402
from lm_train import log  # noqa: E402

SETTINGS = ("base_sha1", "prompts", "n_prompts", "seed", "samples", "temperature", "top_p", "max_new_tokens",
            "shard_size")


# ----------------------------------------------------------------------------------------------- generation
def prompt_of(msgs):
    """The turns up to the conversation's last user turn (the prompt whose answer is regenerated)."""
    last = max(j for j, m in enumerate(msgs) if m["role"] == "user")
    return msgs[:last + 1]


def prompt_ids(tk, msgs):
    return tk.encode(render(msgs, add_generation_prompt=True), add_special_tokens=False).ids


def _pick(logits, temperature, top_p, gens):
    """Next tokens [B] from logits [B, V]: argmax (temperature 0), or a sample per row from its own generator."""
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, -1)
    if top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        drop = sp.cumsum(-1) - sp > top_p  # keep the smallest prefix whose mass reaches top_p
        sp = sp.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, si, sp)
    return torch.cat([torch.multinomial(probs[r].cpu(), 1, generator=g) for r, g in enumerate(gens)]).to(logits.device)


def _left_pad(t, n, dim):
    """t with n zeros prepended along dim."""
    if n <= 0:
        return t
    shape = list(t.shape)
    shape[dim] = n
    return torch.cat([t.new_zeros(shape), t], dim)


class _Rows:
    """The live batch of continuous batching: one row per answer being generated, all right-aligned in one KV
    cache of C columns (row r's tokens fill its last columns; `am` marks them), each at its own position."""

    def __init__(self, model):
        from transformers import DynamicCache

        self.model, self.cache, self.am, self.meta = model, DynamicCache(), None, []
        self.device = next(model.parameters()).device

    def __len__(self):
        return len(self.meta)

    def add(self, prompts, metas):
        """Prefills the prompts (left-padded among themselves) and appends them to the batch.
        -> their next-token logits [n, V]."""
        from transformers import DynamicCache

        L = max(len(p) for p in prompts)
        x = torch.zeros((len(prompts), L), dtype=torch.long)  # the padding is masked out
        am = torch.zeros((len(prompts), L), dtype=torch.long)
        for r, p in enumerate(prompts):
            x[r, L - len(p):] = torch.tensor(p)
            am[r, L - len(p):] = 1
        x, am = x.to(self.device), am.to(self.device)
        cache = DynamicCache()
        out = self.model(input_ids=x, attention_mask=am, position_ids=(am.cumsum(-1) - 1).clamp_min(0),
                         past_key_values=cache, use_cache=True, logits_to_keep=1)
        if self.am is None or not self.meta:
            self.cache, self.am = cache, am
        else:
            C = self.am.shape[1]
            for old, new in zip(self.cache.layers, cache.layers):
                old.keys = torch.cat([_left_pad(old.keys, L - C, 2), _left_pad(new.keys, C - L, 2)], 0)
                old.values = torch.cat([_left_pad(old.values, L - C, 2), _left_pad(new.values, C - L, 2)], 0)
            self.am = torch.cat([_left_pad(self.am, L - C, 1), _left_pad(am, C - L, 1)], 0)
        self.meta.extend(metas)
        return out.logits[:, -1]

    def keep(self, idx):
        """Keeps rows idx (in order) and drops the cache columns no remaining row uses."""
        if len(idx) == len(self.meta):
            return
        self.meta = [self.meta[i] for i in idx]
        if not idx:
            self.am = None
            return
        t = torch.tensor(idx, device=self.device)
        self.am = self.am[t]
        used = self.am.any(0).nonzero()
        j0 = int(used[0]) if len(used) else 0
        self.am = self.am[:, j0:]
        for layer in self.cache.layers:
            layer.keys, layer.values = layer.keys[t, :, j0:], layer.values[t, :, j0:]

    def step(self, tok, positions):
        """Feeds one token per row. -> next-token logits [B, V]."""
        self.am = torch.cat([self.am, self.am.new_ones((len(self.meta), 1))], 1)
        out = self.model(input_ids=tok[:, None], attention_mask=self.am, position_ids=positions[:, None],
                         past_key_values=self.cache, use_cache=True)
        return out.logits[:, -1]


@torch.no_grad()
def generate_stream(model, items, batch, max_new, stop_ids, temperature=0.0, top_p=1.0, refill=None):
    """Continuous batching with a KV cache: up to `batch` answers in flight; when rows stop, waiting prompts are
    prefilled and join the batch (once `refill` slots are free, default batch // 8), so one long answer does not
    hold a whole batch back. items: (key, prompt ids, seed, max new tokens or None) in the order they join.
    Yields (key, answer ids without the stop token, truncated) as answers finish. Sampling draws from a generator
    per item (its seed), so an answer does not depend on the rows beside it (up to float rounding)."""
    refill = refill or max(1, batch // 8)
    stop = set(stop_ids)
    pending = list(reversed(items))
    rows = _Rows(model)
    logits = None
    while pending or len(rows):
        free = batch - len(rows)
        if pending and (free >= refill or not len(rows)):
            new = [pending.pop() for _ in range(min(free, len(pending)))]
            metas = [{"key": k, "ids": [], "pos": len(p), "max": min(max_new, m or max_new),
                      "gen": torch.Generator().manual_seed(int(sd)) if temperature > 0 else None}
                     for k, p, sd, m in new]
            lg = rows.add([p for _, p, _, _ in new], metas)
            logits = lg if logits is None else torch.cat([logits, lg], 0)
        tok = _pick(logits, temperature, top_p, [m["gen"] for m in rows.meta])
        keep = []
        for i, (v, m) in enumerate(zip(tok.tolist(), rows.meta)):
            if v in stop:
                yield m["key"], m["ids"], False
                continue
            m["ids"].append(v)
            if len(m["ids"]) >= m["max"]:
                yield m["key"], m["ids"], True
            else:
                keep.append(i)
        rows.keep(keep)
        if not keep:
            logits = None
            continue
        tok = tok[torch.tensor(keep, device=tok.device)] if len(keep) < len(tok) else tok
        pos = torch.tensor([m["pos"] for m in rows.meta], device=tok.device)
        for m in rows.meta:
            m["pos"] += 1
        logits = rows.step(tok, pos)


def generate(model, prompts, max_new, stop_ids, temperature=0.0, top_p=1.0, seeds=None, batch=None):
    """generate_stream() over a list of prompts. -> (answers: id lists without the stop token, truncated: bools),
    in prompt order."""
    seeds = seeds if seeds is not None else [0] * len(prompts)
    answers, truncated = [None] * len(prompts), [False] * len(prompts)
    items = [(i, p, sd, None) for i, (p, sd) in enumerate(zip(prompts, seeds))]
    for k, ids, tr in generate_stream(model, items, batch or len(prompts), max_new, stop_ids, temperature, top_p):
        answers[k], truncated[k] = ids, tr
    return answers, truncated


def stop_ids(tk):
    return [tk.token_to_id(EOT), tk.token_to_id(EOT_TEXT)]


def answer_text(tk, ids):
    return tk.decode(ids, skip_special_tokens=True).strip()


def sample_seed(seed, prompt_index, sample):
    return int(np.random.SeedSequence([seed, prompt_index, sample]).generate_state(1, np.uint64)[0] >> 1)


# ----------------------------------------------------------------------------------------------- the command
def sha1_file(path):
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def base_sha1(base_dir):
    h = hashlib.sha1()
    for f in sorted(os.listdir(base_dir)):
        if f.endswith(".safetensors") or f in ("config.json", "tokenizer.json"):
            h.update(f.encode())
            h.update(sha1_file(os.path.join(base_dir, f)).encode())
    return h.hexdigest()


def shard_path(out, k):
    return os.path.join(out, f"shard-{k:05d}.jsonl.gz")


def write_shard(path, convs):
    tmp = path + ".tmp"
    with gzip.GzipFile(tmp, "wb", mtime=0) as g:  # mtime 0: byte-identical reruns
        for c in convs:
            g.write((json.dumps({"messages": c}, ensure_ascii=False) + "\n").encode("utf-8"))
    os.replace(tmp, path)


class Progress:
    """A tqdm bar on a terminal, else a line every --log-seconds: prompts, tokens, tok/s, ETA."""

    def __init__(self, mode, total, done, every):
        self.total, self.done, self.every = total, done, every
        self.t0, self.tokens, self.new = time.time(), 0, 0
        self.last = self.t0
        self.bar = None
        if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=done, unit="prompt", dynamic_ncols=True, desc="self-distill")

    def update(self, prompts, tokens, force=False):
        self.done += prompts
        self.new += prompts
        self.tokens += tokens
        dt = max(time.time() - self.t0, 1e-9)
        tps = self.tokens / dt
        eta = (self.total - self.done) * dt / max(self.new, 1)
        if self.bar is not None:
            self.bar.update(prompts)
            self.bar.set_postfix_str(f"{tps:.0f} tok/s")
        elif force or time.time() - self.last >= self.every:
            log(f"self-distill: {self.done}/{self.total} prompts ({self.done / max(self.total, 1):.1%}), "
                f"{self.tokens} tokens this run, {tps:.0f} tok/s, ETA {eta / 60:.1f} min")
            self.last = time.time()
        return tps

    def close(self):
        if self.bar is not None:
            self.bar.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the exported base model")
    ap.add_argument("--tokenizer", default=None, help="tokenizer folder (default: --base)")
    ap.add_argument("--prompts", default=os.path.join(HERE, "data", "train.jsonl.gz"),
                    help="conversations whose last answer is regenerated (corpus format)")
    ap.add_argument("--out", required=True, help="output folder (shards, meta.json, progress.jsonl)")
    ap.add_argument("--seed", type=int, default=1234, help="prompt order and sampling streams")
    ap.add_argument("--samples", type=int, default=1, help="answers per prompt (> 1 needs --temperature > 0)")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=128, help="answers in flight (continuous batching)")
    ap.add_argument("--shard-size", type=int, default=2048, help="prompts per shard (the unit of resuming)")
    ap.add_argument("--limit", type=int, default=0, help="first N prompts of the permuted order (whole shards)")
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop after the batch that passes this")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument("--dtype", choices=["auto", "float32", "bfloat16"], default="auto",
                    help="base weights (auto: f32 on the CPU, bf16 on CUDA)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: torch's default)")
    ap.add_argument("--progress", choices=["auto", "bar", "lines"], default="auto")
    ap.add_argument("--log-seconds", type=float, default=30.0, help="seconds between progress lines")
    args = ap.parse_args(argv)
    t_start = time.time()
    if args.samples > 1 and args.temperature <= 0:
        raise SystemExit("--samples > 1 needs --temperature > 0 (greedy answers are all the same)")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    dtype = None if args.dtype == "auto" else getattr(torch, args.dtype)
    tok_dir = args.tokenizer or args.base

    from tokenizers import Tokenizer

    import heads
    tk = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    convs = lm_train.load_conversations(args.prompts)
    order = np.random.default_rng(args.seed).permutation(len(convs))
    S = args.shard_size
    n_prompts = len(convs) if not args.limit else min(len(convs), -(-args.limit // S) * S)
    n_shards = -(-n_prompts // S)
    meta = {"base": os.path.abspath(args.base), "base_sha1": base_sha1(args.base),
            "prompts": os.path.abspath(args.prompts), "n_prompts": len(convs), "seed": args.seed,
            "samples": args.samples, "temperature": args.temperature, "top_p": args.top_p,
            "max_new_tokens": args.max_new_tokens, "shard_size": S, "format": "corpus jsonl.gz ({'messages': [...]})"}
    os.makedirs(args.out, exist_ok=True)
    meta_path = os.path.join(args.out, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            old = json.load(f)
        diff = [k for k in SETTINGS if old.get(k) != meta[k]]
        if diff:
            raise SystemExit(f"{args.out} was generated with other settings ({', '.join(diff)}); use a new --out")
    else:
        heads.write_json(meta_path, meta)
    todo = [k for k in range(n_shards) if not os.path.exists(shard_path(args.out, k))]
    log(f"self-distill: {len(convs)} prompts in {args.prompts}; {n_prompts} asked for in {n_shards} shards of {S}, "
        f"{n_shards - len(todo)} done; {args.samples} answer(s) each, "
        f"{'greedy' if args.temperature <= 0 else f'temperature {args.temperature}, top-p {args.top_p}'}, "
        f"<= {args.max_new_tokens} new tokens, batch {args.batch_size}, device {device}, "
        f"{torch.get_num_threads()} threads")
    if not todo:
        return {"out": args.out, "shards": n_shards, "generated_shards": 0, "tokens": 0, "tokens_per_s": 0.0}

    base = heads.Base(args.base, device, dtype)
    maxpos = base.config.max_position_embeddings
    stops = stop_ids(tk)
    done_prompts = (n_shards - len(todo)) * S * args.samples
    prog = Progress(args.progress, n_prompts * args.samples, min(done_prompts, n_prompts * args.samples),
                    args.log_seconds)
    total_tokens, stopped, shards_written = 0, False, 0
    with open(os.path.join(args.out, "progress.jsonl"), "a") as plog:
        for k in todo:
            t_shard = time.time()
            idxs = [int(i) for i in order[k * S:min((k + 1) * S, n_prompts)]]
            items = []  # (prompt index, sample, prompt messages, ids)
            skipped = 0
            for i in idxs:
                msgs = prompt_of(convs[i])
                ids = prompt_ids(tk, msgs)
                if len(ids) > maxpos - 16:
                    skipped += 1
                    continue
                items.extend((i, s, msgs, ids) for s in range(args.samples))
            by_len = sorted(range(len(items)), key=lambda j: (len(items[j][3]), j))
            stream = generate_stream(base.model, [(j, items[j][3], sample_seed(args.seed, items[j][0], items[j][1]),
                                                   maxpos - len(items[j][3])) for j in by_len],
                                     args.batch_size, args.max_new_tokens, stops, args.temperature, args.top_p)
            answers = [None] * len(items)
            shard_tokens, shard_trunc = 0, 0
            for j, a, tr in stream:
                answers[j] = answer_text(tk, a)
                shard_tokens += len(a)
                shard_trunc += int(tr)
                total_tokens += len(a)
                prog.update(1, len(a))
                if args.max_minutes and time.time() - t_start >= args.max_minutes * 60:
                    stopped = True
                    break
            if stopped:
                log(f"self-distill: time budget reached; shard {k} is left for the next run")
                break
            out = [items[j][2] + [{"role": "assistant", "content": answers[j]}] for j in range(len(items))
                   if answers[j]]
            write_shard(shard_path(args.out, k), out)
            shards_written += 1
            plog.write(json.dumps({"shard": k, "prompts": len(idxs), "skipped": skipped, "conversations": len(out),
                                   "tokens": shard_tokens, "truncated": shard_trunc,
                                   "seconds": round(time.time() - t_shard, 1)}) + "\n")
            plog.flush()
    prog.update(0, 0, force=True)
    prog.close()
    dt = time.time() - t_start
    left = sum(not os.path.exists(shard_path(args.out, k)) for k in range(n_shards))
    log(f"self-distill: wrote {shards_written} shards ({total_tokens} tokens, {total_tokens / max(dt, 1e-9):.0f} "
        f"tok/s over {dt / 60:.1f} min); {n_shards - left}/{n_shards} shards in {args.out}"
        + ("; run the same command again to go on" if left else ""))
    return {"out": args.out, "shards": n_shards - left, "generated_shards": shards_written, "tokens": total_tokens,
            "tokens_per_s": total_tokens / max(dt, 1e-9), "complete": not left}


if __name__ == "__main__":
    main()
