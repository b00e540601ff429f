"""Views of a Python file for the taint rules: the function bodies a rule cannot match left out.

Semgrep Community Edition's taint analysis is intraprocedural. Measured with semgrep 1.185 (and
kept true by ``tests/scan/test_scan_taintviews.py``): taint set in module-level code reaches the
functions that read it, but it is not followed from one function to another through ``self``
fields, call arguments or return values, a ``global`` assigned in another function, a class
attribute or a closure. So a finding of a taint rule inside a function follows from that
function's own lines and the file's *context*: the file with every outermost function body left
out as :mod:`auditor.scan.slicing` leaves it out (module-level code, class bodies, every function's
decorators and header, every import kept on its line).

A taint rule's prefilter (:mod:`auditor.scan.prefilter`) names words every match needs. Applied to
the context together with one function's lines, it tells whether the rule can report anything in
that function at all. A rule's *view* of a file keeps the bodies of the functions that pass and
leaves out the others, lines and columns in place; the rule reads its view, every other rule reads
the file, and the findings are the same. This matters because semgrep's taint rules cost most of a
scan, and in a large module only a few functions hold both a rule's source and its sink words.

A rule that can match in none of the functions (nor in the context alone) is not given the file
at all. A rule reads the file whole (no view) when the context alone passes its prefilter (every function
could then match), when no body would be left out, or when the file is not sliced at all
(:func:`~auditor.scan.slicing.parse_sliceable`). Checking one prefilter item never joins text across
the context and a function (an identifier or a ``::`` cannot run from one to the other), and a
``word+word`` item may find its words in either.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
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
    context = _context(lines, functions)
    for i, pf in enumerate(prefilters):
        if pf.admits(context):
            continue
        keep = {id(f) for f in functions if pf.admits_parts((context, own[id(f)]))}
        if not keep:
            out[i] = View(None, len(functions), 0)
            continue
        if len(keep) == len(functions):
            continue
        view = _view(text, tree, keep)
        if view is not None:
            out[i] = view
    return out


def _context(lines: Sequence[str], functions: Sequence[slicing.Function]) -> str:
    """The file without its outermost functions (decorators and headers too), every import
    statement kept: what a finding in any one function can depend on besides that function."""
    out = list(lines)
    imports: list[str] = []
    for f in functions:
        first, last = slicing.span(f)
        out[first - 1:last] = [""] * (last - first + 1)
        imports += [i for found in slicing.body_imports(f, lines).values() for i in found]
    return "\n".join([*out, *imports])


def _view(text: str, tree: ast.Module, keep: set[int]) -> View | None:
    # not parsed again: leaving bodies out of a file that parses gives one that parses (every
    # body of each of the 2,687 files of vLLM 0.32.0 left out at once: all parse); a view that
    # did not would be a parse error in semgrep, the file then reported not checked
    s = slicing.elide_functions(text, tree, lambda f: id(f) in keep, verify=False)
    return None if s is None else View(s.text, s.functions, s.lines)
