#!/usr/bin/env python3
"""Builds SpecScope's chat corpus from text that Debian packages ship (see SOURCES.md, fetch_sources.sh).

Sources (all read from the installed packages; nothing is downloaded here):
  * WordNet 3.0 (wordnet-base): definitions, examples, synonyms, antonyms, kinds/parts, word comparisons,
    reverse-dictionary questions, irregular forms, spelling.
  * The Jargon File 4.4.7 (dict-jargon): hacker-slang entries, reflowed.
  * The Devil's Dictionary (dict-devil): Ambrose Bierce's satirical definitions.
  * The Elements database (dict-elements): symbols, atomic numbers and weights, descriptions.
  * Docstrings of Python 3.11's standard library (libpython3.11-stdlib, /usr/lib/python3.11).
  * A small synthetic slice (arithmetic) generated here.
  * With --with-docs (for a base larger than the shipped one; issue 19): prose of the Python 3.11, SQLite and
    PostgreSQL 15 manuals (doc_sections.py). The shipped corpus is built without it.

Output (deterministic for a given --seed and package versions):
  training/data/train.jsonl.gz, validation.jsonl.gz   one {"messages": [...]} per line
  training/data/train.txt.gz, validation.txt.gz       the same conversations rendered with the chat template
                                                      (each starts with <|begin_of_text|>; one "\\n" between)
  training/data/stats.json                            counts and sizes per source and split
  assets/prompts/heldout.jsonl                        held-out prompts from the validation split

The split is by subject (a WordNet lemma, a jargon headword, an element...), so a validation word is never
defined in train under any phrasing; held-out prompts are additionally checked to be absent from train.

Usage: python3 training/corpus/build_corpus.py [--out training/data] [--seed 1234] [--max-chars 40000000]
       [--limit-synsets N]   (a small slice for tests)
"""
import argparse
import gzip
import hashlib
import json
import os
import random
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from chat_format import render  # noqa: E402
from doc_sections import doc_items, missing_manuals  # noqa: E402

WORDNET_DIR = "/usr/share/wordnet"
DICTD_DIR = "/usr/share/dictd"
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
POS_NAME = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
POS_PLURAL = {"n": "nouns", "v": "verbs", "a": "adjectives", "r": "adverbs"}

# WordNet lexicographer files (lexnames(5WN)): a plain-words category for the noun and verb files.
LEX_CATEGORY = {
    4: "an act or action", 5: "an animal", 6: "a man-made object", 7: "an attribute or quality",
    8: "a part of the body", 9: "a thought or idea", 10: "a form of communication", 11: "an event",
    12: "a feeling or emotion", 13: "a food or drink", 14: "a group of people or things", 15: "a place",
    16: "a goal or motive", 17: "a natural object", 18: "a person", 19: "a natural phenomenon",
    20: "a plant", 21: "a possession", 22: "a natural process", 23: "a quantity or unit of measure",
    24: "a relation", 25: "a shape", 26: "a state or condition", 27: "a substance", 28: "a time or period",
    29: "grooming, dressing or bodily care", 30: "change", 31: "thinking or judging",
    32: "communication", 33: "fighting or competition", 34: "eating and drinking",
    35: "touching or hitting", 36: "making or creating", 37: "feeling", 38: "motion",
    39: "perception", 40: "owning or exchanging", 41: "social activity", 42: "being or having",
    43: "the weather",
}

SYSTEM_PROMPTS = [
    "You are a helpful assistant.",
    "You are a concise and friendly assistant.",
    "You are a helpful dictionary assistant. Answer clearly.",
    "Answer the user's question accurately.",
]


# ----------------------------------------------------------------------------------------------- helpers
def stable_hash(s: str) -> int:
    return int.from_bytes(hashlib.sha1(s.encode("utf-8")).digest()[:8], "big")


def rng_for(seed, *key) -> random.Random:
    return random.Random(f"{seed}:" + ":".join(str(k) for k in key))


def article(phrase: str) -> str:
    w = phrase.lower()
    if re.match(r"(uni|use|usu|uti|one|once|eu|ewe|u\b)", w):
        return "a"
    if re.match(r"(hour|honest|honor|honour|heir)", w) or re.match(r"[aeiou]", w):
        return "an"
    return "a"


def with_article(phrase: str) -> str:
    return f"{article(phrase)} {phrase}"


def np_phrase(d: str) -> str:
    """A noun-phrase definition with an article in front unless it has a determiner already."""
    return d if re.match(r"(a|an|the|any|one|some|either|each|several|two|three)\b", d) else with_article(d)


def cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def join_list(items, conj="and"):
    items = list(items)
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    return ", ".join(items[:-1]) + f", {conj} " + items[-1]


def q(w):  # quoted word
    return f'"{w}"'


def end_sentence(s: str) -> str:
    s = s.strip()
    return s if s.endswith((".", "!", "?")) else s + "."


# ----------------------------------------------------------------------------------------------- WordNet
class Synset:
    __slots__ = ("off", "pos", "lex", "words", "ptrs", "definition", "examples")

    def __init__(self, off, pos, lex, words, ptrs, definition, examples):
        self.off, self.pos, self.lex, self.words, self.ptrs = off, pos, lex, words, ptrs
        self.definition, self.examples = definition, examples


def parse_gloss(gloss: str):
    parts = [p.strip() for p in re.split(r';\s*(?=(?:[^"]*"[^"]*")*[^"]*$)', gloss) if p.strip()]
    defs, exs = [], []
    for p in parts:
        if p.startswith('"'):
            ex = p.strip().strip('"').strip()
            ex = ex.replace('"', "")
            if ex:
                exs.append(ex)
        else:
            defs.append(p)
    return "; ".join(defs).strip(), exs


def clean_word(w: str) -> str:
    w = re.sub(r"\((a|p|ip)\)$", "", w)
    return w.replace("_", " ")


