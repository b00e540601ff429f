"""Bandit's view of a Python file: the function bodies none of its tests can match left out.

Bandit's cost is its walk over every node of the file (``cProfile``: ~90 % of a run over vLLM is
the node visitor, ~10 % parsing), and the tests auditor runs (:data:`auditor.scan.bandit.TESTS`)
each look at one node: a call and its arguments, a string constant, or the file's raw characters
(B613). What one node makes of its neighbours is the import aliases (``import_aliases``), filled
by every import statement in visiting order. So a function body can be left out, lines and
columns in place (:func:`auditor.scan.pyast.elide_functions`, which keeps every import on its
line), when its text (decorators and header included) shows none of what a test needs:

- a call's resolved name has a word a test names (``exec``, ``pickle``, ``system``, ``load``,
  ``shell=`` ...; read from the installed bandit's plugins and blacklists at run time
  (:mod:`auditor.scan.banditwords`; ``chmod``/``extractall`` as parts of a name)), written in
  the function or bound there by an import: every name an import binds is
  added to the words when the imported name has one (``from torch import load as L`` makes ``L``
  a word, ``import subprocess as sp`` makes ``sp`` one);
- B108's string starting with ``/tmp``, ``/var/tmp`` or ``/dev/shm``: the text has ``tmp`` or
  ``shm``, an escape that can spell a letter (``\\x``, ``\\u``, ``\\U``, ``\\N``, octal) or a
  backslash before a line break, or a string whose whole text is a start of one of those folders
  (``"/t" "mp"`` is one constant; so is ``f"{x}/t" "mp"``'s part after the brace);
- a word spelled in a compatibility form: outside ASCII the words are looked for in the text's
  NFKC form, as Python reads identifiers (``ｅｖａｌ`` is ``eval``).

``load`` counts only in a file that imports ``torch`` or ``yaml`` (B614 and B506 ask bandit's
``is_module_imported_exact``).

A file with none of these anywhere (:func:`nothing_to_match`) is not given to bandit at all.
The file is given whole when it does not parse or has a bidirectional control character (B613
reads the raw lines; :func:`~auditor.scan.pyast.parse_sliceable`), when a coding declaration
would make bandit (which parses bytes) read other text than UTF-8, and when no body would be
left out. Module-level code and class bodies are always kept. ``tests/scan/test_scan_banditviews.py``
runs the real bandit on each view and on the file and requires the same results.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import sys
import tokenize
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from auditor.fsutil import atomic_write_bytes
from auditor.scan import prefilter, pyast
from auditor.scan.banditwords import Triggers, triggers

_DIGEST = hashlib.sha256(Path(__file__).read_bytes() + Path(pyast.__file__).read_bytes()
                         + Path(prefilter.__file__).read_bytes()).hexdigest()[:16]

# What the tests need is read from the installed bandit (auditor.scan.banditwords); None: bandit
# reads every file whole
def _triggers() -> Triggers | None:
    return triggers()


def digest() -> str:
    """A digest of the code that makes the views and of the installed bandit's sources they read
    (part of the scan cache's key; bandit is not imported for it)."""
    return _DIGEST + ":" + _bandit_sources()[:16]


@lru_cache(maxsize=1)
def _bandit_sources() -> str:
    from auditor.scan.banditwords import source_digest

    return source_digest()


def _named(name: str, t: Triggers) -> bool:
    """Whether a call through a name bound to ``name`` (an import's) may resolve to one a test
    needs without any of the words written in the call."""
    parts = tuple(name.split("."))
    return (not t.words.isdisjoint(parts) or any(c in parts[-1] for c in t.contained)
            or any(n[:len(parts)] == parts for n in t.names))


def _bound_by_triggering_imports(imports: Iterable[ast.Import | ast.ImportFrom],
                                 t: Triggers) -> set[str]:
    """The names bound by imports of a name a test needs (bandit resolves them to it)."""
    words: set[str] = set()
    for node in imports:
        module = node.module if isinstance(node, ast.ImportFrom) else None
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            # bandit aliases ``import a as b`` and ``from m import a [as b]``, not ``import a``
            bound = alias.asname or (alias.name if module else None)
            if bound is not None and _named(full, t):
                words.add(bound)
    return words


def _imported_exactly(imports: Iterable[ast.Import | ast.ImportFrom]) -> set[str]:
    """The names bandit's ``is_module_imported_exact`` knows: ``import a.b`` gives ``a.b``,
    ``from . import c`` gives ``c``, ``from m import c`` gives ``m.c``."""
    out: set[str] = set()
    for node in imports:
        module = node.module if isinstance(node, ast.ImportFrom) else None
        out.update(f"{module}.{a.name}" if module else a.name for a in node.names)
    return out


def _imports(tree: ast.Module,
             functions: list[pyast.Function],
             lines: list[str]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of the file: outside functions, then in each function's body."""
    yield from pyast.outside_imports(tree)
    for f in functions:
        yield from pyast.import_statements(f, lines)


def _may_match(text: str, words: frozenset[str], t: Triggers) -> bool:
    if _tmp_re(t).search(text) or ("/" in text and _tmp_start_re(t).search(text)):
        return True
    if not text.isascii():  # Python reads an identifier in its NFKC form (strings stay raw)
        text = unicodedata.normalize("NFKC", text)
    if not words.isdisjoint(prefilter.identifiers(text)):
        return True
    return any(c in text for c in t.contained)


@lru_cache(maxsize=4)
def _tmp_re(t: Triggers) -> re.Pattern[str]:
    return t.tmp_re


@lru_cache(maxsize=4)
def _tmp_start_re(t: Triggers) -> re.Pattern[str]:
    return t.tmp_start_re


def bandit_view(text: str) -> str | None:
    """``text`` with the function bodies no test can match left out, or None when bandit is to
    read the file whole (see the module docstring)."""
    t = _triggers()
    tree = pyast.parse_sliceable(text) if t is not None else None
    if tree is None or t is None:
        return None
    functions = list(pyast.outer_functions(tree.body))
    if not functions:
        return None
    lines = text.split("\n")
    imports = list(_imports(tree, functions, lines))
    words = t.words
    if not _imported_exactly(imports) & {"torch", "yaml"}:
        # B614 and B506 need ``import torch`` or ``import yaml`` in the file; a name an import
        # binds stays a word whatever it is (``from pickle import load``: B301)
        words -= {"load"}
    words |= _bound_by_triggering_imports(imports, t)

    def keep(f: pyast.Function) -> bool:
        a, b = pyast.span(f)
        return _may_match("\n".join(lines[a - 1:b]), words, t)

    # not parsed again: leaving bodies out of a file that parses gives one that parses (see
    # auditor.scan.taintviews); a view that did not would be bandit's syntax error, the file
    # then reported not checked
    s = pyast.elide_functions(text, tree, keep, verify=False)
    return None if s is None else s.text


def nothing_to_match(text: str) -> bool:
    """Whether no test can report anything in ``text``, so bandit need not read it: none of
    what any test needs is anywhere in it (every word, ``load`` whatever the file imports; every
    name a test needs has one of them written, in the call or in the import that binds it), it
    has no bidirectional control character (B613) or odd line break, and it compiles (one that
    does not is bandit's syntax error, and is given to bandit to say so)."""
    t = _triggers()
    return (t is not None and not _may_match(text, t.words, t)
            and not pyast.odd_characters(text) and pyast.compiles(text))


#: how bandit reads a file (:func:`reading_of`): not at all, its view, or whole
NOTHING, VIEW, WHOLE = "N", "V", "W"


def reading_of(raw: bytes) -> tuple[str, str | None]:
    """How bandit reads the staged bytes ``raw`` (a reducer of the scan plan,
    :mod:`auditor.scan.plan`): :data:`NOTHING` (no test can match: not given to bandit),
    :data:`VIEW` with the view's text, or :data:`WHOLE`."""
    if not _reads_as_utf8(raw):
        return WHOLE, None  # bandit would read other text than the view was made from
    text = raw.decode("utf-8")
    if nothing_to_match(text):
        return NOTHING, None
    view = bandit_view(text)
    return (WHOLE, None) if view is None else (VIEW, view)


def rewrite(root: Path, rels: Iterable[str]) -> dict[str, str]:
    """Replace each file ``root/rel`` (UTF-8) by its view, each at once (a rename); returns how
    each is read (:func:`reading_of`; a file no test can match in is left as it is). A file left
    whole is read whole: the results are the same either way."""
    out: dict[str, str] = {}
    for rel in rels:
        path = root / rel
        how, view = reading_of(path.read_bytes())
        out[rel] = how
        if view is not None:
            atomic_write_bytes(path, view.encode("utf-8"))
    return out


def _reads_as_utf8(raw: bytes) -> bool:
    """Whether bandit (which parses bytes, honouring a coding declaration) reads ``raw`` as the
    UTF-8 text the view is made from."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:
        return False
    return encoding in ("utf-8", "utf-8-sig")


def main(argv: list[str]) -> int:
    """``python -P -m auditor.scan.banditviews ROOT`` with the staged paths on standard input,
    NUL-separated; writes each path's reading (:func:`reading_of`) and the path, each ended by a
    NUL, to standard output (``N:a.py\\0V:b.py\\0W:c.py\\0``). The bandit scanner runs this
    beside its own thread, so that the views' parsing does not hold the scan's interpreter lock
    while semgrep's staging needs it."""
    if len(argv) != 1:
        print("usage: python -m auditor.scan.banditviews ROOT < paths", file=sys.stderr)
        return 2
    got = rewrite(Path(argv[0]), [rel for rel in sys.stdin.read().split("\0") if rel])
    sys.stdout.write("".join(f"{how}:{rel}\0" for rel, how in got.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
