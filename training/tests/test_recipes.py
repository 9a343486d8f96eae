"""Tests for the training recipes: each runs on a tiny slice for a few steps on the CPU.

  $(bash scripts/python-venv.sh)/bin/python -m unittest discover -s training/tests -v

(pytest is not in training/requirements.txt, so these are plain unittest; pytest would collect them too.)
Corpus-builder tests need the Debian packages from training/corpus/fetch_sources.sh and are skipped without
them; everything else uses the corpus shipped in training/data.
"""
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINING = os.path.dirname(HERE)
ROOT = os.path.dirname(TRAINING)
DATA = os.path.join(TRAINING, "data")
sys.path.insert(0, TRAINING)

import chat_format  # noqa: E402

HAVE_WORDNET = os.path.isfile("/usr/share/wordnet/data.noun") and os.path.isfile("/usr/share/dictd/jargon.index")


def read_jsonl_gz(path, limit=0):
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if limit and len(out) >= limit:
                break
    return out


CLI = os.environ.get("SPECSCOPE_CLI") or os.path.join(ROOT, "build", "app", "specscope-cli")


def engine_tau(test, model, method, extra, prompts=8):
    """The exports through the C++ engine: `specscope-cli compare --chat` of vanilla and `method` on the first
    `prompts` user turns of the training data, greedy, 32 tokens. Every output must equal vanilla's; returns τ.
    Without a built CLI the check is skipped, except under ctest, which sets SPECSCOPE_REQUIRE_CLI=1 (a skip must
    never pass there)."""
    if not os.path.exists(CLI):
        if os.environ.get("SPECSCOPE_REQUIRE_CLI"):
            test.fail(f"{CLI} is missing")
        test.skipTest(f"{CLI} is not built (set SPECSCOPE_CLI)")
    pf = os.path.join(test.tmp, "train_prompts.jsonl")
    with open(pf, "w", encoding="utf-8") as f:
        for conv in read_jsonl_gz(os.path.join(DATA, "train.jsonl.gz"), prompts):
            f.write(json.dumps({"prompt": conv["messages"][0]["content"]}) + "\n")
    r = subprocess.run([CLI, "compare", "--chat", "--model", model, "--methods", "vanilla," + method, *extra,
                        "--prompt-file", pf, "--max-tokens", "32", "--json", "--no-record"],
                       capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, r.stderr[-3000:])
    d = json.loads(r.stdout)
    test.assertTrue(d["all_identical"], f"{method} left vanilla's output")
    tau = next(a["tau"] for a in d["aggregate"] if a["method"] == method)
    print(f"[engine] {method} {' '.join(extra)} on {os.path.basename(model)}: tau {tau:.2f}", file=sys.stderr)
    return tau


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def quiet(fn, *a, **kw):
    buf = io.StringIO()
    with redirect_stdout(buf):
        return fn(*a, **kw)