class WordNet:
    def __init__(self, root=WORDNET_DIR, limit=None):
        self.synsets = {}  # (pos, off) -> Synset
        for pos, fname in POS_FILES.items():
            with open(os.path.join(root, f"data.{fname}"), encoding="utf-8") as f:
                n = 0
                for line in f:
                    if line.startswith("  "):
                        continue
                    head, _, gloss = line.partition(" | ")
                    t = head.split()
                    off, lex, ss_type = t[0], int(t[1]), t[2]
                    wcnt = int(t[3], 16)
                    words = [clean_word(t[4 + 2 * i]) for i in range(wcnt)]
                    i = 4 + 2 * wcnt
                    pcnt = int(t[i])
                    ptrs = []
                    for k in range(pcnt):
                        sym, toff, tpos, st = t[i + 1 + 4 * k: i + 5 + 4 * k]
                        ptrs.append((sym, "a" if tpos == "s" else tpos, toff, int(st[:2], 16), int(st[2:], 16)))
                    definition, examples = parse_gloss(gloss.strip())
                    self.synsets[(pos, off)] = Synset(off, ss_type, lex, words, ptrs, definition, examples)
                    n += 1
                    if limit and n >= limit:
                        break
        # index: lemma -> synsets in sense-frequency order, and how many senses are attested in SemCor
        self.index = {}
        for pos, fname in POS_FILES.items():
            with open(os.path.join(root, f"index.{fname}"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("  "):
                        continue
                    t = line.split()
                    lemma, scnt, pcnt = t[0], int(t[2]), int(t[3])
                    tagged = int(t[5 + pcnt])
                    offs = t[6 + pcnt: 6 + pcnt + scnt]
                    keys = [(pos, o) for o in offs if (pos, o) in self.synsets]
                    if keys:
                        self.index[(lemma, pos)] = (keys, tagged)
        self.exc = {}
        for pos in ("noun", "verb"):
            pairs = []
            with open(os.path.join(root, f"{pos}.exc"), encoding="utf-8") as f:
                for line in f:
                    t = line.split()
                    if len(t) >= 2:
                        pairs.append((t[0].replace("_", " "), t[1].replace("_", " ")))
            self.exc[pos] = pairs

    def get(self, pos, off):
        return self.synsets.get((pos, off))

    def related(self, ss, symbols):
        out = []
        for sym, tpos, toff, _, _ in ss.ptrs:
            if sym in symbols:
                t = self.get(tpos, toff)
                if t is not None:
                    out.append(t)
        return out

    def antonyms(self, ss, word_index):
        """Lexical antonyms of the word at 1-based word_index in ss: list of (word, synset)."""
        out = []
        for sym, tpos, toff, src, tgt in ss.ptrs:
            if sym == "!" and src == word_index:
                t = self.get(tpos, toff)
                if t is not None and 1 <= tgt <= len(t.words):
                    out.append((t.words[tgt - 1], t))
        return out


def good_word(w: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z' .-]*", w)) and len(w) <= 40


def simple_word(w: str) -> bool:
    return bool(re.fullmatch(r"[a-z]+", w)) and 2 <= len(w) <= 16


def definition_sentence(word, ss):
    """A sentence that defines `word` in sense `ss`."""
    d = ss.definition
    domain = ""
    m = re.match(r"^\(([^)]{2,40})\)\s*(.*)$", d)
    if m and not m.group(1).startswith(("usually", "often", "sometimes", "followed", "of ", "used")):
        domain, d = m.group(1), m.group(2)
    if not d:
        return None
    pre = f"In {domain}, " if domain else ""
    if ss.pos == "n":
        if word[:1].isupper():
            subj = word
        else:
            subj = with_article(word)
        s = f"{pre}{subj} is {d}" if pre else f"{cap(subj)} is {d}"
    elif ss.pos == "v":
        s = f"{pre}to {word} means to {d}" if pre else f"To {word} means to {d}"
        s = re.sub(r"means to to ", "means to ", s)
    elif ss.pos in ("a", "s"):
        s = f"{pre}{q(word)} means {d}" if pre else f"{cap(q(word))} means {d}"
    else:
        s = f"{pre}the adverb {q(word)} means {d}" if pre else f"The adverb {q(word)} means {d}"
    return cap(end_sentence(s))


def synonyms_of(word, ss, n=4):
    return [w for w in ss.words if w.lower() != word.lower()][:n]


# Question phrasings, per task. {w} is the word.
PH_DEFINE = [
    'What does "{w}" mean?', "What does {w} mean?", "Define {w}.", 'Define the word "{w}".',
    'What is the meaning of "{w}"?', "What is the meaning of the word {w}?", 'Can you explain the word "{w}"?',
    "Explain what {w} means.", 'What is the definition of "{w}"?', "{w}: what does it mean?",
    'I saw the word "{w}" today. What does it mean?', "Give me the definition of {w}.",
]
PH_WHATIS_N = ["What is {a}?", "What's {a}?", "Tell me what {a} is.", "Can you tell me what {a} is?"]
PH_WHATIS_PROPER = ["What is {w}?", "Tell me about {w}.", "What can you tell me about {w}?"]
PH_WHO = ["Who was {w}?", "Who is {w}?", "Tell me about {w}.", "What is {w} known for?"]
PH_WHATIS_V = ['What does it mean to {w}?', 'What does the verb "{w}" mean?', 'What does "to {w}" mean?']
PH_SENTENCE = [
    'Use "{w}" in a sentence.', "Use the word {w} in a sentence.", 'Give me an example sentence with "{w}".',
    'How do you use the word "{w}"?', "Can you show me how {w} is used?", 'Write a sentence using "{w}".',
]
PH_SYNONYM = [
    'What is another word for "{w}"?', "What's a synonym for {w}?", 'Give me synonyms for "{w}".',
    "What are some other words for {w}?", 'Which words mean the same as "{w}"?',
]
PH_ANTONYM = [
    'What is the opposite of "{w}"?', "What's the opposite of {w}?", 'What is an antonym of "{w}"?',
    "Give me an antonym for {w}.", 'Which word means the opposite of "{w}"?',
]
PH_KIND_OF = [
    "What kind of thing is {a}?", "What is {a} a type of?", "What category does {w} belong to?",
    'Is "{w}" a kind of something?', "{A} is a kind of what?",
]
PH_KINDS = [
    "Name some kinds of {w}.", "What are some types of {w}?", "Give me examples of {w}.",
    "List a few kinds of {w}.", "What different kinds of {w} are there?",
]
PH_PARTS = ["What are the parts of {a}?", "What parts does {a} have?", "Name the parts of {a}."]
PH_PART_OF = ["What is {a} part of?", "{A} is part of what?", "Where would you find {a}?"]
PH_MEMBERS = ["Who or what belongs to {a}?", "What are the members of {a}?"]
PH_COMPARE = [
    "What is the difference between {a} and {b}?", "How is {a} different from {b}?",
    "Compare {a} and {b}.", "{A} or {b}: what's the difference?",
]
PH_YESNO = ["Is {a} a kind of {b}?", "Is {a} a type of {b}?", "Is it true that {a} is a kind of {b}?"]
PH_REVERSE = [
    'What is the word for "{d}"?', "Which word means {d}?", "What do you call {d}?",
    'Is there a word that means "{d}"?', "I'm looking for a word that means {d}.",
]
PH_PLURAL = ['What is the plural of "{w}"?', "What's the plural of {w}?", 'How do you say more than one "{w}"?']
PH_BASE_VERB = ['What is the base form of the verb "{w}"?', '"{w}" is a form of which verb?']
PH_SPELL = ['How do you spell "{w}"?', "Spell the word {w}.", 'Spell "{w}" letter by letter.']
PH_LETTERS = ['How many letters are in the word "{w}"?', 'How many letters does "{w}" have?']
PH_FOLLOW_SENT = ["Can you use it in a sentence?", "Give me an example.", "How would I use it?"]
PH_FOLLOW_SYN = ["Any synonyms?", "What are some other words for it?", "Is there another word for that?"]
PH_FOLLOW_ANT = ["And what is its opposite?", "What's the opposite?", "What word means the opposite?"]


def pick(rng, phr, **kw):
    s = rng.choice(phr)
    a = kw.get("a")
    if isinstance(a, str):
        kw.setdefault("A", cap(a))
    return s.format(**kw)


def conv(*turns):
    msgs = []
    for i, t in enumerate(turns):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": t})
    return msgs


class WordNetTasks:
    """Yields (subject, category, messages) for WordNet-based questions."""

    def __init__(self, wn: WordNet, seed: int):
        self.wn, self.seed = wn, seed

    # -- word-level definitions (all senses) --------------------------------------------------------
    def define_word(self, lemma, rng):
        wn = self.wn
        entries = []
        for pos in ("n", "v", "a", "r"):
            item = wn.index.get((lemma, pos))
            if item:
                entries.append((pos, [wn.synsets[k] for k in item[0]]))
        if not entries:
            return None
        display = lemma.replace("_", " ")
        total = sum(len(s) for _, s in entries)
        lines = []
        if total == 1:
            pos, (ss,) = entries[0]
            sent = definition_sentence(self.form_in(display, ss), ss)
            if not sent:
                return None
            lines.append(sent)
            if ss.examples:
                lines.append(f'For example: "{ss.examples[0]}".')
            syn = synonyms_of(display, ss)
            if syn:
                lines.append(f"Other words with the same meaning: {join_list(syn)}.")
            return " ".join(lines)
        posnames = [POS_NAME[p] for p, _ in entries]
        if len(entries) == 1:
            lines.append(f"{q(display)} is {with_article(posnames[0])} with {total} meanings.")
        else:
            lines.append(f"{q(display)} can be {join_list([with_article(p) for p in posnames], 'or')}.")
        for pos, sss in entries:
            shown = sss[:3]
            if len(entries) > 1:
                lines.append("")
                lines.append(f"As {with_article(POS_NAME[pos])}:")
            else:
                lines.append("")
            for i, ss in enumerate(shown, 1):
                d = ss.definition
                if not d:
                    continue
                item = f"{i}. {cap(end_sentence(d))}"
                syn = synonyms_of(display, ss, 3)
                if syn and rng.random() < 0.7:
                    item += f" Also: {join_list(syn)}."
                if ss.examples and rng.random() < 0.8:
                    item += f' Example: "{ss.examples[0]}".'
                lines.append(item)
            if len(sss) > len(shown):
                more = len(sss) - len(shown)
                lines.append(f"(There {'is' if more == 1 else 'are'} {more} more, less common "
                             f"{'sense' if more == 1 else 'senses'} as {with_article(POS_NAME[pos])}.)")
        return "\n".join(lines)

    def form_in(self, display, ss):
        for w in ss.words:
            if w.lower() == display.lower():
                return w
        return display

    # -- per-synset questions -------------------------------------------------------------------------
    def synset_tasks(self, ss, rng):
        """All applicable (category, messages, subject) items for one synset; the caller samples."""
        wn, out = self.wn, []
        words = [w for w in ss.words if good_word(w)]
        if not words or not ss.definition:
            return out
        w = words[0]
        subj = w.lower()
        is_proper = w[:1].isupper()
        inst_hyper = wn.related(ss, {"@i"})
        hyper = wn.related(ss, {"@"})

        # what is X / who was X
        sent = definition_sentence(w, ss)
        if sent:
            if ss.pos == "n":
                if inst_hyper and ss.lex == 18:
                    d = ss.definition
                    body = f"{w} was {np_phrase(d)}."
                    body = cap(body)
                    user = pick(rng, PH_WHO, w=w)
                elif is_proper:
                    user = pick(rng, PH_WHATIS_PROPER, w=w)
                    d = ss.definition
                    body = cap(f"{w} is {np_phrase(d)}.")
                else:
                    user = pick(rng, PH_WHATIS_N, a=with_article(w), w=w)
                    body = sent
                extra = []
                if ss.examples:
                    extra.append(f'For example: "{ss.examples[0]}".')
                if hyper and not is_proper:
                    h = hyper[0].words[0]
                    extra.append(f"It is a kind of {h}.")
                if inst_hyper:
                    h = inst_hyper[0].words[0]
                    extra.append(f"{w} is an example of {with_article(h.lower() if h[:1].islower() else h)}.")
                syn = synonyms_of(w, ss, 3)
                if syn:
                    extra.append(f"It is also called {join_list(syn, 'or')}.")
                out.append(("wordnet/what-is", conv(user, " ".join([body] + extra)), subj))
            elif ss.pos == "v":
                user = pick(rng, PH_WHATIS_V, w=w)
                body = sent
                if ss.examples:
                    body += f' For example: "{ss.examples[0]}".'
                syn = synonyms_of(w, ss, 3)
                if syn:
                    body += f" Similar verbs: {join_list(syn)}."
                out.append(("wordnet/what-is", conv(user, body), subj))

        # examples
        exs = [e for e in ss.examples if re.search(r"\b" + re.escape(w.split()[0][:4]), e, re.I)]
        if exs and not is_proper:
            user = pick(rng, PH_SENTENCE, w=w)
            if len(exs) == 1:
                body = f'Here is an example: "{cap(end_sentence(exs[0]))}"'
            else:
                body = "Here are some examples:\n" + "\n".join(f'- "{cap(end_sentence(e))}"' for e in exs[:4])
            body += f"\n\nHere {q(w)} means {ss.definition.split(';')[0]}."
            out.append(("wordnet/sentence", conv(user, body), subj))

        # synonyms
        syn = synonyms_of(w, ss, 6)
        if syn and not is_proper:
            user = pick(rng, PH_SYNONYM, w=w)
            if len(syn) == 1:
                body = f"Another word for {q(w)} is {q(syn[0])}."
            else:
                body = f"Other words for {q(w)} are {join_list([q(s) for s in syn])}."
            body += f" In this sense, {q(w)} means {ss.definition.split(';')[0]}."
            out.append(("wordnet/synonym", conv(user, body), subj))

        # antonyms
        for idx, word in enumerate(ss.words, 1):
            if not good_word(word):
                continue
            ants = wn.antonyms(ss, idx)
            if ants:
                a_word, a_ss = ants[0]
                user = pick(rng, PH_ANTONYM, w=word)
                body = (f"The opposite of {q(word)} is {q(a_word)}. {cap(q(word))} means "
                        f"{ss.definition.split(';')[0]}, while {q(a_word)} means {a_ss.definition.split(';')[0]}.")
                out.append(("wordnet/antonym", conv(user, body), word.lower()))
                break

        if ss.pos == "n" and not is_proper:
            # what kind of thing: hypernym chain
            if hyper:
                chain = [hyper[0]]
                while len(chain) < 3:
                    nxt = wn.related(chain[-1], {"@"})
                    if not nxt:
                        break
                    chain.append(nxt[0])
                names = [c.words[0] for c in chain]
                user = pick(rng, PH_KIND_OF, a=with_article(w), w=w)
                body = f"{cap(with_article(w))} is a kind of {names[0]}: {ss.definition.split(';')[0]}."
                if len(names) > 1:
                    steps = join_list([f"{with_article(names[i])} is a kind of {names[i + 1]}"
                                       for i in range(len(names) - 1)])
                    body += f" Going further up, {steps}."
                cat = LEX_CATEGORY.get(ss.lex)
                if cat:
                    body += f" In short, {with_article(w)} is {cat}."
                out.append(("wordnet/kind-of", conv(user, body), subj))
                # yes/no
                if len(names) >= 2:
                    if rng.random() < 0.5:
                        target = rng.choice(names)
                        body = (f"Yes. {cap(with_article(w))} is a kind of {names[0]}"
                                + (f", which is a kind of {names[1]}" if names[0] != target else "") + ".")
                        if names[0] != target and target != names[1]:
                            body += f" So {with_article(w)} is ultimately a kind of {target}."
                    else:
                        sibling = self.unrelated_noun(ss, rng)
                        if sibling is None:
                            target = None
                        else:
                            target = sibling.words[0]
                            body = (f"No. {cap(with_article(w))} is a kind of {names[0]}, not {with_article(target)}."
                                    f" {cap(with_article(target))} is {sibling.definition.split(';')[0]}.")
                    if target:
                        user = pick(rng, PH_YESNO, a=with_article(w), b=target)
                        out.append(("wordnet/yes-no", conv(user, body), subj))
            # kinds of X
            hypo = [h for h in wn.related(ss, {"~"}) if good_word(h.words[0])]
            if len(hypo) >= 2:
                rng.shuffle(hypo)
                shown = hypo[:rng.choice([3, 4, 5, 6])]
                user = pick(rng, PH_KINDS, w=w if w[:1].isupper() else w)
                lines = [f"Here are some kinds of {w}:"]
                for h in shown:
                    lines.append(f"- {h.words[0]}: {h.definition.split(';')[0]}")
                out.append(("wordnet/kinds", conv(user, "\n".join(lines)), subj))
            # parts
            parts = [p for p in wn.related(ss, {"%p"}) if good_word(p.words[0])]
            if parts:
                user = pick(rng, PH_PARTS, a=with_article(w), w=w)
                names = [p.words[0] for p in parts[:8]]
                body = f"{cap(with_article(w))} has these parts: {join_list(names)}."
                if rng.random() < 0.6:
                    p = parts[0]
                    body += f" For example, {with_article(p.words[0])} is {p.definition.split(';')[0]}."
                out.append(("wordnet/parts", conv(user, body), subj))
            holo = [p for p in wn.related(ss, {"#p"}) if good_word(p.words[0])]
            if holo:
                user = pick(rng, PH_PART_OF, a=with_article(w), w=w)
                h = holo[0]
                body = (f"{cap(with_article(w))} is part of {with_article(h.words[0])}. "
                        f"{cap(with_article(h.words[0]))} is {h.definition.split(';')[0]}.")
                out.append(("wordnet/part-of", conv(user, body), subj))
            # compare with a sibling
            if hyper:
                sibs = [s for s in wn.related(hyper[0], {"~"}) if s is not ss and good_word(s.words[0])
                        and s.words[0][:1].islower()]
                if sibs:
                    s = rng.choice(sibs)
                    b = s.words[0]
                    user = pick(rng, PH_COMPARE, a=with_article(w), b=with_article(b))
                    body = (f"Both {with_article(w)} and {with_article(b)} are kinds of {hyper[0].words[0]}. "
                            f"The difference: {with_article(w)} is {ss.definition.split(';')[0]}, while "
                            f"{with_article(b)} is {s.definition.split(';')[0]}.")
                    out.append(("wordnet/compare", conv(user, body), subj))

        # reverse dictionary
        d = ss.definition.split(";")[0].strip()
        if 12 <= len(d) <= 90 and not d.startswith("(") and not is_proper:
            user = pick(rng, PH_REVERSE, d=d)
            body = f"The word you are looking for is {q(w)}"
            syn = synonyms_of(w, ss, 3)
            body += f". You could also say {join_list([q(s) for s in syn], 'or')}." if syn else "."
            if ss.pos in POS_NAME:
                body += f" It is {with_article(POS_NAME[ss.pos])}."
            out.append(("wordnet/reverse", conv(user, body), subj))
        return out

    def unrelated_noun(self, ss, rng):
        """A common category noun that is none of ss's ancestors (for 'No' answers), or None."""
        cats = self._categories()
        banned = self.ancestor_words(ss)
        for _ in range(8):
            cand = rng.choice(cats)
            if cand.lex != ss.lex and not (set(w.lower() for w in cand.words) & banned):
                return cand
        return None

    def ancestor_words(self, ss):
        seen, stack, words = set(), [ss], set()
        while stack:
            cur = stack.pop()
            for h in self.wn.related(cur, {"@", "@i"}):
                if h.off not in seen:
                    seen.add(h.off)
                    words.update(w.lower() for w in h.words)
                    stack.append(h)
        words.update(w.lower() for w in ss.words)
        return words

    def _categories(self):
        """The 400 noun synsets most often named as a direct hypernym, with plain one-word names."""
        if not hasattr(self, "_cat_list"):
            cnt = Counter()
            for (p, _), s in self.wn.synsets.items():
                if p == "n":
                    for h in self.wn.related(s, {"@"}):
                        if simple_word(h.words[0]):
                            cnt[(h.pos, h.off)] += 1
            top = sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[:400]
            self._cat_list = [self.wn.get("n", off) for (_, off), _ in top]
        return self._cat_list

    # -- word forms and spelling ---------------------------------------------------------------------
    def forms(self, rng):
        for inflected, base in self.wn.exc["noun"]:
            if simple_word(inflected) and simple_word(base) and inflected != base:
                user = pick(rng, PH_PLURAL, w=base)
                body = f"The plural of {q(base)} is {q(inflected)}."
                yield base, "wordnet/plural", conv(user, body)
        for inflected, base in self.wn.exc["verb"]:
            if simple_word(inflected) and simple_word(base) and inflected != base:
                user = pick(rng, PH_BASE_VERB, w=inflected)
                body = f"{cap(q(inflected))} is a form of the verb {q(base)}."
                yield base, "wordnet/verb-form", conv(user, body)

    def spelling(self, lemma, rng):
        w = lemma
        if rng.random() < 0.6:
            user = pick(rng, PH_SPELL, w=w)
            body = f"{cap(q(w))} is spelled {'-'.join(w.upper())}."
            return "wordnet/spell", conv(user, body)
        user = pick(rng, PH_LETTERS, w=w)
        body = f"The word {q(w)} has {len(w)} letters: {'-'.join(w.upper())}."
        return "wordnet/letters", conv(user, body)


# ----------------------------------------------------------------------------------------------- dictd
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64num(s):
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def read_dictd(name):
    with gzip.open(os.path.join(DICTD_DIR, f"{name}.dict.dz")) as f:
        data = f.read()
    out = []
    seen = set()
    with open(os.path.join(DICTD_DIR, f"{name}.index"), encoding="utf-8") as f:
        for line in f:
            t = line.rstrip("\n").split("\t")
            if len(t) < 3 or t[0].startswith("00-database") or t[0].startswith("00database"):
                continue
            o, n = b64num(t[1]), b64num(t[2])
            if (o, n) in seen:
                continue
            seen.add((o, n))
            out.append((t[0], data[o:o + n].decode("utf-8", errors="replace")))
    return out


def reflow(block_lines):
    """Joins hard-wrapped lines into paragraphs; keeps indented verse/code lines as lines."""
    paras, cur = [], []
    for ln in block_lines:
        if not ln.strip():
            if cur:
                paras.append(" ".join(cur))
                cur = []
            continue
        cur.append(ln.strip())
    if cur:
        paras.append(" ".join(cur))
    return paras


def unbrace(s):
    s = re.sub(r"\{\s*([^{}]*?)\s*\}", r"\1", s)
    s = re.sub(r"_([A-Za-z][^_]{0,60})_", r"\1", s)
    return re.sub(r"[ \t]+", " ", s).strip()


POS_ABBR = {"n.": "noun", "v.": "verb", "v.t.": "verb", "v.i.": "verb", "adj.": "adjective",
            "adv.": "adverb", "interj.": "interjection", "pron.": "pronoun", "prep.": "preposition",
            "conj.": "conjunction", "x.": None, "p.p.": "past participle", "pp.": "past participle"}

PH_JARGON = [
    'What does "{w}" mean in hacker slang?', "In hacker jargon, what is {w}?", 'What is "{w}" in the Jargon File?',
    'Explain the hacker term "{w}".', "What does {w} mean to a hacker?", 'I heard a programmer say "{w}". What does it mean?',
]
PH_DEVIL = [
    "How does Ambrose Bierce define {w}?", "What does the Devil's Dictionary say about {w}?",
    'Give me the Devil\'s Dictionary definition of "{w}".', "What is Bierce's cynical definition of {w}?",
    'Define "{w}" the way Ambrose Bierce would.',
]


def jargon_items(seed):
    for head, text in read_dictd("jargon"):
        lines = text.split("\n")
        if len(lines) < 3:
            continue
        title = lines[0].strip()
        meta = lines[1].strip()
        body_lines = lines[2:]
        # verse / code blocks are indented deeper than the 4-space body; keep them as separate lines
        paras, cur = [], []
        for ln in body_lines:
            deep = ln.startswith("        ") or ln.startswith("\t")
            if not ln.strip():
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
            elif deep:
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
                paras.append("    " + ln.strip())
            else:
                cur.append(ln.strip())
        if cur:
            paras.append(" ".join(cur))
        paras = [unbrace(p) if not p.startswith("    ") else "    " + unbrace(p) for p in paras]
        paras = [p for p in paras if p.strip()]
        if not paras:
            continue
        # merge consecutive code lines into one block
        merged = []
        for p in paras:
            if p.startswith("    ") and merged and merged[-1].startswith("    "):
                merged[-1] += "\n" + p
            else:
                merged.append(p)
        pos = None
        m = re.search(r"(?:^|,\s*)(n\.|v\.|vt\.|vi\.|adj\.|adv\.|interj\.|excl\.|pron\.|prep\.|conj\.)", meta)
        if m:
            pos = {"n.": "noun", "v.": "verb", "vt.": "verb", "vi.": "verb", "adj.": "adjective",
                   "adv.": "adverb", "interj.": "interjection", "excl.": "exclamation", "pron.": "pronoun",
                   "prep.": "preposition", "conj.": "conjunction"}[m.group(1)]
        rng = rng_for(seed, "jargon", title)
        user = pick(rng, PH_JARGON, w=title)
        intro = f"In hacker jargon, {q(title)}" + (f" ({pos})" if pos else "") + " means:"
        body = intro + "\n\n" + "\n\n".join(merged)
        body = body[:4000]
        yield title.lower(), "jargon", conv(user, body)


def devil_items(seed):
    for head, text in read_dictd("devil"):
        lines = text.rstrip().split("\n")
        m = re.match(r"^([A-Z][A-Z' .,-]*?),\s*([a-z. ]+?\.)\s+(.*)$", lines[0])
        if not m:
            continue
        word = m.group(1).strip().lower()
        pos = POS_ABBR.get(m.group(2).replace(" ", ""))
        rest = [m.group(3)] + lines[1:]
        paras, cur = [], []
        for ln in rest:
            if ln.startswith("    ") and ln.strip():
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
                s = ln.strip()
                if len(ln) - len(ln.lstrip()) > 30:  # right-aligned attribution
                    s = "— " + s
                paras.append("    " + s)
            elif not ln.strip():
                if cur:
                    paras.append(" ".join(cur))
                    cur = []
            else:
                cur.append(ln.strip())
        if cur:
            paras.append(" ".join(cur))
        out = []
        for p in paras:
            if p.startswith("    "):
                if out and out[-1].startswith("    "):
                    out[-1] += "\n" + p
                else:
                    out.append(p)
            else:
                out.append(unbrace(p))
        out = [o.replace("    ", "", 1) if o.startswith("    ") else o for o in out]
        out = ["\n".join(x.strip() for x in o.split("\n")) for o in out]
        rng = rng_for(seed, "devil", word)
        user = pick(rng, PH_DEVIL, w=word)
        intro = f"In The Devil's Dictionary, Ambrose Bierce defines {q(word)}" + (f" ({pos})" if pos else "") + " as:"
        yield word, "devil", conv(user, intro + "\n\n" + "\n\n".join(out))


def element_items(seed):
    for head, text in read_dictd("elements"):
        lines = [ln for ln in text.split("\n")]
        if len(lines) < 4 or not lines[1].startswith("Symbol:"):
            continue
        name = lines[0].strip()
        fields = {}
        desc = []
        for ln in lines[1:]:
            m = re.match(r"^(Symbol|Atomic number|Atomic weight):\s*(.*)$", ln)
            if m:
                fields[m.group(1)] = m.group(2).strip()
            else:
                desc.append(ln)
        if len(fields) < 3:
            continue
        sym, num, wt = fields["Symbol"], fields["Atomic number"], fields["Atomic weight"]
        wt = wt.strip("()")
        text_desc = " ".join(unbrace(p) for p in reflow(desc))
        N = cap(name)
        variants = [
            (f"What is the chemical symbol for {name}?", f"The chemical symbol for {name} is {sym}."),
            (f"What is the atomic number of {name}?", f"The atomic number of {name} is {num}."),
            (f"Which element has the symbol {sym}?", f"{sym} is the symbol for {name}, element number {num}."),
            (f"Which element has atomic number {num}?", f"Element number {num} is {name} ({sym})."),
            (f"What is the atomic weight of {name}?", f"The atomic weight of {name} is about {wt}."),
            (f"Tell me about {name}.", f"{N} (symbol {sym}) is element number {num}, with an atomic weight of "
                                       f"{wt}. {text_desc}".strip()),
            (f"What is {name}?", f"{N} is a chemical element with the symbol {sym} and atomic number {num}. "
                                 f"{text_desc}".strip()),
        ]
        for i, (u, a) in enumerate(variants):
            yield name.lower(), "elements", conv(u, a)


# ----------------------------------------------------------------------------------------------- Python stdlib
PYTHON_LIB = "/usr/lib/python3.11"
PY_SKIP = ("test", "idlelib", "lib2to3", "turtledemo", "ensurepip", "site-packages", "dist-packages", "pydoc_data",
           "__main__", "__phello__", "__hello__", "antigravity", "this.py", "config-3")
PH_PY_FUNC = [
    "What does {n}() do in Python?", "Explain the Python function {n}.", "How do I use {n} in Python?",
    "What is {n} in Python's standard library?", "Describe {n}() from the Python standard library.",
]
PH_PY_METHOD = ["What does the {m} method of {c} do in Python?", "Explain {c}.{m}() in Python.",
                "What is {c}.{m} for?"]
PH_PY_CLASS = ["What is the {n} class in Python?", "Explain the Python class {n}.", "What is {n} used for in Python?"]
PH_PY_MODULE = ["What is the Python module {n} for?", "What does Python's {n} module do?",
                "Tell me about the {n} module in Python."]


def py_signature(node):
    import ast
    a = node.args
    parts = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(pos, defaults)):
        if i == 0 and arg.arg in ("self", "cls"):
            continue
        parts.append(arg.arg + (f"={ast.unparse(d)}" if d is not None else ""))
        if a.posonlyargs and arg is a.posonlyargs[-1]:
            parts.append("/")
    if a.vararg:
        parts.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        parts.append("*")
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        parts.append(arg.arg + (f"={ast.unparse(d)}" if d is not None else ""))
    if a.kwarg:
        parts.append("**" + a.kwarg.arg)
    sig = ", ".join(parts)
    return sig if len(sig) <= 120 else sig[:117] + "..."


def python_items(seed):
    """Docstrings of the public functions, classes, methods and modules of Debian's Python 3.11 stdlib."""
    import ast
    import glob
    if not os.path.isdir(PYTHON_LIB):
        return
    paths = sorted(glob.glob(os.path.join(PYTHON_LIB, "*.py")) + glob.glob(os.path.join(PYTHON_LIB, "*", "*.py")))
    for path in paths:
        rel = os.path.relpath(path, PYTHON_LIB)
        if any(x in rel for x in PY_SKIP) or any(p.startswith("_") and p != "__init__.py" for p in rel.split("/")):
            continue
        mod = rel[:-3].replace("/", ".")
        if mod.endswith(".__init__"):
            mod = mod[:-9]
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        doc = ast.get_docstring(tree)
        rng = rng_for(seed, "py", mod)
        if doc and len(doc) >= 60:
            yield mod, "python", conv(pick(rng, PH_PY_MODULE, n=mod),
                                      f"The {mod} module: " + doc.strip()[:2500])
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                d = ast.get_docstring(node)
                if d and len(d) >= 40:
                    n = f"{mod}.{node.name}"
                    yield n, "python", conv(pick(rng, PH_PY_FUNC, n=n),
                                            f"`{n}({py_signature(node)})`\n\n{d.strip()[:2500]}")
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                n = f"{mod}.{node.name}"
                d = ast.get_docstring(node)
                if d and len(d) >= 40:
                    yield n, "python", conv(pick(rng, PH_PY_CLASS, n=n), f"`class {n}`\n\n{d.strip()[:2500]}")
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and not sub.name.startswith("_"):
                        sd = ast.get_docstring(sub)
                        if sd and len(sd) >= 40:
                            yield n, "python", conv(pick(rng, PH_PY_METHOD, m=sub.name, c=n),
                                                    f"`{n}.{sub.name}({py_signature(sub)})`\n\n{sd.strip()[:2500]}")


# ----------------------------------------------------------------------------------------------- synthetic
PH_ADD = ["What is {a} + {b}?", "What is {a} plus {b}?", "Add {a} and {b}.", "Calculate {a} + {b}."]
PH_SUB = ["What is {a} - {b}?", "What is {a} minus {b}?", "Subtract {b} from {a}."]
PH_MUL = ["What is {a} times {b}?", "What is {a} x {b}?", "Multiply {a} by {b}."]


def arithmetic_items(seed, n):
    for i in range(n):
        rng = rng_for(seed, "arith", i)
        kind = rng.choice(["add", "add", "sub", "mul"])
        if kind == "add":
            a, b = rng.randint(0, 999), rng.randint(0, 999)
            yield f"arith{i}", "synthetic/arithmetic", conv(pick(rng, PH_ADD, a=a, b=b), f"{a} + {b} = {a + b}.")
        elif kind == "sub":
            a, b = rng.randint(0, 999), rng.randint(0, 999)
            a, b = max(a, b), min(a, b)
            yield f"arith{i}", "synthetic/arithmetic", conv(pick(rng, PH_SUB, a=a, b=b), f"{a} - {b} = {a - b}.")
        else:
            a, b = rng.randint(2, 12), rng.randint(2, 99)
            yield f"arith{i}", "synthetic/arithmetic", conv(pick(rng, PH_MUL, a=a, b=b), f"{a} × {b} = {a * b}.")


# ----------------------------------------------------------------------------------------------- assembly
def from_manuals(item) -> bool:
    """Whether a (subject, category, messages) item is one of --with-docs's (doc_sections.py)."""
    return item[1].startswith("docs/")


def build(args):
    seed = args.seed
    wn = WordNet(limit=args.limit_synsets)
    tasks = WordNetTasks(wn, seed)
    items = []  # (subject, category, messages)

    # 1. word-level definitions: lemmas that are attested in SemCor or simple words, plus a sample of the rest
    lemmas = sorted({lem for (lem, _pos) in wn.index})
    for lemma in lemmas:
        rng = rng_for(seed, "define", lemma)
        attested = any(wn.index.get((lemma, p), (None, 0))[1] > 0 for p in "nvar")
        display = lemma.replace("_", " ")
        if not good_word(display):
            continue
        if not attested and rng.random() > args.rare_define_rate:
            continue
        body = tasks.define_word(lemma, rng)
        if not body:
            continue
        user = pick(rng, PH_DEFINE, w=display)
        msgs = conv(user, body)
        # follow-up turns make some conversations multi-turn
        if rng.random() < 0.2:
            senses = [wn.synsets[k] for p in "nvar" for k in wn.index.get((lemma, p), ([], 0))[0]]
            ss = senses[0]
            word = tasks.form_in(display, ss)
            fu = rng.random()
            exs = [e for s in senses for e in s.examples][:3]
            syn = [w for s in senses[:2] for w in synonyms_of(word, s, 3)]
            ants = [a for s in senses for i, w in enumerate(s.words, 1) if w.lower() == lemma.replace("_", " ")
                    for a in wn.antonyms(s, i)]
            if fu < 0.4 and exs:
                msgs += conv(pick(rng, PH_FOLLOW_SENT), "Sure: " + " ".join(f'"{cap(end_sentence(e))}"' for e in exs))
            elif fu < 0.75 and syn:
                msgs += conv(pick(rng, PH_FOLLOW_SYN), f"Yes: {join_list(list(dict.fromkeys(syn)))}.")
            elif ants:
                a_word, a_ss = ants[0]
                msgs += conv(pick(rng, PH_FOLLOW_ANT),
                             f"The opposite is {q(a_word)}, which means {a_ss.definition.split(';')[0]}.")
        items.append((lemma.lower(), "wordnet/define", msgs))

    # 2. per-synset questions (sampled so that no single task dominates)
    keep_rate = {"wordnet/what-is": 1.0, "wordnet/sentence": 1.0, "wordnet/synonym": 0.7,
                 "wordnet/antonym": 1.0, "wordnet/kind-of": 0.7, "wordnet/yes-no": 0.7, "wordnet/kinds": 1.0,
                 "wordnet/parts": 1.0, "wordnet/part-of": 1.0, "wordnet/compare": 0.8, "wordnet/reverse": 0.7}
    for (pos, off) in sorted(wn.synsets):
        ss = wn.synsets[(pos, off)]
        rng = rng_for(seed, "synset", pos, off)
        for cat, msgs, subj in tasks.synset_tasks(ss, rng):
            if rng.random() < keep_rate.get(cat, 1.0):
                if rng.random() < 0.05:
                    msgs = [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] + msgs
                items.append((subj, cat, msgs))

    # 3. forms and spelling
    rng = rng_for(seed, "forms")
    for subj, cat, msgs in tasks.forms(rng):
        items.append((subj, cat, msgs))
    simple = [lem for lem in lemmas if simple_word(lem)
              and any(wn.index.get((lem, p), (None, 0))[1] > 0 for p in "nvar")]
    for lemma in simple:
        rng = rng_for(seed, "spell", lemma)
        if rng.random() < args.spell_rate:
            cat, msgs = tasks.spelling(lemma, rng)
            items.append((lemma, cat, msgs))

    # 4. other dictionaries, Python docstrings and synthetic
    if not args.limit_synsets:
        for gen in (jargon_items(seed), devil_items(seed), element_items(seed), python_items(seed)):
            items.extend(gen)
    items.extend(arithmetic_items(seed, args.arithmetic if not args.limit_synsets else 200))
    # 5. the manuals, last, so that every item before them is split, capped and drawn for exactly as without them
    if args.with_docs:
        items.extend(doc_items(seed, rng_for, pick, conv))

    # split by subject
    train, val = [], []
    for subj, cat, msgs in items:
        h = stable_hash(f"{seed}:split:{subj}") % 10000
        (val if h < args.val_permille * 10 else train).append((subj, cat, msgs))

    # size cap (drop from the largest WordNet categories uniformly if over budget)
    def nchars(lst):
        return sum(len(render(m)) for _, _, m in lst)

    # The cap is over the dictionaries' conversations; the manuals come on top of it.
    total = nchars([it for it in train if not from_manuals(it)])
    if args.max_chars and total > args.max_chars:
        wn_chars = nchars([it for it in train if it[1].startswith("wordnet/")])
        frac = max(0.0, (args.max_chars - (total - wn_chars)) / wn_chars)
        rng = random.Random(f"{seed}:cap")
        train = [it for it in train if not it[1].startswith("wordnet/") or rng.random() < frac]

    # The dictionaries' conversations are shuffled exactly as without the manuals (the same draws for the same
    # lists); the manuals' are mixed into train and appended to validation with draws of their own, so the shipped
    # validation order and the held-out prompts drawn from it stay what they are.
    docs_train = [it for it in train if from_manuals(it)]
    docs_val = [it for it in val if from_manuals(it)]
    train = [it for it in train if not from_manuals(it)]
    val = [it for it in val if not from_manuals(it)]
    rng = random.Random(f"{seed}:shuffle")
    rng.shuffle(train)
    rng.shuffle(val)
    if docs_train or docs_val:
        docs_rng = random.Random(f"{seed}:docs")
        train += docs_train
        docs_rng.shuffle(train)
        docs_rng.shuffle(docs_val)
        val += docs_val
    return train, val


def heldout_prompts(train, val, seed, n):
    train_users = {m["content"] for _, _, msgs in train for m in msgs if m["role"] == "user"}
    by_cat = defaultdict(list)
    for subj, cat, msgs in val:
        first = next(m for m in msgs if m["role"] == "user")["content"]
        if first not in train_users and len(first) <= 200:
            by_cat[cat].append(first)
    rng = random.Random(f"{seed}:heldout")
    cats = sorted(by_cat)
    for c in cats:
        rng.shuffle(by_cat[c])
    out, seen = [], set()
    while len(out) < n and any(by_cat[c] for c in cats):
        for c in cats:
            if by_cat[c] and len(out) < n:
                p = by_cat[c].pop()
                if p not in seen:
                    seen.add(p)
                    out.append(p)
    return out


def write_jsonl_gz(path, items):
    # mtime=0 keeps the .gz bytes identical across runs
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
        for _, _, msgs in items:
            f.write((json.dumps({"messages": msgs}, ensure_ascii=False) + "\n").encode("utf-8"))


def write_text_gz(path, items):
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
        for _, _, msgs in items:
            f.write((render(msgs) + "\n").encode("utf-8"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(HERE))
    ap.add_argument("--out", default=os.path.join(root, "training", "data"))
    ap.add_argument("--prompts-out", default=os.path.join(root, "assets", "prompts", "heldout.jsonl"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--val-permille", type=int, default=20, help="share of subjects in validation (per mille)")
    ap.add_argument("--max-chars", type=int, default=60_000_000, help="cap on rendered train characters")
    ap.add_argument("--rare-define-rate", type=float, default=0.6,
                    help="share of lemmas not attested in SemCor that get a define question")
    ap.add_argument("--spell-rate", type=float, default=0.25)
    ap.add_argument("--arithmetic", type=int, default=12000)
    ap.add_argument("--heldout", type=int, default=80)
    ap.add_argument("--limit-synsets", type=int, default=0, help="read only N synsets per POS (tests)")
    ap.add_argument("--no-text", action="store_true", help="skip the rendered .txt.gz files")
    ap.add_argument("--with-docs", action="store_true",
                    help="add the Python, SQLite and PostgreSQL manuals' prose (doc_sections.py; python3.11-doc, "
                         "sqlite3-doc, postgresql-doc-15) on top of the capped dictionaries")
    args = ap.parse_args()

    for p in (WORDNET_DIR, DICTD_DIR):
        if not os.path.isdir(p):
            sys.exit(f"{p} is missing: run training/corpus/fetch_sources.sh first")
    for p in missing_manuals() if args.with_docs else []:
        sys.exit(f"{p} is missing: run training/corpus/fetch_sources.sh --with-docs first")

    train, val = build(args)
    os.makedirs(args.out, exist_ok=True)
    write_jsonl_gz(os.path.join(args.out, "train.jsonl.gz"), train)
    write_jsonl_gz(os.path.join(args.out, "validation.jsonl.gz"), val)
    if not args.no_text:
        write_text_gz(os.path.join(args.out, "train.txt.gz"), train)
        write_text_gz(os.path.join(args.out, "validation.txt.gz"), val)

    # Held out from the dictionaries' conversations alone: a corpus with the manuals keeps the shipped prompts.
    prompts = heldout_prompts(train, [v for v in val if not from_manuals(v)], args.seed, args.heldout)
    if args.prompts_out:
        os.makedirs(os.path.dirname(args.prompts_out), exist_ok=True)
        with open(args.prompts_out, "w", encoding="utf-8") as f:
            for p in prompts:
                f.write(json.dumps({"prompt": p}, ensure_ascii=False) + "\n")

    stats = {"seed": args.seed, "splits": {}}
    for name, lst in (("train", train), ("validation", val)):
        cats = Counter(c for _, c, _ in lst)
        chars = Counter()
        for _, c, m in lst:
            chars[c] += len(render(m))
        stats["splits"][name] = {
            "conversations": len(lst),
            "rendered_chars": sum(chars.values()),
            "by_category": {c: {"conversations": cats[c], "rendered_chars": chars[c]} for c in sorted(cats)},
        }
    stats["files"] = {f: os.path.getsize(os.path.join(args.out, f)) for f in sorted(os.listdir(args.out))
                      if f.endswith(".gz")}
    stats["heldout_prompts"] = len(prompts)
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    tr, va = stats["splits"]["train"], stats["splits"]["validation"]
    print(f"[corpus] train {tr['conversations']} conversations, {tr['rendered_chars'] / 1e6:.1f} M chars; "
          f"validation {va['conversations']} conversations, {va['rendered_chars'] / 1e6:.2f} M chars; "
          f"{len(prompts)} held-out prompts")
    for f_, sz in stats["files"].items():
        print(f"[corpus] {f_}: {sz / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
