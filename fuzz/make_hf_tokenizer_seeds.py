"""Writes fuzz/corpus/hf_tokenizer: each tokenizer.json of tests/fixtures/tokenizers cut to its first 300 ids (and the
merges among them), so that libFuzzer's mutations of a seed take microseconds rather than a full vocabulary's parse.
Run from the repository root: python3 fuzz/make_hf_tokenizer_seeds.py"""
import glob
import json
import os

OUT = "fuzz/corpus/hf_tokenizer"
KEEP_IDS = 300

os.makedirs(OUT, exist_ok=True)
for path in sorted(glob.glob("tests/fixtures/tokenizers/*/tokenizer.json")):
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
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
    name = os.path.basename(os.path.dirname(path))
    with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
