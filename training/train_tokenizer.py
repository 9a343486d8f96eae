#!/usr/bin/env python3
"""Trains SpecScope's byte-level BPE tokenizer (Llama-3 layout) on the chat corpus.

  python3 training/train_tokenizer.py --data training/data --out runs/tok [--vocab 4096] [--max-chars N]

Writes OUT/tokenizer.json and OUT/tokenizer_config.json (bos <|begin_of_text|>, eos <|eot_id|>,
pad <|end_of_text|>, the Llama-3 chat_template), loadable with transformers.AutoTokenizer.

The BPE is trained on exactly the pieces that encode() sees: the rendered conversations split at the special
tokens, so no merge is wasted on spelling out <|eot_id|> and friends. Ids 0..4 are the special tokens.
"""
import argparse
import gzip
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from chat_format import BOS, CHAT_TEMPLATE, EOT, EOT_TEXT, SPECIAL_TOKENS, render  # noqa: E402

# The Llama-3 pre-tokenizer split pattern.
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def iter_conversations(path, max_chars=0):
    n = 0
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            msgs = json.loads(line)["messages"]
            yield msgs
            n += sum(len(m["content"]) for m in msgs)
            if max_chars and n >= max_chars:
                return


def segments(msgs):
    """The text between special tokens of a rendered conversation."""
    text = render(msgs)
    for sp in SPECIAL_TOKENS:
        text = text.replace(sp, "\x00")
    return [s for s in text.split("\x00") if s]


def build_tokenizer(vocab_size):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return tok, trainer


def save(tok, out, context):
    """tokenizer.json + tokenizer_config.json with the chat template inline (the engine reads it there)."""
    from tokenizers import processors

    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)])
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    added = {}
    for sp in SPECIAL_TOKENS:
        added[str(tok.token_to_id(sp))] = {
            "content": sp, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
            "special": True}
    cfg = {
        "added_tokens_decoder": added,
        "bos_token": BOS,
        "eos_token": EOT,
        "pad_token": EOT_TEXT,
        "add_bos_token": True,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": context,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token": BOS, "eos_token": EOT, "pad_token": EOT_TEXT}, f, indent=2)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(HERE, "data"), help="folder with train.jsonl.gz")
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--context", type=int, default=512, help="model_max_length written to the config")
    ap.add_argument("--max-chars", type=int, default=0, help="train on the first N content characters only")
    args = ap.parse_args(argv)

    t0 = time.time()
    tok, trainer = build_tokenizer(args.vocab)

    def it():
        for msgs in iter_conversations(os.path.join(args.data, "train.jsonl.gz"), args.max_chars):
            yield from segments(msgs)

    tok.train_from_iterator(it(), trainer=trainer)
    save(tok, args.out, args.context)

    # report: compression on validation
    val = os.path.join(args.data, "validation.jsonl.gz")
    chars = toks = 0
    for i, msgs in enumerate(iter_conversations(val)):
        text = render(msgs)
        chars += len(text)
        toks += len(tok.encode(text, add_special_tokens=False).ids)
        if i >= 2000:
            break
    print(f"[tokenizer] vocab {tok.get_vocab_size()} -> {args.out} in {time.time() - t0:.1f}s; "
          f"validation: {chars / max(toks, 1):.2f} chars/token")


if __name__ == "__main__":
    main()
