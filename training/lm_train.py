"""The training loop shared by train_base.py and train_draft.py.

Data: conversations from training/data/{train,validation}.jsonl.gz are rendered with the chat template,
tokenized once (cached in the work folder) and packed greedily into rows of context+1 tokens: whole
conversations, never split, each row padded at the end; a conversation longer than the context is cut.
Rows are re-packed in a new order every epoch (seeded by seed and epoch, so a resumed run sees the same data).

Loss: by default only on assistant tokens (each assistant turn's content and the <|eot_id|> that closes it;
`--loss-on all` trains on every real token). The model always sees the whole conversation; the user turns
are the conditioning, and the assistant text is what SpecScope's decoders generate and what the held-out
prompts measure.

Limits: --max-steps, --max-epochs (passes over the packed training rows) and --max-minutes (wall-clock time
from the start of the script, tokenization and torch.compile included); the first one reached ends the run.
The learning-rate schedule (linear warm-up, cosine decay to --min-lr-ratio) runs on
progress = max(step / max_steps, epochs / max_epochs, loop time / budget left when the loop started), so
whichever limit ends the run, it ends annealed.
After the budget: final evaluation, checkpoint, export (bounded: a few seconds for these sizes).
"""
import argparse
import gzip
import json
import math
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

T_START = time.time()
_RUNS = []


def log(msg):
    print(f"[{time.time() - T_START:7.1f}s] {msg}", flush=True)


# ----------------------------------------------------------------------------------------------- arguments
def add_resume_args(ap):
    """--resume and --restart-schedule, the same for the LM recipes and the head recipes (heads.py)."""
    ap.add_argument("--resume", default=None, help="checkpoint file, or 'auto' for WORK/checkpoint.pt")
    ap.add_argument("--restart-schedule", action="store_true",
                    help="with --resume: keep the weights, optimizer moments and data position but start a new "
                         "learning-rate cycle (warm restart: progress 0, --max-minutes/--max-steps counted from here)")


def add_precision_args(ap):
    """--autocast, the same for the LM recipes and the head recipes (heads.py)."""
    ap.add_argument("--autocast", choices=["auto", "bf16", "off"], default="auto",
                    help="run forwards and backwards under bf16 autocast (float32 master weights and optimizer "
                         "either way); auto: on for CUDA, and on a CPU with AMX-BF16 tiles, where oneDNN's bf16 "
                         "matmuls are ~9x its float32 ones (a base step 2.5x faster); off: float32 on a CPU")


