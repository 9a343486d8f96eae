"""Prose from the manuals Debian ships, as (subject, category, messages) chat items for build_corpus.py --with-docs.

Issue 19 asks for a base larger than the shipped 14M one, and the corpus it was trained on (12.8M tokens an epoch,
dictionary entries for the most part) limits even that one: it overfits after about six epochs and answers in the
dictionary's clipped style. These manuals are whole paragraphs of explanatory English, under licences that allow it
(SOURCES.md):
  * The Python 3.11 documentation (python3.11-doc): its reStructuredText sources, /usr/share/doc/python3.11/html/
    _sources (the tutorial, the library and language references, the HOWTOs, the FAQ, the glossary), PSF License 2.
    Each section and each described object (function, class, method, attribute...) becomes one item.
  * The SQLite documentation (sqlite3-doc): /usr/share/doc/sqlite3/*.html, public domain.
  * The PostgreSQL 15 documentation (postgresql-doc-15): /usr/share/doc/postgresql-doc-15/html/*.html, the
    PostgreSQL License (BSD-like).
An item's subject (what the train/validation split hashes) is its manual, page and section, so a validation
section is never seen in training under another phrasing. A section's paragraphs, whole, go in answers of up to
about 1,500 characters: the first to the section's question, each further one to "what else" about it (the same
subject); code samples, tables and lists of options are left out (prose is what the base lacks).
Nothing is downloaded; a manual that is not installed yields nothing here, and build_corpus.py --with-docs refuses
to run without all three (missing_manuals()), so that a corpus never quietly lacks one.
"""
import glob
import html
import os
import re
from html.parser import HTMLParser

PYTHON_DOCS = "/usr/share/doc/python3.11/html/_sources"
SQLITE_DOCS = "/usr/share/doc/sqlite3"
POSTGRES_DOCS = "/usr/share/doc/postgresql-doc-15/html"

def missing_manuals():
    """The manuals' folders that are not installed (training/corpus/fetch_sources.sh --with-docs installs them)."""
    return [d for d in (PYTHON_DOCS, SQLITE_DOCS, POSTGRES_DOCS) if not os.path.isdir(d)]


# Python's manual parts read (the C API, distutils and the release notes are mostly tables of names and changes).
PYTHON_PARTS = ("tutorial", "library", "reference", "howto", "faq", "using", "glossary.rst.txt")
ANSWER_CHARS = 1500
MIN_PARAGRAPH = 60

PH_PY_SECTION = ["Explain {t} in Python.", "What does the Python documentation say about {t}?",
                 "Tell me about {t} in Python.", "Can you explain {t} (Python)?"]
PH_PY_OBJECT = ["What does {n} do in Python?", "Explain {n} from the Python documentation.",
                "What is {n} in Python?", "Describe {n} in Python."]
PH_MANUAL_SECTION = ["Explain {t} in {m}.", "What does the {m} documentation say about {t}?",
                     "Tell me about {t} in {m}.", "How does {t} work in {m}?"]
PH_MORE = ["What else should I know about {t} in {m}?", "Tell me more about {t} in {m}.",
           "Go on about {t} in {m}.", "What more does the {m} documentation say about {t}?"]

# ------------------------------------------------------------------------------------------------ inline markup
_ROLE = re.compile(r":[a-z:+-]+:`[~!]?([^`<]*?)(?:\s*<[^>]*>)?`")   # :func:`~os.path.join`, :ref:`text <label>`
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]*>`__?")                      # `text <url>`_
_LITERAL = re.compile(r"``([^`]+)``")
_STRONG = re.compile(r"\*\*([^*]+)\*\*")
_EMPH = re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])")
_REF = re.compile(r"`([^`]+)`_")
_SPACE = re.compile(r"\s+")


def clean_inline(text: str) -> str:
    """reStructuredText inline markup to plain text: roles and links by their text, literals and emphasis bare."""
    text = _ROLE.sub(lambda m: m.group(1).strip().lstrip("~").split(".")[-1] if m.group(0).find("~") > 0
                     else m.group(1).strip(), text)
    text = _LINK.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    text = _EMPH.sub(r"\1", text)
    text = _REF.sub(r"\1", text)
    text = text.replace("\\", "")
    if text.endswith("::"):
        text = text[:-1]
    return _SPACE.sub(" ", text).strip()


def without_code_intro(p: str) -> str:
    """A paragraph that ends by introducing what was left out ("Equivalent to:", "For example:") loses that last
    sentence; nothing is left of one that was only that."""
    if not p.endswith(":"):
        return p
    cut = max(p.rfind(". "), p.rfind("? "), p.rfind("! "))
    return p[:cut + 1] if cut > 0 else ""


