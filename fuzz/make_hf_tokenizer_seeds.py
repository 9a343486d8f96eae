"""Writes fuzz/corpus/hf_tokenizer: each tokenizer of tests/fixtures/tokenizers (a tokenizer.json, or a variant's
patch.json applied to its base as tests/tokenizer_test.cpp applies it) cut to its first 300 ids and the merges among
them, so that libFuzzer's mutations of a seed take microseconds rather than a full vocabulary's parse.
Run from the repository root: python3 fuzz/make_hf_tokenizer_seeds.py"""
import glob
import json
import os

FIXTURES = "tests/fixtures/tokenizers"
OUT = "fuzz/corpus/hf_tokenizer"
KEEP_IDS = 300


def load(name):
    folder = os.path.join(FIXTURES, name)
    patch_path = os.path.join(folder, "patch.json")
    if not os.path.exists(patch_path):
        with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
            return json.load(f)
    with open(patch_path, encoding="utf-8") as f:
        patch = json.load(f)
    tok = load(patch["base"])
    tok.update(patch["replace"])  # top-level sections replace the base's
    return tok


def trimmed(tok):
    model = tok.get("model", {})
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        keep = {piece: i for piece, i in vocab.items() if i < KEEP_IDS}
        model["vocab"] = keep
        if "merges" in model:
            merges = []
            for m in model["merges"]:
                a, b = m.split(" ", 1) if isinstance(m, str) else m
                if a in keep and b in keep and a + b in keep:
                    merges.append(m)
            model["merges"] = merges
    # Added tokens keep their ids (the largest id sets the vocabulary size).
    return tok


os.makedirs(OUT, exist_ok=True)
for folder in sorted(glob.glob(os.path.join(FIXTURES, "*/"))):
    name = os.path.basename(os.path.dirname(folder))
    if not (os.path.exists(os.path.join(folder, "tokenizer.json")) or os.path.exists(os.path.join(folder, "patch.json"))):
        continue
    with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(trimmed(load(name)), f, ensure_ascii=False)
