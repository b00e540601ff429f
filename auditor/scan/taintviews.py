"""Views of a Python file for the taint rules: the function bodies a rule cannot match left out.

Semgrep Community Edition's taint analysis is intraprocedural. Measured with semgrep 1.185 (and
kept true by ``tests/scan/test_scan_taintviews.py``): taint set in module-level code reaches the
functions that read it, but it is not followed from one function to another through ``self``
fields, call arguments or return values, a ``global`` assigned in another function, a class
attribute, a class body (a bare name, or a ``global`` assigned there) or a closure. So a finding of
a taint rule inside a function follows from that function's own lines and the file's *module
code*: the file with every outermost function left out as :mod:`auditor.scan.slicing` leaves it
out and every class body blanked (every import kept). The *context* (the same with class bodies
kept) is what every view keeps: a finding there needs no function.

A taint rule's prefilter (:mod:`auditor.scan.prefilter`) names words every match needs. Applied to
the module code together with one function's lines, it tells whether the rule can report
anything in that function at all. A finding is reported at its sink, so when the rule names the
group of its sinks' words (``metadata.prefilter-sink-group``), the function itself must have one
(a ``word(`` item: the word called), or use a name that an import spelling one binds (semgrep
resolves ``from logging import info as say``: ``say(x)`` is ``logging.info(x)``). A rule's *view*
of a file keeps the bodies of the functions that pass and leaves out the others, lines and
columns in place; the rule reads its view, every other rule reads the file, and the findings are
the same. This matters because semgrep's taint rules cost most of a scan, and in a large module
only a few functions hold both a rule's source and its sink words.

A rule that can match in none of the functions nor in the context is not given the file at all.
A rule reads the file whole (no view) when it names no sink group and the module code alone
passes its prefilter (every function could then match), when no body would be left out, or when
the file is not sliced at all (:func:`~auditor.scan.slicing.parse_sliceable`). Checking one
prefilter item never joins text across the module code and a function (an identifier or a
``::`` cannot run from one to the other), and a ``word+word`` item may find its words in either.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from auditor.scan import prefilter, slicing
from auditor.scan.prefilter import Prefilter

_DIGEST = hashlib.sha256(Path(__file__).read_bytes() + Path(slicing.__file__).read_bytes()
                         + Path(prefilter.__file__).read_bytes()).hexdigest()[:16]


def digest() -> str:
    """A digest of the code that makes the views (part of the scan cache's key)."""
    return _DIGEST


@dataclass(frozen=True)
class View:
    """One rule's view of a file: its text (None: the rule can match nowhere in the file, so it
    is not given the file) and how many function bodies it left out."""

    text: str | None
    functions: int
    lines: int


def taint_views(text: str, prefilters: Sequence[Prefilter]) -> list[View | None]:
    """For each prefilter (a taint rule's, admitting ``text``): the rule's view of ``text``, or
    None when the rule reads the file whole (see the module docstring)."""
    out: list[View | None] = [None] * len(prefilters)
    if not prefilters:
        return out
    tree = slicing.parse_sliceable(text)
    if tree is None:
        return out
    lines = text.split("\n")
    functions = list(slicing.outer_functions(tree.body))
    if not functions:
        return out
    own = {id(f): "\n".join(lines[a - 1:b]) for f in functions for a, b in [slicing.span(f)]}
    context, module, imports = _context(lines, functions, tree)
    for i, pf in enumerate(prefilters):
        everywhere = pf.admits(module)
        if everywhere and pf.sink is None:
            continue
        # the module code's words alone, code only: then a function needs only a sink
        module_code = everywhere and pf.admits_words([code_words(module)], (module,))
        keep = {id(f) for f in functions
                if _can_hold_finding(pf, own[id(f)], module, imports, everywhere=everywhere,
                                     module_code=module_code)}
        if not keep and not pf.admits(context):
            out[i] = View(None, len(functions), 0)
            continue
        if len(keep) == len(functions):
            continue
        view = _view(text, tree, keep)
        if view is not None:
            out[i] = view
    return out


def _can_hold_finding(pf: Prefilter, own: str, module: str,
                      imports: Sequence[tuple[frozenset[str], str]], *, everywhere: bool,
                      module_code: bool) -> bool:
    """Whether a function (its lines ``own``) can hold a finding of ``pf``'s rule: the words of
    every group in it or the module code (``everywhere``: the module code has them all), in
    their code (``module_code``: the module code's code has them all), and a sink of its own."""
    if not (everywhere or pf.admits_parts((module, own))):
        return False
    if not pf.admits_at_sink(own, _imported(own, imports)):
        return False
    return module_code or pf.admits_words([code_words(module), code_words(own)], (module, own))


@lru_cache(maxsize=4096)
def code_words(text: str) -> frozenset[str]:
    """The identifiers of ``text``'s code: not those only in a comment or a string literal (an
    f-string's are kept: its fields are code). No pattern of a taint rule's sources matches
    there (a ``pattern-regex`` source taints an expression the match covers, and a literal's
    range holds its quotes), so these are the source words a function can use. Text that does
    not tokenize gives all its identifiers."""
    words: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                words.add(tok.string)
            elif tok.type == tokenize.STRING and "f" in _prefix(tok.string):
                words |= prefilter.identifiers(tok.string)
    except (tokenize.TokenError, SyntaxError):
        return prefilter.identifiers(text)
    return frozenset(words)


def _prefix(literal: str) -> str:
    """A string literal's prefix letters, lower-cased (``rb``, ``f``)."""
    return literal[:len(literal) - len(literal.lstrip("rRbBuUfF"))].lower()


def _context(lines: Sequence[str], functions: Sequence[slicing.Function],
             tree: ast.Module) -> tuple[str, str, list[tuple[frozenset[str], str]]]:
    """The file without its outermost functions (decorators and headers too), every import
    statement kept (the *context*: the code outside every function, where a finding needs no
    function); the context without the class bodies (the *module* code: what a finding in a
    function can depend on besides the function); and each import statement of the file with
    the names it binds."""
    out = list(lines)
    inside: list[ast.Import | ast.ImportFrom] = []
    for f in functions:
        first, last = slicing.span(f)
        out[first - 1:last] = [""] * (last - first + 1)
        inside += slicing.import_statements(f, lines)
    body = [ast.unparse(n) for n in inside]
    module = list(out)
    for c in slicing.outer_classes(tree.body):
        lines_of = slicing.class_body(c, lines)
        if lines_of is not None:  # a body on its header's line is kept
            first, last = lines_of
            module[first - 1:last] = [""] * (last - first + 1)
    imports = [(_binds(n), ast.unparse(n)) for n in slicing.outside_imports(tree)]
    imports += zip(map(_binds, inside), body, strict=True)
    return "\n".join([*out, *body]), "\n".join([*module, *body]), imports


def _binds(n: ast.Import | ast.ImportFrom) -> frozenset[str]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    if isinstance(n, ast.Import):
        return frozenset(a.asname or a.name.split(".")[0] for a in n.names)
    return frozenset(a.asname or a.name for a in n.names if a.name != "*")


def _imported(own: str, imports: Sequence[tuple[frozenset[str], str]]) -> str:
    """The import statements that bind a name ``own`` uses, one a line: semgrep matches a sink
    pattern's dotted name at a use of the name an import binds to it (``from logging import
    info as i``; ``i(x)`` is ``logging.info(x)``)."""
    used = prefilter.identifiers(own)
    return "\n".join(code for names, code in imports if not names.isdisjoint(used))


def _view(text: str, tree: ast.Module, keep: set[int]) -> View | None:
    # not parsed again: leaving bodies out of a file that parses gives one that parses (every
    # body of each of the 2,687 files of vLLM 0.32.0 left out at once: all parse); a view that
    # did not would be a parse error in semgrep, the file then reported not checked
    s = slicing.elide_functions(text, tree, lambda f: id(f) in keep, verify=False)
    return None if s is None else View(s.text, s.functions, s.lines)