def prose_paragraph(p: str) -> bool:
    """Whether a cleaned paragraph reads as prose (not a list item, a table row, a heading-like stub)."""
    if len(p) < MIN_PARAGRAPH or p[0] in "-*+|=>#.0123456789" or p.count("|") > 2:
        return False
    letters = sum(c.isalpha() for c in p)
    return letters > 0.6 * len(p) and p[-1] in ".:!?)\""


def answers_from(paragraphs):
    """The paragraphs, in order and whole, in answers of up to ANSWER_CHARS each (a longer paragraph alone)."""
    out, cur, n = [], [], 0
    for p in paragraphs:
        if cur and n + len(p) > ANSWER_CHARS:
            out.append("\n\n".join(cur))
            cur, n = [], 0
        cur.append(p)
        n += len(p) + 2
    if cur:
        out.append("\n\n".join(cur))
    return out


def section_items(subject, category, first_question, title, manual, answers, rng, pick, conv, lead=""):
    """One item for a section's first answer, one more for each further answer."""
    yield subject, category, conv(first_question, lead + answers[0])
    for more in answers[1:]:
        yield subject, category, conv(pick(rng, PH_MORE, t=title, m=manual), more)


# ------------------------------------------------------------------------------------------------ reStructuredText
_UNDERLINE = re.compile(r"^([=\-~^\"'*+#`])\1{2,}\s*$")
_OBJECT = re.compile(r"^\.\. (function|method|class|attribute|data|exception|decorator|classmethod|staticmethod|"
                     r"coroutinefunction|coroutinemethod|opcode|envvar|describe)::\s*(.+)$")
_DIRECTIVE = re.compile(r"^\.\. ([a-z-]+)::\s*(.*)$")
# Directives whose indented content is prose of the section or object they sit in.
PROSE_DIRECTIVES = {"note", "tip", "important", "attention", "hint", "seealso"}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def rst_units(text: str):
    """(kind, name, paragraphs): 'section' with its title, or an object directive with its signature; each with the
    prose paragraphs that belong to it directly (not a nested object's, not code or tables)."""
    lines = text.expandtabs(3).splitlines()
    units = []
    current = ["section", "", []]
    units.append(current)
    stack = [(-1, current)]  # (indent of the directive line, unit) for object directives
    para, para_indent = [], 0
    skip_indent = None  # inside a code block / non-prose directive deeper than this indent
    literal_next = False

    def flush():
        nonlocal para
        if para:
            p = without_code_intro(clean_inline(" ".join(s.strip() for s in para)))
            owner = stack[-1][1]
            if prose_paragraph(p):
                owner[2].append(p)
            para = []

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        ind = _indent(line)
        if skip_indent is not None:
            if stripped and ind <= skip_indent:
                skip_indent = None
            else:
                i += 1
                continue
        # a section title: text over an underline at least as long (optionally with an overline)
        if stripped and ind == 0 and i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]) and \
                len(lines[i + 1].strip()) >= len(stripped) and not _UNDERLINE.match(line):
            flush()
            current = ["section", clean_inline(stripped), []]
            units.append(current)
            stack = [(-1, current)]
            i += 2
            continue
        if _UNDERLINE.match(line):
            flush()
            i += 1
            continue
        if not stripped:
            flush()
            if literal_next:
                # the literal block ("::") is the next, more indented run of lines
                j = i + 1
                while j < len(lines) and not lines[j].strip():
                    j += 1
                if j < len(lines) and _indent(lines[j]) > para_indent:
                    skip_indent = para_indent
                literal_next = False
            i += 1
            continue
        while len(stack) > 1 and ind <= stack[-1][0]:
            stack.pop()
        m = _OBJECT.match(stripped)
        if m:
            flush()
            unit = ["object", clean_inline(m.group(2)), []]
            units.append(unit)
            stack.append((ind, unit))
            # continuation signatures of the same directive (more indented, no blank line)
            i += 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > ind and \
                    not lines[i].strip().startswith(":"):
                i += 1
            continue
        d = _DIRECTIVE.match(stripped)
        if d or stripped.startswith(".. ") or stripped == "..":
            flush()
            name = d.group(1) if d else ""
            if name in PROSE_DIRECTIVES:
                if d.group(2):
                    para, para_indent = [d.group(2)], ind
            elif name in ("versionadded", "versionchanged", "deprecated"):
                pass  # one line; its indented explanation (if any) is read as prose of the owner
            else:
                skip_indent = ind
            i += 1
            continue
        if stripped.startswith(":") and re.match(r"^:[^:]+:", stripped):  # field lists (:param x:, :noindex:)
            flush()
            skip_indent = ind
            i += 1
            continue
        if not para:
            para_indent = ind
        para.append(stripped)
        literal_next = stripped.endswith("::")
        i += 1
    flush()
    return [(k, n, ps) for k, n, ps in units if n and ps]