class ShippedCorpus(unittest.TestCase):
    def test_files_and_heldout(self):
        val = read_jsonl_gz(os.path.join(DATA, "validation.jsonl.gz"))
        self.assertGreater(len(val), 1000)
        for conv in val[:500]:
            msgs = conv["messages"]
            roles = [m["role"] for m in msgs if m["role"] != "system"]
            self.assertEqual(roles[0], "user")
            self.assertEqual(roles[-1], "assistant")
            self.assertTrue(all(m["content"] == m["content"].strip() and m["content"] for m in msgs))
        prompts = [r["prompt"] for r in read_lines(os.path.join(ROOT, "assets", "prompts", "heldout.jsonl"))]
        self.assertGreaterEqual(len(prompts), 60)
        self.assertEqual(len(set(prompts)), len(prompts))
        train_users = set()
        with gzip.open(os.path.join(DATA, "train.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                for m in json.loads(line)["messages"]:
                    if m["role"] == "user":
                        train_users.add(m["content"])
        val_users = {m["content"] for c in val for m in c["messages"] if m["role"] == "user"}
        for p in prompts:
            self.assertNotIn(p, train_users)
            self.assertIn(p, val_users)

    def test_text_rendering_matches_jsonl(self):
        convs = read_jsonl_gz(os.path.join(DATA, "validation.jsonl.gz"), 50)
        with gzip.open(os.path.join(DATA, "validation.txt.gz"), "rt", encoding="utf-8") as f:
            text = f.read()
        parts = [p for p in text.split(chat_format.BOS) if p]
        for conv, part in zip(convs, parts):
            self.assertEqual(chat_format.BOS + part.rstrip("\n"), chat_format.render(conv["messages"]))


@unittest.skipUnless(HAVE_WORDNET, "Debian packages of training/corpus/fetch_sources.sh not installed")
class CorpusBuilder(unittest.TestCase):
    def test_slice_is_deterministic(self):
        outs = []
        for i in range(2):
            d = tempfile.mkdtemp(prefix="ss-corpus-")
            self.addCleanup(shutil.rmtree, d, True)
            subprocess.run([sys.executable, os.path.join(TRAINING, "corpus", "build_corpus.py"), "--limit-synsets",
                            "300", "--out", d, "--prompts-out", os.path.join(d, "heldout.jsonl")],
                           check=True, capture_output=True)
            outs.append(d)
        for f in ("train.jsonl.gz", "validation.jsonl.gz", "train.txt.gz", "heldout.jsonl"):
            with open(os.path.join(outs[0], f), "rb") as a, open(os.path.join(outs[1], f), "rb") as b:
                self.assertEqual(a.read(), b.read(), f)
        conv = read_jsonl_gz(os.path.join(outs[0], "train.jsonl.gz"), 1)[0]
        self.assertIn("messages", conv)


class DocSections(unittest.TestCase):
    """The manuals' reader (training/corpus/doc_sections.py, build_corpus.py --with-docs) on small inline pages: it
    needs no package installed."""

    RST = """Built-in Things
===============

The interpreter has a number of functions built into it that are always available. They are listed here.

.. function:: abs(x)

   Return the absolute value of a number. The argument may be an integer or a :class:`float`, or an object
   implementing :meth:`~object.__abs__`. Equivalent to::

      def abs(x):
          return x if x >= 0 else -x

   .. versionadded:: 3.1

   If the argument is a complex number, its magnitude is returned, as ``abs(z)`` shows in `the guide <https://x>`_.

.. note::

   Notes inside a section are read as the section's own prose, like this sentence here is.

:keyword:`!for` Loops
---------------------

* a list item that is not prose and must not be read as a paragraph of the section at all

A for loop in Python iterates over the items of any sequence, in the order that they appear in it.
"""

    HTML = """<html><body><h1>5.3. Constraints</h1><p>Data types are a way to limit the kind of data that can be
stored in a table, but they are too coarse for many applications.</p><pre>CREATE TABLE products (price numeric);
</pre><h3>Note</h3><p>PostgreSQL does not support CHECK constraints that reference table data other than the new row.</p>
<table><tr><td><p>A paragraph in a table cell is part of a table, not prose of the page.</p></td></tr></table>
<h2>Check Constraints</h2><p>A check constraint is the most generic constraint type there is &amp; it is simple.</p>
</body></html>"""

    def setUp(self):
        sys.path.insert(0, os.path.join(TRAINING, "corpus"))
        import doc_sections
        self.d = doc_sections

    def test_rst_sections_objects_and_prose(self):
        units = self.d.rst_units(self.RST)
        self.assertEqual([(k, n) for k, n, _ in units],
                         [("section", "Built-in Things"), ("object", "abs(x)"), ("section", "for Loops")])
        section, obj, loop = (ps for _, _, ps in units)
        self.assertEqual(section[0], "The interpreter has a number of functions built into it that are always "
                                     "available. They are listed here.")
        self.assertIn("Notes inside a section are read as the section's own prose", section[1])
        # the code sample's introduction is cut with the code; roles, literals and links become their text
        self.assertEqual(obj[0], "Return the absolute value of a number. The argument may be an integer or a float, "
                                 "or an object implementing __abs__.")
        self.assertEqual(obj[1], "If the argument is a complex number, its magnitude is returned, as abs(z) shows in "
                                 "the guide.")
        self.assertEqual(len(obj), 2)
        self.assertEqual(loop, ["A for loop in Python iterates over the items of any sequence, in the order that "
                                "they appear in it."])

    def test_html_sections_skip_code_tables_and_asides(self):
        sections = self.d.html_sections(self.HTML)
        self.assertEqual([t for t, _ in sections], ["Constraints", "Check Constraints"])
        self.assertEqual(len(sections[0][1]), 2)  # the aside's paragraph joins its section; the table's does not
        self.assertIn("PostgreSQL does not support CHECK", sections[0][1][1])
        self.assertEqual(sections[1][1], ["A check constraint is the most generic constraint type there is & it is "
                                          "simple."])

    def test_a_missing_manual_is_named(self):
        saved = self.d.SQLITE_DOCS
        self.addCleanup(setattr, self.d, "SQLITE_DOCS", saved)
        self.d.SQLITE_DOCS = os.path.join(tempfile.gettempdir(), "ss-no-such-manual")
        self.assertIn(self.d.SQLITE_DOCS, self.d.missing_manuals())

    def test_long_sections_continue_in_further_answers(self):
        paragraphs = [f"Paragraph {i} says something long enough about the subject. " * 6 for i in range(12)]
        answers = self.d.answers_from(paragraphs)
        self.assertGreater(len(answers), 1)
        self.assertEqual("\n\n".join(answers), "\n\n".join(paragraphs))  # every paragraph, in order, once
        self.assertTrue(all(len(a) <= self.d.ANSWER_CHARS or "\n\n" not in a for a in answers))
        import random
        items = list(self.d.section_items("s", "docs/x", "First?", "t", "M", answers, random.Random(0),
                                          lambda r, ph, **kw: r.choice(ph).format(**kw),
                                          lambda *t: [{"role": "user" if i % 2 == 0 else "assistant", "content": c}
                                                      for i, c in enumerate(t)]))
        self.assertEqual(len(items), len(answers))
        self.assertEqual({subj for subj, _, _ in items}, {"s"})  # one subject: the split keeps a section together
        self.assertEqual(items[0][2][0]["content"], "First?")


class Recipes(unittest.TestCase):
    """Tokenizer -> base -> resume -> draft (text and distilled), on a tiny slice, in one process."""

    @classmethod
    def setUpClass(cls):
        import torch

        torch.set_num_threads(1)
        cls.tmp = tempfile.mkdtemp(prefix="ss-recipes-")
        import train_tokenizer

        cls.tok = os.path.join(cls.tmp, "tok")
        quiet(train_tokenizer.main, ["--data", DATA, "--out", cls.tok, "--vocab", "512", "--max-chars", "400000",
                                     "--context", "128"])
        # float32 whatever the CPU (--autocast auto takes bf16 on AMX), so each test's thresholds hold everywhere
        cls.small = ["--data", DATA, "--tokenizer", cls.tok, "--device", "cpu", "--threads", "1", "--autocast", "off",
                     "--context", "128", "--batch-size", "8", "--max-train-convs", "1500", "--max-val-convs", "100",
                     "--eval-every", "20", "--eval-rows", "8", "--log-every", "5", "--warmup-steps", "5",
                     "--progress", "lines"]
        import train_base

        cls.base = os.path.join(cls.tmp, "base")
        cls.base_summary = quiet(train_base.main, cls.small + [
            "--out", cls.base, "--hidden", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
            "--intermediate", "128", "--lr", "1e-2", "--max-steps", "40", "--ckpt-every", "20",
            "--max-shard-size", "100KB"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def log(self, d):
        return read_lines(os.path.join(d, "train_log.jsonl"))

    def test_tokenizer_and_chat_template(self):
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.tok)
        self.assertEqual(len(tok), 512)
        for i, sp in enumerate(chat_format.SPECIAL_TOKENS):
            self.assertEqual(tok.convert_tokens_to_ids(sp), i)
        self.assertEqual(tok.bos_token, chat_format.BOS)
        self.assertEqual(tok.eos_token, chat_format.EOT)
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": 'What does "harbor" mean?'},
                {"role": "assistant", "content": "A sheltered port. Ünïcode ✓ 12345"}]
        self.assertEqual(tok.apply_chat_template(msgs, tokenize=False), chat_format.render(msgs))
        self.assertEqual(tok.apply_chat_template(msgs[:2], tokenize=False, add_generation_prompt=True),
                         chat_format.render(msgs[:2], add_generation_prompt=True))
        ids = tok(chat_format.render(msgs), add_special_tokens=False)["input_ids"]
        self.assertEqual(tok.decode(ids), chat_format.render(msgs))
        self.assertEqual(tok("hi")["input_ids"][0], 0)  # BOS from the post-processor
        cfg = read_json(os.path.join(self.tok, "tokenizer_config.json"))
        self.assertEqual(cfg["chat_template"], chat_format.CHAT_TEMPLATE)

    def test_loss_mask_covers_assistant_only(self):
        import numpy as np
        from tokenizers import Tokenizer

        import lm_train

        msgs = [{"role": "user", "content": "Define cat."}, {"role": "assistant", "content": "A small feline."}]
        d = tempfile.mkdtemp(dir=self.tmp)
        with gzip.open(os.path.join(d, "train.jsonl.gz"), "wt") as f:
            f.write(json.dumps({"messages": msgs}) + "\n")
        ((ids, mask),) = lm_train.tokenize_split(self.tok, d, "train", 0, d, "assistant")
        tok = Tokenizer.from_file(os.path.join(self.tok, "tokenizer.json"))
        self.assertEqual(tok.decode(ids[mask].tolist(), skip_special_tokens=False), "A small feline.<|eot_id|>")
        self.assertFalse(mask[: int(np.argmax(mask))].any())

    def test_base_trains_exports_and_loads(self):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        log = self.log(self.base)
        first = log[0]["loss"]
        final = [r for r in log if r.get("final")][-1]["val_loss"]
        self.assertLess(final, first - 0.8, f"loss did not fall: {first} -> {final}")
        files = os.listdir(self.base)
        self.assertIn("model.safetensors.index.json", files)  # sharded by --max-shard-size
        for f in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                  "loss_curve.png", "train_log.jsonl", "training_summary.json"):
            self.assertIn(f, files)
        with open(os.path.join(self.base, "loss_curve.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        cfg = read_json(os.path.join(self.base, "config.json"))
        self.assertTrue(cfg["tie_word_embeddings"])
        self.assertEqual(cfg["torch_dtype"], "bfloat16")
        model = AutoModelForCausalLM.from_pretrained(self.base)
        self.assertEqual(model.dtype, torch.bfloat16)
        tok = AutoTokenizer.from_pretrained(self.base)
        enc = tok.apply_chat_template([{"role": "user", "content": "Define cat."}], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)
        out = model.generate(**enc, max_new_tokens=5, do_sample=False)
        self.assertEqual(out.shape[0], 1)
        self.assertGreater(out.shape[1], enc["input_ids"].shape[1])

    def test_resume_continues(self):
        import train_base

        d = os.path.join(self.tmp, "resume")
        shutil.copytree(self.base + ".work", d + ".work")
        s = quiet(train_base.main, self.small + [
            "--out", d, "--hidden", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
            "--intermediate", "128", "--lr", "1e-2", "--max-steps", "45", "--ckpt-every", "0", "--resume", "auto",
            "--export-dtype", "float16"])
        self.assertEqual(s["steps"], 45)
        steps = [r["step"] for r in self.log(d) if "loss" in r]
        self.assertEqual(steps[0], 1)  # the log carries on from the first run
        self.assertIn(45, steps)
        self.assertEqual(read_json(os.path.join(d, "config.json"))["torch_dtype"], "float16")

    def test_draft_text_and_distill(self):
        import train_draft
        from transformers import AutoModelForCausalLM

        size = ["--hidden", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1", "--intermediate", "64",
                "--lr", "1e-2", "--max-steps", "25", "--ckpt-every", "0"]
        d1 = os.path.join(self.tmp, "draft-text")
        quiet(train_draft.main, self.small + ["--out", d1] + size)
        log = self.log(d1)
        self.assertLess([r for r in log if r.get("final")][-1]["val_loss"], log[0]["loss"] - 0.5)
        d2 = os.path.join(self.tmp, "draft-kd")
        s = quiet(train_draft.main, self.small + ["--out", d2, "--distill", self.base] + size)
        log = self.log(d2)
        self.assertLess(s["final_val_kl"], log[0]["loss"] - 0.3)  # the training loss is the KL
        self.assertIsNotNone(s["distilled_from"])
        m = AutoModelForCausalLM.from_pretrained(d2)
        self.assertEqual(m.config.vocab_size, 512)
        # The distilled draft drives sps in the C++ engine: lossless, and it gets tokens accepted.
        self.assertGreater(engine_tau(self, self.base, "sps", ["--draft", d2, "--gamma", "4"]), 1.0)

    def test_init_from_truncates_a_deeper_model(self):
        import torch
        import train_draft
        from transformers import AutoModelForCausalLM

        # A one-layer draft seeded from the two-layer base, no training step: it holds the base's first layer,
        # embeddings and final norm exactly (as exported), and nothing of its second layer.
        d = os.path.join(self.tmp, "draft-init")
        quiet(train_draft.main, self.small + [
            "--out", d, "--init-from", self.base, "--hidden", "64", "--layers", "1", "--heads", "4", "--kv-heads", "2",
            "--intermediate", "128", "--max-steps", "1", "--lr", "1e-12", "--warmup-steps", "1", "--ckpt-every", "0",
            "--export-dtype", "float32"])
        base = AutoModelForCausalLM.from_pretrained(self.base, dtype=torch.float32).state_dict()
        draft = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).state_dict()
        self.assertEqual(AutoModelForCausalLM.from_pretrained(d).config.num_hidden_layers, 1)
        self.assertFalse(any(k.startswith("model.layers.1.") for k in draft))
        for k in ("model.embed_tokens.weight", "model.norm.weight", "model.layers.0.mlp.down_proj.weight",
                  "model.layers.0.self_attn.q_proj.weight"):
            self.assertTrue(torch.allclose(draft[k], base[k], rtol=0, atol=1e-6), k)


class HeadRecipes(unittest.TestCase):
    """EAGLE-1, EAGLE-3 and Medusa-1 heads on a tiny 3-layer base (EAGLE-3 needs 3 distinct layers:
    sorted({2, 1, 0})): a few CPU steps each; the loss falls, the export has exactly the official tensors, and the
    C++ engine runs it losslessly with τ > 1 on training prompts (engine_tau)."""

    @classmethod
    def setUpClass(cls):
        import torch

        torch.set_num_threads(1)
        cls.tmp = tempfile.mkdtemp(prefix="ss-heads-")
        import train_base
        import train_tokenizer

        cls.tok = os.path.join(cls.tmp, "tok")
        quiet(train_tokenizer.main, ["--data", DATA, "--out", cls.tok, "--vocab", "512", "--max-chars", "300000",
                                     "--context", "128"])
        common = ["--data", DATA, "--tokenizer", cls.tok, "--device", "cpu", "--threads", "1", "--context", "128",
                  "--autocast", "off", "--batch-size", "8", "--max-train-convs", "1000", "--max-val-convs", "40",
                  "--log-every", "5", "--warmup-steps", "5", "--progress", "lines", "--ckpt-every", "0", "--eval-every", "0"]
        cls.base = os.path.join(cls.tmp, "base")
        quiet(train_base.main, common + ["--out", cls.base, "--hidden", "64", "--layers", "3", "--heads", "4",
                                         "--kv-heads", "2", "--intermediate", "128", "--lr", "1e-2",
                                         "--max-steps", "30"])
        cls.H, cls.V, cls.I, cls.KV = 64, 512, 128, 2 * 16
        cls.head_args = ["--base", cls.base, "--data", DATA, "--device", "cpu", "--threads", "1", "--context", "64",
                         "--autocast", "off",
                         "--batch-size", "8", "--max-train-convs", "400", "--max-val-convs", "30", "--log-every", "1",
                         "--eval-every", "0", "--warmup-steps", "3", "--ckpt-every", "0", "--lr", "5e-3",
                         "--export-dtype", "float32"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def tensors(self, path):
        from safetensors import safe_open

        with safe_open(path, "pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}

    def losses(self, d, key="loss"):
        return [r[key] for r in read_lines(os.path.join(d, "train_log.jsonl")) if key in r and not r.get("final")]

    def assert_falls(self, xs, frac):
        a, b = sum(xs[:3]) / 3, sum(xs[-3:]) / 3
        self.assertLess(b, a * frac, f"loss did not fall: {a:.4f} -> {b:.4f}")

    def layer_shapes(self, p, in_dim):
        H, I, KV = self.H, self.I, self.KV
        return {p + "self_attn.q_proj.weight": (H, in_dim), p + "self_attn.k_proj.weight": (KV, in_dim),
                p + "self_attn.v_proj.weight": (KV, in_dim), p + "self_attn.o_proj.weight": (H, H),
                p + "mlp.gate_proj.weight": (I, H), p + "mlp.up_proj.weight": (I, H),
                p + "mlp.down_proj.weight": (H, I), p + "post_attention_layernorm.weight": (H,)}

    def test_eagle1(self):
        import train_eagle

        d = os.path.join(self.tmp, "eagle1")
        s = quiet(train_eagle.main, self.head_args + ["--out", d, "--max-steps", "40"])
        self.assert_falls(self.losses(d), 0.8)
        self.assertGreater(s["final_val"]["acc"], 0.05)
        want = {"fc.weight": (self.H, 2 * self.H), "fc.bias": (self.H,)}
        want.update(self.layer_shapes("layers.0.", self.H))
        t = self.tensors(os.path.join(d, "model.safetensors"))
        self.assertEqual({k: tuple(v.shape) for k, v in t.items()}, want)
        cfg = read_json(os.path.join(d, "config.json"))
        self.assertEqual((cfg["num_hidden_layers"], cfg["bias"], cfg["hidden_size"]), (1, True, self.H))
        for m in ("eagle1", "eagle2"):
            self.assertGreater(engine_tau(self, self.base, m, ["--head", d]), 1.0, m)
        # resume continues the step count and the log
        s2 = quiet(train_eagle.main, self.head_args + ["--out", d, "--max-steps", "45", "--resume", "auto"])
        self.assertEqual(s2["steps"], 45)
        self.assertEqual([r["step"] for r in read_lines(os.path.join(d, "train_log.jsonl")) if "loss" in r][0], 1)
        # a warm restart continues the step count with a fresh learning-rate cycle: --max-steps counts from the
        # checkpoint, and the rate climbs back from the annealed end of the previous cycle
        s3 = quiet(train_eagle.main, self.head_args + ["--out", d, "--max-steps", "6", "--resume", "auto",
                                                       "--restart-schedule"])
        self.assertEqual(s3["steps"], 51)
        lr = {r["step"]: r["lr"] for r in read_lines(os.path.join(d, "train_log.jsonl")) if "lr" in r}
        self.assertLess(lr[45], 0.2 * 5e-3)  # annealed at the end of the first cycle
        self.assertGreater(lr[48], 4 * lr[45])  # warm-up of the new cycle (3 steps) reached the peak again
        self.assertLess(lr[51], lr[48])

    def test_eagle3(self):
        import torch

        import train_eagle3

        d = os.path.join(self.tmp, "eagle3")
        quiet(train_eagle3.main, self.head_args + ["--out", d, "--max-steps", "40", "--draft-vocab", "256"])
        self.assert_falls(self.losses(d), 0.93)
        self.assert_falls(self.losses(d, "ploss0"), 0.93)
        want = {"fc.weight": (self.H, 3 * self.H), "midlayer.input_layernorm.weight": (self.H,),
                "midlayer.hidden_norm.weight": (self.H,), "norm.weight": (self.H,),
                "lm_head.weight": (256, self.H), "d2t": (256,), "t2d": (self.V,)}
        want.update(self.layer_shapes("midlayer.", 2 * self.H))
        t = self.tensors(os.path.join(d, "model.safetensors"))
        self.assertEqual({k: tuple(v.shape) for k, v in t.items()}, want)
        self.assertEqual((t["d2t"].dtype, t["t2d"].dtype), (torch.int64, torch.bool))
        used = torch.arange(256) + t["d2t"]
        self.assertTrue(bool((used[1:] > used[:-1]).all()))
        self.assertEqual(int(t["t2d"].sum()), 256)
        self.assertTrue(bool(t["t2d"][used].all()))
        cfg = read_json(os.path.join(d, "config.json"))
        self.assertEqual((cfg["draft_vocab_size"], cfg["num_hidden_layers"]), (256, 1))
        self.assertNotIn("target_hidden_size", cfg)
        self.assertGreater(engine_tau(self, self.base, "eagle3", ["--head", d]), 1.0)
        # --init-from continues an exported head: loaded back into the module (with its draft vocabulary, whatever
        # the data now says), so that with a learning rate of 0 the new export is the same tensors
        d2 = os.path.join(self.tmp, "eagle3-cont")
        s = quiet(train_eagle3.main, self.head_args + ["--out", d2, "--max-steps", "2", "--init-from", d, "--lr", "0",
                                                       "--max-train-convs", "100"])
        self.assertEqual(s["init_from"], os.path.abspath(d))
        t2 = self.tensors(os.path.join(d2, "model.safetensors"))
        self.assertEqual(set(t2), set(t))
        for k in t:
            self.assertTrue(torch.equal(t[k], t2[k]), k)
        # a draft vocabulary can be widened, never narrowed
        with self.assertRaises(SystemExit):
            quiet(train_eagle3.main, self.head_args + ["--out", os.path.join(self.tmp, "narrow"), "--max-steps", "1",
                                                       "--init-from", d, "--draft-vocab", "128"])
        # widened: every old token stays, its lm_head row moves to its new draft id unchanged, the other tensors
        # are the same; the engine loads the wider head
        d3 = os.path.join(self.tmp, "eagle3-wide")
        quiet(train_eagle3.main, self.head_args + ["--out", d3, "--max-steps", "2", "--init-from", d, "--lr", "0",
                                                   "--max-train-convs", "100", "--draft-vocab", "384"])
        t3 = self.tensors(os.path.join(d3, "model.safetensors"))
        self.assertEqual(tuple(t3["lm_head.weight"].shape), (384, self.H))
        self.assertEqual(int(t3["t2d"].sum()), 384)
        self.assertTrue(bool(t3["t2d"][t["t2d"]].all()))
        new_id = torch.cumsum(t3["t2d"].to(torch.int64), 0) - 1
        self.assertTrue(torch.equal(t3["lm_head.weight"][new_id[used]], t["lm_head.weight"]))
        self.assertTrue(torch.equal(torch.arange(384) + t3["d2t"], torch.nonzero(t3["t2d"]).squeeze(1)))
        for k in t:
            if k not in ("lm_head.weight", "d2t", "t2d"):
                self.assertTrue(torch.equal(t[k], t3[k]), k)
        cfg3 = read_json(os.path.join(d3, "config.json"))
        self.assertEqual(cfg3["draft_vocab_size"], 384)
        self.assertGreater(engine_tau(self, self.base, "eagle3", ["--head", d3]), 1.0)
        # another recipe's export is refused
        import train_eagle
        with self.assertRaises(SystemExit):
            quiet(train_eagle.main, self.head_args + ["--out", os.path.join(self.tmp, "bad"), "--max-steps", "1",
                                                      "--init-from", d])

    def test_medusa(self):
        import train_medusa

        d = os.path.join(self.tmp, "medusa")
        quiet(train_medusa.main, self.head_args + ["--out", d, "--max-steps", "40"])
        self.assert_falls(self.losses(d), 0.9)
        want = {}
        for i in range(5):
            want.update({f"{i}.0.linear.weight": (self.H, self.H), f"{i}.0.linear.bias": (self.H,),
                         f"{i}.1.weight": (self.V, self.H)})
        t = self.tensors(os.path.join(d, "medusa_lm_head.safetensors"))
        self.assertEqual({k: tuple(v.shape) for k, v in t.items()}, want)
        cfg = read_json(os.path.join(d, "config.json"))
        self.assertEqual((cfg["medusa_num_heads"], cfg["medusa_num_layers"]), (5, 1))
        self.assertEqual(cfg["base_model_name_or_path"], self.base)
        self.assertGreater(engine_tau(self, self.base, "medusa", ["--head", d]), 1.0)

    def test_medusa_under_bf16_autocast(self):
        """--autocast bf16 on the CPU (auto's choice on AMX): the loss still falls, the export is the same tensors
        in the asked dtype, and the engine runs the heads losslessly; --autocast off runs float32."""
        import torch

        import lm_train
        import train_medusa

        make, name = lm_train.autocast_for(torch.device("cpu"), "bf16")
        with make():
            self.assertTrue(torch.is_autocast_enabled("cpu"))
            self.assertEqual(torch.get_autocast_dtype("cpu"), torch.bfloat16)
            self.assertEqual((torch.ones(4, 4) @ torch.ones(4, 4)).dtype, torch.bfloat16)
        self.assertEqual(name, "bf16 autocast")  # what the first log line names
        make, name = lm_train.autocast_for(torch.device("cpu"), "off")
        with make():
            self.assertFalse(torch.is_autocast_enabled("cpu"))
        self.assertEqual(name, "float32")
        d = os.path.join(self.tmp, "medusa-bf16")
        args = [a for a in self.head_args]
        args[args.index("--autocast") + 1] = "bf16"
        quiet(train_medusa.main, args + ["--out", d, "--max-steps", "40"])
        self.assert_falls(self.losses(d), 0.9)
        t = self.tensors(os.path.join(d, "medusa_lm_head.safetensors"))
        self.assertEqual({v.dtype for v in t.values()}, {torch.float32})
        self.assertEqual(len(t), 15)
        self.assertGreater(engine_tau(self, self.base, "medusa", ["--head", d]), 1.0)

    def test_medusa_joint(self):
        """Medusa-2: the heads and a LoRA on the top two layers, trained together from Medusa-1 heads. The export
        is a peft adapter whose model is what the recipe's forward computed, with the heads beside it, and the
        engine runs the fine-tuned model with those heads losslessly against its own vanilla."""
        import torch
        from peft import PeftModel
        from transformers import LlamaForCausalLM

        import lora
        import streaming_model as sm
        import train_medusa

        m1 = os.path.join(self.tmp, "medusa1-for-joint")
        quiet(train_medusa.main, self.head_args + ["--out", m1, "--max-steps", "20"])
        d = os.path.join(self.tmp, "medusa2")
        quiet(train_medusa.main, self.head_args + ["--out", d, "--max-steps", "30", "--joint-layers", "2",
                                                   "--init-from", m1, "--heads-coefficient", "1.0"])
        log = [r for r in read_lines(os.path.join(d, "train_log.jsonl")) if not r.get("final")]
        self.assertEqual(log[0]["kl"], 0.0)  # B starts at zero: the first step is the base's forward exactly
        self.assertGreater(max(r["kl"] for r in log), 0.0)  # ... and the backbone moves
        self.assert_falls([r["loss"] for r in log], 0.95)
        self.assertFalse(os.path.exists(os.path.join(d, "config.json")))  # an adapter directory, for the engine
        ac = read_json(os.path.join(d, "adapter_config.json"))
        self.assertEqual((ac["peft_type"], ac["r"], ac["layers_to_transform"]), ("LORA", 16, [1, 2]))
        hc = read_json(os.path.join(d, "heads", "config.json"))
        self.assertEqual((hc["medusa_num_heads"], hc["base_model_name_or_path"]), (5, ".."))
        t = self.tensors(os.path.join(d, "heads", "medusa_lm_head.safetensors"))
        self.assertEqual(tuple(t["4.1.weight"].shape), (self.V, self.H))
        # The heads moved from their Medusa-1 start.
        t1 = self.tensors(os.path.join(m1, "medusa_lm_head.safetensors"))
        self.assertFalse(torch.equal(t["0.0.linear.weight"], t1["0.0.linear.weight"]))
        # peft's model on the base is the recipe's forward with the trained LoRA (resumed from the last checkpoint).
        b = LlamaForCausalLM.from_pretrained(self.base, dtype=torch.float32)
        pm = PeftModel.from_pretrained(LlamaForCausalLM.from_pretrained(self.base, dtype=torch.float32), d)
        ck = torch.load(os.path.join(d + ".work", "checkpoint.pt"), map_location="cpu", weights_only=False)
        lora_sd = {k[len("lora."):]: v for k, v in ck["model"].items() if k.startswith("lora.")}
        parts = torch.nn.Module()
        parts.lora = lora.modules(b.state_dict(), [1, 2], 16)
        parts.lora.load_state_dict(lora_sd)
        parts.cfg = {"hidden_size": self.H, "num_hidden_layers": 3, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": b.config.rms_norm_eps,
                     "rope_theta": 10000.0, "msa_layers": 0, "num_streams": 0, "lora_rank": 16, "lora_alpha": 32.0}
        x = torch.randint(0, self.V, (1, 12))
        with torch.no_grad():
            ref = sm.forward({k: v.float() for k, v in b.state_dict().items()}, parts.cfg, x, parts,
                             streams=False, prune=False)["main"]
            self.assertLess(float((ref - pm(input_ids=x).logits).abs().max()), 1e-4)
            self.assertGreater(float((ref - b(input_ids=x).logits).abs().max()), 1e-4)
        self.assertGreater(engine_tau(self, d, "medusa", ["--head", os.path.join(d, "heads")]), 1.0)
        # A warm restart from the Medusa-2 export (as each GPU call starts from the last one's) loads the adapter
        # too: its first step is already off the base.
        d2 = os.path.join(self.tmp, "medusa2-again")
        quiet(train_medusa.main, self.head_args + ["--out", d2, "--max-steps", "1", "--joint-layers", "2",
                                                   "--init-from", d])
        self.assertGreater(read_lines(os.path.join(d2, "train_log.jsonl"))[0]["kl"], 0.0)
        # Another LoRA is refused with a message, from the export (an alpha that would rescale it silently) and
        # from the checkpoint (a rank).
        with self.assertRaises(SystemExit) as e:
            quiet(train_medusa.main, self.head_args + ["--out", os.path.join(self.tmp, "m2-bad"), "--max-steps", "1",
                                                       "--joint-layers", "2", "--lora-alpha", "16", "--init-from", d])
        self.assertIn("its adapter is", str(e.exception.code))
        with self.assertRaises(SystemExit) as e:
            quiet(train_medusa.main, self.head_args + ["--out", d2, "--max-steps", "2", "--joint-layers", "2",
                                                       "--lora-rank", "8", "--resume", "auto"])
        self.assertIn("the checkpoint trained", str(e.exception.code))
        # A Medusa-1 export into that folder leaves no adapter behind (it would read as Medusa-2's).
        quiet(train_medusa.main, self.head_args + ["--out", d2, "--work", os.path.join(self.tmp, "m1-over.work"),
                                                   "--max-steps", "1"])
        left = set(os.listdir(d2))
        self.assertTrue({"config.json", "medusa_lm_head.safetensors"} <= left, left)
        self.assertFalse({"adapter_config.json", "adapter_model.safetensors", "heads"} & left, left)

    def test_streaming(self):
        import torch
        from transformers import LlamaForCausalLM

        import streaming_model as sm
        import train_streaming

        d = os.path.join(self.tmp, "streaming")
        work = os.path.join(self.tmp, "streaming.work")
        args = ["--max-steps", "40", "--streams", "3", "--msa-layers", "2", "--stream-rank", "8", "--stream-rows", "16",
                "--work", work]
        quiet(train_streaming.main, self.head_args + ["--out", d, "--export-format", "merged"] + args)
        self.assert_falls(self.losses(d), 0.9)
        t = self.tensors(os.path.join(d, "streaming.safetensors"))
        self.assertEqual({k: tuple(v.shape) for k, v in t.items()},
                         {"stream.down.weight": (8, self.H), "stream.up.weight": (self.H, 8),
                          "stream.embeddings": (3, self.H), "prune.down.weight": (8, self.H),
                          "prune.up.weight": (self.H, 8)})
        cfg = read_json(os.path.join(d, "streaming_config.json"))
        self.assertEqual((cfg["num_streams"], cfg["msa_layers"], cfg["prune_layer"]), (3, 2, 0))
        # the engine's defaults: every stream, the whole tree
        self.assertEqual((cfg["default_streams"], cfg["total_tokens"]), (3, 0))
        self.assertTrue(0.0 < cfg["prune_threshold"] < 1.0)
        # The export is a plain Llama checkpoint whose main stream is the reference's (LoRA merged), and the
        # bottom layers are the base's, untouched.
        m = LlamaForCausalLM.from_pretrained(d, dtype=torch.float32)
        b = LlamaForCausalLM.from_pretrained(self.base, dtype=torch.float32)
        self.assertTrue(torch.equal(m.model.layers[0].mlp.up_proj.weight, b.model.layers[0].mlp.up_proj.weight))
        self.assertFalse(torch.equal(m.model.layers[2].mlp.up_proj.weight, b.model.layers[2].mlp.up_proj.weight))
        x = torch.randint(0, self.V, (1, 12))
        sd = {k: v.float() for k, v in m.state_dict().items()}
        scfg = {"hidden_size": self.H, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 16, "rms_norm_eps": m.config.rms_norm_eps, "rope_theta": 10000.0, "msa_layers": 2,
                "num_streams": 3, "stream_rank": 8, "prune_layer": 0, "prune_rank": 8, "lora_rank": 16,
                "lora_alpha": 32.0}
        with torch.no_grad():
            ref = sm.forward(sd, scfg, x, None)["main"]
            self.assertLess(float((ref - m(input_ids=x).logits).abs().max()), 1e-4)
        # The same checkpoint exported as a peft LoRA adapter (the default; resumed at its last step, so nothing
        # more is trained): peft's PeftModel on the base computes what the merged export computes.
        from peft import PeftModel

        dl = os.path.join(self.tmp, "streaming-lora")
        quiet(train_streaming.main, self.head_args + ["--out", dl, "--resume", "auto"] + args)
        self.assertFalse(os.path.exists(os.path.join(dl, "config.json")))
        ac = read_json(os.path.join(dl, "adapter_config.json"))
        self.assertEqual((ac["peft_type"], ac["r"], ac["layers_to_transform"]), ("LORA", 16, [1, 2]))
        self.assertEqual(os.path.normpath(os.path.join(dl, ac["base_model_name_or_path"])), os.path.normpath(self.base))
        self.assertFalse(read_json(os.path.join(dl, "streaming_config.json"))["lora_merged"])
        pm = PeftModel.from_pretrained(LlamaForCausalLM.from_pretrained(self.base, dtype=torch.float32), dl)
        with torch.no_grad():
            self.assertLess(float((pm(input_ids=x).logits - m(input_ids=x).logits).abs().max()), 1e-4)
        # Both layouts in the C++ engine: one target forward per step, lossless, streams accepted.
        for model_dir in (d, dl):
            self.assertGreater(engine_tau(self, model_dir, "streaming", []), 1.0, model_dir)
        # --init-from continues the LoRA export (as a new stage on other data starts from the shipped model): at
        # learning rate 0 the new export holds the same adapter and streams, and its first step is already the
        # trained model's (its loss well below the untrained start's).
        di = os.path.join(self.tmp, "streaming-again")
        shape = ["--streams", "3", "--msa-layers", "2", "--stream-rank", "8", "--stream-rows", "16",
                 "--work", os.path.join(self.tmp, "streaming-again.work")]
        quiet(train_streaming.main, self.head_args + ["--out", di, "--init-from", dl, "--max-steps", "1", "--lr", "0",
                                                      "--seed", "99", "--total-tokens", "12"] + shape)
        self.assertEqual(read_json(os.path.join(di, "streaming_config.json"))["total_tokens"], 12)
        for f in ("streaming.safetensors", "adapter_model.safetensors"):
            a, b = self.tensors(os.path.join(dl, f)), self.tensors(os.path.join(di, f))
            self.assertEqual(set(a), set(b), f)
            for k in a:
                self.assertTrue(torch.equal(a[k], b[k]), f"{f} {k}")
        first = read_lines(os.path.join(di, "train_log.jsonl"))[0]
        self.assertLess(first["loss"], self.losses(d)[0] * 0.9)
        # What cannot be continued is refused with a message: a merged export, other streams, another LoRA alpha.
        for extra, says in ((["--init-from", d], "a merged export"),
                            (["--init-from", dl, "--streams", "2", "--alphas", "1,0.8,0.6"], "this run trains"),
                            (["--init-from", dl, "--lora-alpha", "16"], "its adapter is")):
            with self.assertRaises(SystemExit) as e:
                quiet(train_streaming.main, self.head_args + ["--out", os.path.join(self.tmp, "st-bad"),
                                                              "--max-steps", "1"] + shape + extra)
            self.assertIn(says, str(e.exception.code), extra)

    def test_self_distill_command(self):
        import lm_train
        import self_distill
        import train_medusa

        common = ["--base", self.base, "--device", "cpu", "--threads", "1", "--max-new-tokens", "12",
                  "--batch-size", "3", "--shard-size", "4", "--temperature", "0.9", "--samples", "2",
                  "--progress", "lines"]
        full, part, other = (os.path.join(self.tmp, n) for n in ("sd-full", "sd-part", "sd-other"))
        r = quiet(self_distill.main, common + ["--out", full, "--limit", "7", "--seed", "7"])  # 7 -> 2 shards
        self.assertEqual((r["shards"], r["complete"]), (2, True))
        # resumable: a run that stopped after one shard, then the full command, gives the same bytes
        quiet(self_distill.main, common + ["--out", part, "--limit", "4", "--seed", "7"])
        self.assertEqual(sorted(f for f in os.listdir(part) if f.startswith("shard")), ["shard-00000.jsonl.gz"])
        r = quiet(self_distill.main, common + ["--out", part, "--limit", "8", "--seed", "7"])
        self.assertEqual(r["generated_shards"], 1)
        for k in (0, 1):
            with open(self_distill.shard_path(full, k), "rb") as a, open(self_distill.shard_path(part, k), "rb") as b:
                self.assertEqual(a.read(), b.read(), f"shard {k}")
        # another seed, other prompts; the same folder with other settings is refused
        quiet(self_distill.main, common + ["--out", other, "--limit", "4", "--seed", "8"])
        self.assertNotEqual(read_jsonl_gz(self_distill.shard_path(other, 0)),
                            read_jsonl_gz(self_distill.shard_path(full, 0)))
        with self.assertRaises(SystemExit):
            quiet(self_distill.main, common + ["--out", full, "--limit", "8", "--seed", "8"])
        # the corpus format: the seed's first prompts (their turns up to the last user turn), 2 answers each
        convs = lm_train.load_conversations(os.path.join(DATA, "train.jsonl.gz"))
        import numpy as np
        order = np.random.default_rng(7).permutation(len(convs))
        got = read_jsonl_gz(self_distill.shard_path(full, 0))
        self.assertGreater(len(got), 4)
        prompts = [self_distill.prompt_of(convs[i]) for i in order[:4]]
        for c in got:
            msgs = c["messages"]
            self.assertEqual(list(c), ["messages"])
            self.assertIn(msgs[:-1], prompts)
            self.assertEqual(msgs[-1]["role"], "assistant")
            self.assertTrue(msgs[-1]["content"] and msgs[-1]["content"] == msgs[-1]["content"].strip())
        # continuous batching (rows leave and join one KV cache) answers as one prompt at a time and as
        # transformers' generate() do, greedily
        import torch
        from tokenizers import Tokenizer
        from transformers import LlamaForCausalLM

        tk = Tokenizer.from_file(os.path.join(self.base, "tokenizer.json"))
        model = LlamaForCausalLM.from_pretrained(self.base, dtype=torch.float32).eval()
        ps = [self_distill.prompt_ids(tk, self_distill.prompt_of(convs[i])) for i in order[:6]]
        stops = self_distill.stop_ids(tk)
        batched, _ = self_distill.generate(model, ps, 10, stops, batch=2)
        for p, a in zip(ps, batched):
            self.assertEqual(a, self_distill.generate(model, [p], 10, stops)[0][0])
            y = model.generate(input_ids=torch.tensor([p]), max_new_tokens=10, do_sample=False, eos_token_id=stops,
                               pad_token_id=stops[1])[0, len(p):].tolist()
            self.assertEqual(a, [t for t in y if t not in stops])
        # a head recipe trains on the corpus plus the shards (--extra-train)
        d = os.path.join(self.tmp, "medusa-extra")
        buf = io.StringIO()
        with redirect_stdout(buf):
            s = train_medusa.main(self.head_args + ["--out", d, "--max-steps", "2", "--max-train-convs", "50",
                                                    "--extra-train", full])
        self.assertEqual(s["extra_train"], [os.path.abspath(full)])
        n = len(got) + len(read_jsonl_gz(self_distill.shard_path(full, 1)))
        self.assertIn(f"train: {50 + n} conversations", buf.getvalue())

    def test_self_distill(self):
        import train_medusa

        d = os.path.join(self.tmp, "medusa-sd")
        s = quiet(train_medusa.main, self.head_args + ["--out", d, "--max-steps", "3", "--self-distill", "12",
                                                       "--sd-max-new", "16", "--sd-batch", "6"])
        self.assertEqual(s["self_distill"], 12)
        convs = read_jsonl_gz(os.path.join(d + ".work", "self-distill-12", "train.jsonl.gz"))
        self.assertGreater(len(convs), 6)
        self.assertEqual(convs[0]["messages"][-1]["role"], "assistant")


class GpuTrainShapes(unittest.TestCase):
    """scripts/gpu-train.sh decides before a device call whether a base (and its EAGLE-3 head) will come back within
    the 64 MiB a call returns: a wrong count loses the whole call. Its counts must equal the bf16 bytes of the models
    the recipes build for that shape: transformers' Llama for the base (tied embedding), heads.Eagle3Head over the
    whole vocabulary with its d2t (int64) and t2d (bool) buffers."""

    SCRIPT = os.path.join(ROOT, "scripts", "gpu-train.sh")

    def shape(self, s):
        out = subprocess.run(["bash", self.SCRIPT, "shape", s], capture_output=True, text=True, check=True).stdout
        lines = out.strip().splitlines()
        words = lines[0].split()
        opts = {words[i].lstrip("-").replace("-", "_"): int(words[i + 1]) for i in range(0, len(words), 2)}
        counts = dict(line.split() for line in lines[1:])
        return opts, int(counts["bytes"]), int(counts["eagle3_bytes"])

    def test_counts_equal_the_models_bytes(self):
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        import heads

        vocab = 4096  # the shipped tokenizer's, which every base of gpu-train.sh uses
        for s in ("512x8", "512x10", "640x6", "64x7"):
            opts, base_bytes, head_bytes = self.shape(s)
            cfg = LlamaConfig(vocab_size=vocab, hidden_size=opts["hidden"], num_hidden_layers=opts["layers"],
                              num_attention_heads=opts["heads"], num_key_value_heads=opts["kv_heads"],
                              intermediate_size=opts["intermediate"], head_dim=64, tie_word_embeddings=True)
            with torch.device("meta"):
                base = LlamaForCausalLM(cfg)
            self.assertEqual(base_bytes, 2 * sum(p.numel() for p in base.parameters()), s)
            c = {"H": opts["hidden"], "TH": opts["hidden"], "I": opts["intermediate"], "nh": opts["heads"],
                 "nkv": opts["kv_heads"], "hd": 64, "eps": 1e-5, "theta": 10000.0}
            with torch.device("meta"):
                head = heads.Eagle3Head(c, torch.arange(vocab), torch.ones(vocab, dtype=torch.bool))
            want = 2 * sum(p.numel() for p in head.parameters()) + sum(
                b.numel() * b.element_size() for b in head.buffers())
            self.assertEqual(head_bytes, want, s)

    def test_pack_refuses_what_cannot_come_back(self):
        for args, words in ((["--with-head", "eagle3", "--shape", "512x9"], "more than one call brings back"),
                            (["--shape", "512x11"], "more than one call brings back"),
                            (["--with-head", "eagle3", "--shape", "512x6"], "7 layers or more"),
                            (["--with-head", "medusa"], "only eagle3")):
            with tempfile.TemporaryDirectory() as out:  # (a pack that wrongly went on would leave its bundle here)
                r = subprocess.run(["bash", self.SCRIPT, "pack", "--head", "base", "--out", out] + args,
                                   capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(words, r.stderr, args)


class AverageHeads(unittest.TestCase):
    """training/average_heads.py: float tensors are averaged, index maps must agree, config comes from the last."""

    def _head(self, folder, w, d2t, note):
        import torch
        from safetensors.torch import save_file
        os.makedirs(folder)
        save_file({"fc.weight": torch.tensor(w, dtype=torch.bfloat16), "d2t": torch.tensor(d2t, dtype=torch.int64)},
                  os.path.join(folder, "model.safetensors"))
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump({"note": note}, f)

    def test_average_and_refusals(self):
        import torch
        from safetensors.torch import load_file
        import average_heads
        with tempfile.TemporaryDirectory() as tmp:
            a, b, c, out = (os.path.join(tmp, n) for n in ("a", "b", "c", "out"))
            self._head(a, [[1.0, 2.0], [3.0, -4.0]], [0, 1, 2], "a")
            self._head(b, [[3.0, 2.0], [5.0, 4.0]], [0, 1, 2], "b")
            self._head(c, [[3.0, 2.0], [5.0, 4.0]], [0, 2, 1], "c")
            average_heads.main(["--out", out, a, b])
            t = load_file(os.path.join(out, "model.safetensors"))
            self.assertEqual(t["fc.weight"].dtype, torch.bfloat16)
            self.assertTrue(torch.equal(t["fc.weight"].float(), torch.tensor([[2.0, 2.0], [4.0, 0.0]])))
            self.assertTrue(torch.equal(t["d2t"], torch.tensor([0, 1, 2])))
            with open(os.path.join(out, "config.json")) as f:
                self.assertEqual(json.load(f)["note"], "b")
            with open(os.path.join(out, "averaged_from.json")) as f:
                self.assertEqual(len(json.load(f)["sources"]), 2)
            with self.assertRaises(SystemExit) as e:
                average_heads.main(["--out", os.path.join(tmp, "bad"), a, c])
            self.assertIn("d2t", str(e.exception))


if __name__ == "__main__":
    unittest.main()