def cpu_has_amx_bf16():
    """Whether this CPU multiplies bf16 in AMX tiles (Linux's amx_bf16 flag; False where /proc is not Linux's)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return "amx_bf16" in line.split()
    except OSError:
        pass
    return False


def autocast_for(device, mode):
    """-> (a no-argument factory of the context a forward runs in, its name for the log): bf16 autocast or
    float32, per --autocast."""
    import contextlib

    import torch

    on = mode == "bf16" or (mode == "auto" and (device.type == "cuda" or cpu_has_amx_bf16()))
    if not on:
        return contextlib.nullcontext, "float32"
    return (lambda: torch.autocast(device.type, dtype=torch.bfloat16)), "bf16 autocast"


def add_common_args(ap, defaults):
    d = defaults
    ap.add_argument("--data", default=os.path.join(HERE, "data"), help="corpus folder (train/validation.jsonl.gz)")
    ap.add_argument("--tokenizer", required=True, help="folder with tokenizer.json + tokenizer_config.json")
    ap.add_argument("--out", required=True, help="export folder (the Hugging Face model)")
    ap.add_argument("--work", default=None, help="checkpoints and training log (default: OUT.work)")
    ap.add_argument("--cache", default=None, help="tokenized-corpus cache, shareable between runs (default: WORK)")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument("--seed", type=int, default=1234)
    # model
    ap.add_argument("--hidden", type=int, default=d["hidden"])
    ap.add_argument("--layers", type=int, default=d["layers"])
    ap.add_argument("--heads", type=int, default=d["heads"])
    ap.add_argument("--kv-heads", type=int, default=d["kv_heads"])
    ap.add_argument("--intermediate", type=int, default=d["intermediate"])
    ap.add_argument("--context", type=int, default=d["context"])
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--no-tie", action="store_true", help="separate lm_head (default: tied embeddings)")
    # optimisation
    ap.add_argument("--batch-size", type=int, default=d["batch_size"], help="rows of CONTEXT tokens per step")
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--lr", type=float, default=d["lr"])
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=d["warmup"])
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--loss-on", choices=["assistant", "all"], default="assistant")
    # limits
    ap.add_argument("--max-steps", type=int, default=0, help="0: no step limit (then --max-minutes must be set)")
    ap.add_argument("--max-minutes", type=float, default=0.0, help="wall-clock budget; 0: none")
    ap.add_argument("--max-epochs", type=float, default=0.0, help="passes over the training rows; 0: none")
    ap.add_argument("--max-train-convs", type=int, default=0, help="use only N training conversations (tests)")
    ap.add_argument("--max-val-convs", type=int, default=2000)
    # evaluation, checkpoints, export
    ap.add_argument("--eval-every", type=int, default=d["eval_every"], help="steps between validation runs")
    ap.add_argument("--eval-rows", type=int, default=64, help="validation rows per periodic evaluation")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--ckpt-every", type=int, default=500, help="steps between checkpoints (0: only at the end)")
    add_resume_args(ap)
    add_precision_args(ap)
    ap.add_argument("--init-from", default=None, metavar="MODEL_DIR",
                    help="start from an exported model's weights instead of random ones (every tensor whose name and "
                         "shape match; layers beyond --layers are dropped, so a deep model can seed a shallower one)")
    ap.add_argument("--export-dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    ap.add_argument("--max-shard-size", default="15MB")
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto",
                    help="torch.compile the model (auto: on for CUDA)")
    ap.add_argument("--progress", choices=["auto", "bar", "lines"], default="auto",
                    help="tqdm bar on a terminal, plain lines otherwise")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: torch's default)")


# ----------------------------------------------------------------------------------------------- data
def load_conversations(path, limit=0):
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["messages"])
            if limit and len(out) >= limit:
                break
    return out


def tokenize_split(tok_dir, data_dir, split, limit, cache_dir, loss_on):
    """-> list of (ids int32 array, loss-mask bool array) per conversation, cached as .npz."""
    import numpy as np
    from tokenizers import Tokenizer

    from chat_format import render_with_spans

    tok_path = os.path.join(tok_dir, "tokenizer.json")
    import hashlib
    h = hashlib.sha1()
    with open(tok_path, "rb") as f:
        h.update(f.read())
    src = os.path.join(data_dir, f"{split}.jsonl.gz")
    st = os.stat(src)
    h.update(f"{split}:{limit}:{loss_on}:{st.st_size}:{int(st.st_mtime)}".encode())
    cache = os.path.join(cache_dir, f"tokens-{split}-{h.hexdigest()[:12]}.npz")
    if os.path.exists(cache):
        z = np.load(cache)
        ids, mask, offs = z["ids"], z["mask"], z["offsets"]
        return [(ids[offs[i]:offs[i + 1]], mask[offs[i]:offs[i + 1]]) for i in range(len(offs) - 1)]

    convs = load_conversations(src, limit)
    tok = Tokenizer.from_file(tok_path)
    texts, spans = [], []
    for msgs in convs:
        t, s = render_with_spans(msgs)
        texts.append(t)
        spans.append(s)
    out = []
    B = 4096
    for i in range(0, len(texts), B):
        encs = tok.encode_batch(texts[i:i + B], add_special_tokens=False)
        for enc, sp in zip(encs, spans[i:i + B]):
            ids = np.asarray(enc.ids, dtype=np.int32)
            if loss_on == "all":
                m = np.ones(len(ids), dtype=bool)
            else:
                starts = np.fromiter((o[0] for o in enc.offsets), dtype=np.int64, count=len(ids))
                m = np.zeros(len(ids), dtype=bool)
                for a, b in sp:
                    m |= (starts >= a) & (starts < b)
            out.append((ids, m))
    os.makedirs(cache_dir, exist_ok=True)
    offs = np.zeros(len(out) + 1, dtype=np.int64)
    offs[1:] = np.cumsum([len(x[0]) for x in out])
    tmp = cache + ".tmp.npz"
    np.savez(tmp, ids=np.concatenate([x[0] for x in out]) if out else np.zeros(0, np.int32),
             mask=np.concatenate([x[1] for x in out]) if out else np.zeros(0, bool), offsets=offs)
    os.replace(tmp, cache)
    return out


def pack(convs, row_len, pad_id, order):
    """Greedy packing of whole conversations into rows of row_len tokens.
    -> tokens (R, row_len) int64, targets-mask (R, row_len) bool (mask[i, j]: token j is a loss target)."""
    import numpy as np

    rows_t, rows_m = [], []
    cur_t, cur_m, used = [], [], 0
    for i in order:
        ids, m = convs[i]
        if len(ids) > row_len:
            ids, m = ids[:row_len], m[:row_len]
        if used + len(ids) > row_len:
            rows_t.append(cur_t)
            rows_m.append(cur_m)
            cur_t, cur_m, used = [], [], 0
        cur_t.append(ids)
        cur_m.append(m)
        used += len(ids)
    if cur_t:
        rows_t.append(cur_t)
        rows_m.append(cur_m)
    R = len(rows_t)
    T = np.full((R, row_len), pad_id, dtype=np.int64)
    M = np.zeros((R, row_len), dtype=bool)
    for r in range(R):
        t = np.concatenate(rows_t[r])
        m = np.concatenate(rows_m[r])
        T[r, :len(t)] = t
        M[r, :len(m)] = m
    return T, M


class Batches:
    """Epoch-wise packed rows on the training device; deterministic given (seed, epoch, position)."""

    def __init__(self, convs, row_len, pad_id, batch_size, seed, device):
        import numpy as np
        import torch

        self.convs, self.row_len, self.pad_id, self.bs = convs, row_len, pad_id, batch_size
        self.seed, self.device = seed, device
        self.np, self.torch = np, torch
        self.epoch, self.pos = 0, 0
        self._load_epoch()

    def _load_epoch(self):
        np, torch = self.np, self.torch
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self.convs))
        T, M = pack(self.convs, self.row_len, self.pad_id, order)
        perm = rng.permutation(len(T))
        self.T = torch.from_numpy(T[perm]).to(self.device)
        self.M = torch.from_numpy(M[perm]).to(self.device)
        self.rows = len(T)
        self.tokens_per_epoch = int(sum(len(c[0]) for c in self.convs))

    def state(self):
        return {"epoch": self.epoch, "pos": self.pos}

    def restore(self, st):
        self.epoch, self.pos = st["epoch"], st["pos"]
        self._load_epoch()

    def next(self):
        if self.pos + self.bs > self.rows:
            self.epoch += 1
            self.pos = 0
            self._load_epoch()
        sl = slice(self.pos, self.pos + self.bs)
        self.pos += self.bs
        return self.T[sl], self.M[sl]


def split_xy(T, M):
    """inputs = T[:, :-1]; labels = T[:, 1:] with -100 where no loss."""
    x = T[:, :-1]
    y = T[:, 1:].clone()
    y[~M[:, 1:]] = -100
    return x, y


# ----------------------------------------------------------------------------------------------- model
def make_config(args, vocab_size, ids):
    from transformers import LlamaConfig

    if args.hidden % args.heads or args.heads % args.kv_heads:
        raise SystemExit("--hidden must be a multiple of --heads, and --heads a multiple of --kv-heads")
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads,
        max_position_embeddings=args.context,
        rms_norm_eps=1e-5,
        rope_theta=args.rope_theta,
        tie_word_embeddings=not args.no_tie,
        attention_dropout=args.dropout,
        bos_token_id=ids["bos"],
        eos_token_id=[ids["eot"], ids["end_of_text"]],
        pad_token_id=ids["end_of_text"],
        hidden_act="silu",
        attention_bias=False,
        mlp_bias=False,
        use_cache=True,
    )


def param_count(model):
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


# ----------------------------------------------------------------------------------------------- schedule
class RunLimits:
    """Where a training loop stands against --max-steps, --max-epochs and --max-minutes, shared by the LM and
    head recipes. progress = max(steps, epochs, time) fractions drives the cosine, so whichever limit ends the
    run, it ends annealed. The time part spans what is left of the budget once the loop starts (tokenization and
    compilation come first); after a resume it continues from the checkpoint's progress, after a warm restart
    (--restart-schedule: progress0 0, step_base the checkpoint's step) a new cycle starts."""

    def __init__(self, args, t_start, budget_s, step_base, progress0):
        self.args, self.t_start, self.budget_s = args, t_start, budget_s
        self.step_base, self.progress0 = step_base, progress0
        self.t_loop = time.time()
        self.loop_budget = max(budget_s - (self.t_loop - t_start), 1.0)

    def check(self, step, batches):
        """(progress, stop reason or None) before step `step`."""
        a, now = self.args, time.time()
        p_steps = (step - self.step_base) / a.max_steps if a.max_steps else 0.0
        p_time = (self.progress0 + (1 - self.progress0) * (now - self.t_loop) / self.loop_budget
                  if self.budget_s else 0.0)
        epochs_done = batches.epoch + batches.pos / max(batches.rows, 1)
        p_epochs = epochs_done / a.max_epochs if a.max_epochs else 0.0
        progress = max(p_steps, p_time, p_epochs)
        if a.max_steps and step - self.step_base >= a.max_steps:
            return progress, "max steps"
        if a.max_epochs and epochs_done >= a.max_epochs:
            return progress, "max epochs"
        if self.budget_s and now - self.t_start >= self.budget_s:
            return progress, "time budget"
        return progress, None

    def lr(self, step, progress):
        return lr_at(self.args, step - self.step_base, progress)


def restore_run_state(ck, opt, batches):
    """What a resume restores besides the weights: optimizer moments, data position and every RNG."""
    import numpy as np
    import torch

    opt.load_state_dict(ck["optimizer"])
    batches.restore(ck["data"])
    random.setstate(ck["rng"]["python"])
    np.random.set_state(ck["rng"]["numpy"])
    torch.set_rng_state(ck["rng"]["torch"])
    if ck["rng"].get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(ck["rng"]["cuda"])


def cycle_start(args, step, progress0):
    """(progress0, step_base) for the loop after a resume at `step`: the checkpoint's own progress, or with
    --restart-schedule a warm restart (a new warm-up and cosine cycle, --max-steps counted from `step`)."""
    if not args.restart_schedule:
        return progress0, 0
    log("warm restart: a new learning-rate cycle starts here")
    return 0.0, step


def lr_at(args, step, progress):
    if args.warmup_steps and step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    p = min(max(progress, 0.0), 1.0)
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


# ----------------------------------------------------------------------------------------------- export
def export(model, args, tok_dir, out, ids, summary, log_path):
    import torch
    from transformers import GenerationConfig

    import pngplot

    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[args.export_dtype]
    if os.path.isdir(out):
        for f in os.listdir(out):
            if f.endswith(".safetensors") or f.endswith(".safetensors.index.json"):
                os.remove(os.path.join(out, f))
    os.makedirs(out, exist_ok=True)
    sd = {k: v.detach().to("cpu", dtype) for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)  # tied to model.embed_tokens.weight; transformers re-ties on load
    model.config.use_cache = True
    kw = {"max_shard_size": args.max_shard_size, "state_dict": sd}
    import inspect
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        kw["safe_serialization"] = True
    model.config.dtype = dtype  # recorded in config.json
    model.save_pretrained(out, **kw)
    # config.json: make sure the dtype is recorded under both keys (transformers 4 and 5 readers)
    cfg_path = os.path.join(out, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = args.export_dtype
    cfg["dtype"] = args.export_dtype
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    GenerationConfig(bos_token_id=ids["bos"], eos_token_id=[ids["eot"], ids["end_of_text"]],
                     pad_token_id=ids["end_of_text"], do_sample=False, max_new_tokens=256).save_pretrained(out)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(tok_dir, f)):
            shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))
    # training log + curve
    if os.path.abspath(log_path) != os.path.abspath(os.path.join(out, "train_log.jsonl")):
        shutil.copy(log_path, os.path.join(out, "train_log.jsonl"))
    with open(log_path) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    tr = [(r["step"], r["loss"]) for r in recs if r.get("loss") is not None]
    va = [(r["step"], r["val_loss"]) for r in recs if r.get("val_loss") is not None]
    series = []
    if tr:
        series.append(("train", [a for a, _ in tr], [b for _, b in tr], "line"))
    if va:
        series.append(("val", [a for a, _ in va], [b for _, b in va], "points"))
    if series:
        pngplot.plot(os.path.join(out, "loss_curve.png"), series, title=summary.get("role", ""))
    with open(os.path.join(out, "training_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".safetensors"))
    return size


# ----------------------------------------------------------------------------------------------- main loop
def init_from(model, model_dir):
    """Copies every tensor of model_dir's export whose name and shape match (a truncated copy keeps the first layers,
    the embeddings, the final norm and the head); says what it took and what it left at its random start."""
    import torch
    from safetensors.torch import load_file
    src = {}
    for f in sorted(os.listdir(model_dir)):
        if f.endswith(".safetensors"):
            src.update(load_file(os.path.join(model_dir, f)))
    own = model.state_dict()
    taken = {k: v.to(own[k].dtype) for k, v in src.items() if k in own and own[k].shape == v.shape}
    with torch.no_grad():
        for k, v in taken.items():
            own[k].copy_(v)
    fresh = [k for k in own if k not in taken and not (k == "lm_head.weight" and model.config.tie_word_embeddings)]
    log(f"init from {model_dir}: {len(taken)} tensors taken, {len(src) - len(taken)} of its dropped, "
        f"{len(fresh)} left at their random start{': ' + ', '.join(fresh[:4]) if fresh else ''}")


def run(args, role, teacher_dir=None):
    import numpy as np
    import torch
    import torch.nn.functional as F
    from transformers import LlamaForCausalLM

    global T_START
    if not args.max_steps and not args.max_minutes and not args.max_epochs:
        raise SystemExit("set --max-steps, --max-minutes and/or --max-epochs")
    # the first run of a process counts from the import (torch's import included); later ones (tests) from here
    if _RUNS:
        T_START = time.time()
    _RUNS.append(role)
    budget_s = args.max_minutes * 60.0
    work = args.work or (args.out.rstrip("/") + ".work")
    os.makedirs(work, exist_ok=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    # tokenizer ids
    from tokenizers import Tokenizer

    from chat_format import BOS, EOT, EOT_TEXT
    tk = Tokenizer.from_file(os.path.join(args.tokenizer, "tokenizer.json"))
    ids = {"bos": tk.token_to_id(BOS), "eot": tk.token_to_id(EOT), "end_of_text": tk.token_to_id(EOT_TEXT)}
    vocab = tk.get_vocab_size()

    log(f"{role}: device {device}, tokenizing corpus (vocab {vocab})")
    cache = args.cache or work
    train_convs = tokenize_split(args.tokenizer, args.data, "train", args.max_train_convs, cache, args.loss_on)
    val_convs = tokenize_split(args.tokenizer, args.data, "validation", args.max_val_convs, cache, args.loss_on)
    n_tok = sum(len(c[0]) for c in train_convs)
    n_loss = int(sum(c[1].sum() for c in train_convs))
    log(f"train: {len(train_convs)} conversations, {n_tok / 1e6:.2f} M tokens ({n_loss / 1e6:.2f} M with loss); "
        f"validation: {len(val_convs)} conversations")
    row_len = args.context + 1
    batches = Batches(train_convs, row_len, ids["end_of_text"], args.batch_size, args.seed, device)
    vT, vM = pack(val_convs, row_len, ids["end_of_text"], np.arange(len(val_convs)))
    vT, vM = torch.from_numpy(vT).to(device), torch.from_numpy(vM).to(device)
    log(f"packed: {batches.rows} train rows of {args.context} tokens per epoch "
        f"({n_tok / max(batches.rows * row_len, 1):.0%} filled), {len(vT)} validation rows")

    config = make_config(args, vocab, ids)
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(device)
    if args.init_from and not args.resume:
        init_from(model, args.init_from)
    n_params = param_count(model)
    log(f"model: {n_params / 1e6:.2f} M parameters (hidden {args.hidden}, layers {args.layers}, heads "
        f"{args.heads}/{args.kv_heads}, ffn {args.intermediate}, context {args.context}, "
        f"{'tied' if config.tie_word_embeddings else 'untied'} embeddings)")

    teacher = None
    if teacher_dir:
        teacher = LlamaForCausalLM.from_pretrained(
            teacher_dir, dtype=torch.bfloat16 if cuda else torch.float32).to(device).eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
        if teacher.config.vocab_size != vocab:
            raise SystemExit(f"teacher vocab {teacher.config.vocab_size} != tokenizer vocab {vocab}")
        log(f"distilling from {teacher_dir} ({param_count(teacher) / 1e6:.2f} M parameters, frozen)")

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.dim() >= 2 and "embed" not in n else no_decay).append(p)
    opt_kw = {"lr": args.lr, "betas": (0.9, args.beta2), "eps": 1e-8}
    if cuda:
        opt_kw["fused"] = True
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], **opt_kw)

    # resume
    step, progress0, tokens_seen, train_time_prev = 0, 0.0, 0, 0.0
    step_base = 0  # steps before this cycle: --max-steps and warm-up count from here after --restart-schedule
    ckpt_path = os.path.join(work, "checkpoint.pt")
    log_path = os.path.join(work, "train_log.jsonl")
    if args.resume:
        path = ckpt_path if args.resume == "auto" else args.resume
        if os.path.exists(path):
            ck = torch.load(path, map_location="cpu", weights_only=False)
            if ck["config"] != config.to_dict():
                diff = {k for k in set(ck["config"]) | set(config.to_dict())
                        if ck["config"].get(k) != config.to_dict().get(k)}
                if diff - {"transformers_version", "dtype", "torch_dtype"}:
                    raise SystemExit(f"checkpoint {path} has a different model config: {sorted(diff)}")
            model.load_state_dict(ck["model"])
            restore_run_state(ck, opt, batches)
            step, progress0 = ck["step"], ck["progress"]
            tokens_seen, train_time_prev = ck["tokens_seen"], ck.get("train_time", 0.0)
            log(f"resumed from {path} at step {step} (progress {progress0:.3f})")
            progress0, step_base = cycle_start(args, step, progress0)
        else:
            log(f"no checkpoint at {path}: starting fresh")
    if step == 0 and os.path.exists(log_path):
        os.remove(log_path)

    use_compile = args.compile == "on" or (args.compile == "auto" and cuda)
    fwd_model = model
    if use_compile:
        log("torch.compile: on (first steps include compilation)")
        fwd_model = torch.compile(model)
    amp_factory, amp_name = autocast_for(device, args.autocast)
    log(f"precision: {amp_name}")
    amp = amp_factory()

    def loss_fn(logits, y, x):
        if teacher is None:
            return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-100)
        with torch.no_grad():
            t_logits = teacher(input_ids=x).logits
        sel = (y != -100).reshape(-1)
        s = logits.reshape(-1, logits.size(-1))[sel].float()
        t = t_logits.reshape(-1, t_logits.size(-1))[sel].float()
        t_logp = F.log_softmax(t, dim=-1)
        s_logp = F.log_softmax(s, dim=-1)
        kl = (t_logp.exp() * (t_logp - s_logp)).sum(-1).mean()  # forward KL(p_base || q_draft)
        if args.ce_weight > 0:
            ce = F.cross_entropy(s, y.reshape(-1)[sel])
            return (1 - args.ce_weight) * kl + args.ce_weight * ce
        return kl

    @torch.no_grad()
    def evaluate(max_rows):
        model.eval()
        tot, cnt, kl_tot = 0.0, 0, 0.0
        n = len(vT) if not max_rows else min(max_rows, len(vT))
        bs = max(1, min(args.batch_size, 32))
        for i in range(0, n, bs):
            x, y = split_xy(vT[i:min(i + bs, n)], vM[i:min(i + bs, n)])
            with amp:
                logits = model(input_ids=x).logits
            lf = logits.float().reshape(-1, logits.size(-1))
            yf = y.reshape(-1)
            k = int((yf != -100).sum())
            if k == 0:
                continue
            tot += float(F.cross_entropy(lf, yf, ignore_index=-100, reduction="sum"))
            if teacher is not None:
                with amp:
                    tl = teacher(input_ids=x).logits
                sel = yf != -100
                tlp = F.log_softmax(tl.float().reshape(-1, tl.size(-1))[sel], -1)
                slp = F.log_softmax(lf[sel], -1)
                kl_tot += float((tlp.exp() * (tlp - slp)).sum())
            cnt += k
        model.train()
        if cnt == 0:
            return float("nan"), None
        return tot / cnt, (kl_tot / cnt if teacher is not None else None)

    def save_ckpt(progress):
        ck = {
            "model": model.state_dict(), "optimizer": opt.state_dict(), "step": step, "progress": progress,
            "tokens_seen": tokens_seen, "train_time": train_time_prev + (time.time() - T_START),
            "data": batches.state(), "config": config.to_dict(), "args": vars(args),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state() if cuda else None},
        }
        tmp = ckpt_path + ".tmp"
        torch.save(ck, tmp)
        os.replace(tmp, ckpt_path)

    logf = open(log_path, "a")

    def write_log(rec):
        logf.write(json.dumps(rec) + "\n")
        logf.flush()

    # progress display
    use_bar = args.progress == "bar" or (args.progress == "auto" and sys.stderr.isatty())
    bar = None
    if use_bar:
        from tqdm import tqdm
        bar = tqdm(total=args.max_steps or None, initial=step, desc=role, unit="step", dynamic_ncols=True)
    tokens_per_step = args.batch_size * args.grad_accum * args.context
    log(f"training: batch {args.batch_size}x{args.grad_accum} rows = {tokens_per_step} tokens/step, lr {args.lr}, "
        f"warmup {args.warmup_steps}, budget {args.max_minutes or '-'} min, max steps {args.max_steps or '-'}, "
        f"max epochs {args.max_epochs or '-'} ({batches.rows} rows each)")

    model.train()
    if use_compile:
        # compile (forward + backward) before the clock of the schedule starts; no optimizer step, no data consumed
        tc = time.time()
        x, y = split_xy(batches.T[:args.batch_size], batches.M[:args.batch_size])
        with amp:
            loss_fn(fwd_model(input_ids=x).logits, y, x).backward()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        log(f"compiled in {time.time() - tc:.1f}s")
    limits = RunLimits(args, T_START, budget_s, step_base, progress0)
    t_loop = limits.t_loop
    tokens_at_start = tokens_seen
    win_t, win_tok, win_loss, win_n = time.time(), 0, 0.0, 0
    last_line = time.time()
    last_val = None
    progress = progress0
    stop_reason = None
    while True:
        progress, stop_reason = limits.check(step, batches)
        if stop_reason:
            break
        lr = limits.lr(step, progress)
        for g in opt.param_groups:
            g["lr"] = lr
        loss_acc = 0.0
        for _ in range(args.grad_accum):
            T, M = batches.next()
            x, y = split_xy(T, M)
            with amp:
                logits = fwd_model(input_ids=x).logits
                loss = loss_fn(logits, y, x) / args.grad_accum
            loss.backward()
            loss_acc += loss.detach()
        if args.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens_seen += tokens_per_step
        win_tok += tokens_per_step
        if step % args.log_every == 0 or step == 1:
            lv = float(loss_acc)  # syncs
            win_loss += lv
            win_n += 1
            now = time.time()
            tps = win_tok / max(now - win_t, 1e-9)
            rec = {"step": step, "loss": round(lv, 5), "lr": lr, "tokens": tokens_seen,
                   "tokens_per_s": round(tps), "elapsed_s": round(now - T_START, 1), "epoch": batches.epoch}
            val_due = args.eval_every and step % args.eval_every == 0
            if val_due:
                vl, vkl = evaluate(args.eval_rows)
                rec["val_loss"] = round(vl, 5)
                if vkl is not None:
                    rec["val_kl"] = round(vkl, 5)
                last_val = vl
            write_log(rec)
            if bar is not None:
                bar.update(step - bar.n)
                post = {"loss": f"{lv:.3f}", "tok/s": f"{tps / 1e3:.0f}k", "lr": f"{lr:.1e}"}
                if last_val is not None:
                    post["val"] = f"{last_val:.3f}"
                bar.set_postfix(post)
            elif val_due or now - last_line >= 15 or step == 1:
                extra = f" val {rec['val_loss']:.3f}" if val_due else ""
                if val_due and rec.get("val_kl") is not None:
                    extra += f" (KL {rec['val_kl']:.3f})"
                log(f"{role} step {step}{'/' + str(args.max_steps) if args.max_steps else ''} loss {lv:.3f}"
                    f"{extra} lr {lr:.2e} {tps / 1e3:.1f}k tok/s epoch {batches.epoch} "
                    f"progress {progress:.0%}")
                last_line = now
            win_t, win_tok = time.time(), 0
        if args.ckpt_every and step % args.ckpt_every == 0:
            save_ckpt(progress)
    if bar is not None:
        bar.close()
    train_s = time.time() - t_loop
    log(f"{role}: stopped at step {step} ({stop_reason}); {tokens_seen / 1e6:.1f} M tokens seen in total, "
        f"{(tokens_seen - tokens_at_start) / max(train_s, 1e-9) / 1e3:.1f}k tok/s over this run's loop")

    vl, vkl = evaluate(0)
    rec = {"step": step, "val_loss": round(vl, 5), "final": True, "elapsed_s": round(time.time() - T_START, 1)}
    if vkl is not None:
        rec["val_kl"] = round(vkl, 5)
    write_log(rec)
    logf.close()
    log(f"{role}: final validation loss {vl:.4f} (ppl {math.exp(min(vl, 50)):.2f})"
        + (f", KL(base||draft) {vkl:.4f}" if vkl is not None else ""))
    save_ckpt(progress)
    summary = {
        "role": role, "params": n_params, "steps": step, "tokens_seen": tokens_seen, "stop_reason": stop_reason,
        "final_val_loss": vl, "final_val_kl": vkl, "loss_on": args.loss_on, "device": str(device),
        "epochs": round(batches.epoch + batches.pos / max(batches.rows, 1), 2),
        "train_tokens_per_epoch": n_tok, "wall_s": round(time.time() - T_START, 1),
        "distilled_from": os.path.abspath(teacher_dir) if teacher_dir else None,
        "init_from": os.path.abspath(args.init_from) if args.init_from else None,
        "config": {k: getattr(args, k) for k in ("hidden", "layers", "heads", "kv_heads", "intermediate", "context",
                                                  "batch_size", "lr", "warmup_steps", "seed")},
    }
    size = export(model, args, args.tokenizer, args.out, ids, summary, log_path)
    log(f"{role}: exported {args.export_dtype} model to {args.out} ({size / 1e6:.1f} MB of safetensors)")
    return summary


def parse(defaults, role, extra=None, argv=None):
    ap = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(ap, defaults)
    if extra:
        extra(ap)
    return ap.parse_args(argv)