def python_doc_items(seed, rng_for, pick, conv):
    if not os.path.isdir(PYTHON_DOCS):
        return
    paths = []
    for part in PYTHON_PARTS:
        p = os.path.join(PYTHON_DOCS, part)
        paths += [p] if p.endswith(".txt") else sorted(glob.glob(os.path.join(p, "**", "*.rst.txt"), recursive=True))
    for path in paths:
        rel = os.path.relpath(path, PYTHON_DOCS)[:-len(".rst.txt")]
        with open(path, encoding="utf-8", errors="replace") as f:
            units = rst_units(f.read())
        for kind, name, paragraphs in units:
            subject = f"pydoc:{rel}:{name}"
            rng = rng_for(seed, "pydoc", rel, name)
            answers = answers_from(paragraphs)
            if kind == "section":
                yield from section_items(subject, "docs/python", pick(rng, PH_PY_SECTION, t=name), name, "Python",
                                         answers, rng, pick, conv)
            else:
                short = name.split("(")[0].strip()
                yield from section_items(subject, "docs/python", pick(rng, PH_PY_OBJECT, n=short), short, "Python",
                                         answers, rng, pick, conv, lead=f"`{name}`\n\n")


# ------------------------------------------------------------------------------------------------ HTML manuals
class _HtmlSections(HTMLParser):
    """Headings (h1-h4) and the <p> paragraphs under each; <pre>, tables and navigation skipped."""

    SKIP = {"pre", "table", "script", "style", "code-block", "nav"}
    # Boxed asides carry a heading of their own; their paragraphs belong to the section they sit in.
    ASIDES = {"Note", "Tip", "Warning", "Caution", "Important", "See Also"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = [["", []]]
        self.heading = None
        self.para = None
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in ("h1", "h2", "h3", "h4") and not self.skip:
            self.heading = []
        elif tag == "p" and not self.skip and self.heading is None:
            self._end_para()
            self.para = []

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in ("h1", "h2", "h3", "h4") and self.heading is not None:
            self._end_para()
            title = _SPACE.sub(" ", "".join(self.heading)).strip()
            title = re.sub(r"^[\d.]+\s+", "", title).rstrip("#¶ ").strip()  # "5.3. Constraints" -> "Constraints"
            if title not in self.ASIDES:
                self.sections.append([title, []])
            self.heading = None
        elif tag == "p":
            self._end_para()

    def handle_data(self, data):
        if self.skip:
            return
        if self.heading is not None:
            self.heading.append(data)
        elif self.para is not None:
            self.para.append(data)

    def _end_para(self):
        if self.para is not None:
            p = without_code_intro(_SPACE.sub(" ", html.unescape("".join(self.para))).strip())
            if prose_paragraph(p):
                self.sections[-1][1].append(p)
            self.para = None


def html_sections(text: str):
    parser = _HtmlSections()
    parser.feed(text)
    parser.close()
    parser._end_para()
    return [(t, ps) for t, ps in parser.sections if t and ps and len(t) <= 100]


def manual_items(seed, rng_for, pick, conv, folder, manual, category):
    if not os.path.isdir(folder):
        return
    for path in sorted(glob.glob(os.path.join(folder, "*.html"))):
        page = os.path.basename(path)[:-5]
        with open(path, encoding="utf-8", errors="replace") as f:
            sections = html_sections(f.read())
        for title, paragraphs in sections:
            rng = rng_for(seed, category, page, title)
            yield from section_items(f"{category}:{page}:{title}", category,
                                     pick(rng, PH_MANUAL_SECTION, t=title, m=manual), title, manual,
                                     answers_from(paragraphs), rng, pick, conv)


def doc_items(seed, rng_for, pick, conv):
    """Every manual's items, in a fixed order (the caller splits and shuffles)."""
    yield from python_doc_items(seed, rng_for, pick, conv)
    yield from manual_items(seed, rng_for, pick, conv, SQLITE_DOCS, "SQLite", "docs/sqlite")
    yield from manual_items(seed, rng_for, pick, conv, POSTGRES_DOCS, "PostgreSQL", "docs/postgresql")
