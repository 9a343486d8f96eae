#!/usr/bin/env python3
"""Averages the weights of exported heads of one recipe (checkpoint averaging, as in stochastic weight averaging).

  python3 training/average_heads.py --out runs/eagle3-avg runs/eagle3-stage6 runs/eagle3-stage7

Two stages that ended near the same minimum (the second started from the first) often average to a point lower
than either: stages 6 and 7 of the shipped EAGLE-3 head averaged to a better validation loss than both and a
higher held-out tau. Each source is a folder an exporter wrote (config.json and one .safetensors file with the
official tensor names). Floating-point tensors are averaged in float64 and stored in their own dtype; any other
tensor (EAGLE-3's d2t/t2d vocabulary maps) must be equal in every source, since its mean means nothing. The
output takes the last source's other files (config.json) and records the sources and their SHA-256 in
averaged_from.json.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys


def tensor_file(folder):
    names = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    if len(names) != 1:
        raise SystemExit(f"{folder}: expected one .safetensors file, found {len(names)}")
    return names[0]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def average(sources):
    """The mean of the sources' tensors, by name; raises SystemExit on names, shapes or fixed tensors that differ."""
    import torch
    from safetensors.torch import load_file
    names = [tensor_file(s) for s in sources]
    if len(set(names)) != 1:
        raise SystemExit(f"the sources hold different tensor files: {', '.join(names)}")
    loaded = [load_file(os.path.join(s, names[0])) for s in sources]
    keys = set(loaded[0])
    for s, t in zip(sources[1:], loaded[1:]):
        if set(t) != keys:
            raise SystemExit(f"{s}: its tensor names differ from {sources[0]}'s")
    out = {}
    for k in sorted(keys):
        first = loaded[0][k]
        for s, t in zip(sources[1:], loaded[1:]):
            if t[k].shape != first.shape or t[k].dtype != first.dtype:
                raise SystemExit(f"{s}: tensor {k} is {tuple(t[k].shape)} {t[k].dtype}, "
                                 f"{sources[0]} has {tuple(first.shape)} {first.dtype}")
        if first.is_floating_point():
            mean = sum(t[k].to(torch.float64) for t in loaded) / len(loaded)
            out[k] = mean.to(first.dtype).contiguous()
        else:
            for s, t in zip(sources[1:], loaded[1:]):
                if not torch.equal(t[k], first):
                    raise SystemExit(f"{s}: tensor {k} ({first.dtype}) differs from {sources[0]}'s and cannot be "
                                     f"averaged")
            out[k] = first.contiguous()
    return names[0], out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write (created)")
    ap.add_argument("sources", nargs="+", help="exported head folders of one recipe, two or more")
    args = ap.parse_args(argv)
    if len(args.sources) < 2:
        raise SystemExit("give two or more source folders")
    from safetensors.torch import save_file
    name, tensors = average(args.sources)
    os.makedirs(args.out, exist_ok=True)
    save_file(tensors, os.path.join(args.out, name), metadata={"format": "pt"})
    config = os.path.join(args.sources[-1], "config.json")
    if os.path.isfile(config):
        shutil.copy(config, os.path.join(args.out, "config.json"))
    record = {"tensor_file": name,
              "sources": [{"folder": s, "sha256": sha256(os.path.join(s, name))} for s in args.sources]}
    with open(os.path.join(args.out, "averaged_from.json"), "w") as f:
        json.dump(record, f, indent=1)
    print(f"averaged {len(args.sources)} heads ({len(tensors)} tensors) into {os.path.join(args.out, name)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
