"""Diff-scope slices of Python files: the bodies of untouched functions left out, lines in place.

In ``diff`` scope only findings on lines the series changed count (see :mod:`auditor.scan.scope`).
For a Python file the series *modified*, what the scanners can say about those lines depends on
the function they are in and on the file's module-level code, not on the bodies of the other
functions: semgrep Community Edition's taint analysis is intraprocedural and its constant
propagation does not look into other functions' locals; bandit's tests look at one call or one
literal at a time. So each scanner is given a *slice* of the file with the same line numbers and
columns for every kept line:

- kept whole: every module-level statement that is not a function, every class header and
  class-level statement, and every function (decorators included) that holds a changed line or
  has one on the line just before or after it;
- every other function keeps its decorators and header; its body becomes ``...`` on the body's
  first line and blank lines after it.

What in a function body reaches *other* functions is kept too:

- import statements (semgrep and bandit both resolve an alias imported inside one function in the
  functions after it, measured): each stays on its own line, at the body's indentation;
- a function that declares ``global``/``nonlocal`` is kept whole (semgrep then stops treating the
  module-level name as a constant, measured). A plain local of the same name as a module-level
  one does not change semgrep's constants (measured), and bandit carries nothing but imports from
  one function to the next.

A file is scanned whole (not sliced) when it does not parse as Python 3 here, has a line break
other than ``\\n``/``\\r\\n`` (the scanners would count lines differently) or a bidirectional
control character (bandit B613 reports only the first one in a file), when nothing is left out,
or when its slice would not parse. The slices of a series are cached
(:class:`~auditor.scan.slicecache.SliceCache`) by path, content and what blame depends on, so a
warm run neither blames nor parses. The reading of the Python source (functions, spans, imports,
eliding a body) is :mod:`auditor.scan.pyast`.
``tests/scan/test_scan_slicing.py`` runs the real semgrep and bandit over sliced and whole files
and checks the findings on changed lines are the same.

Only Python is sliced. C, C++ and CUDA (through the C++ shim), shell and Dockerfiles are scanned
whole: their rules are few and cheap next to the Python taint rules, a line-preserving C++ slice
would need a parser auditor does not have, a Dockerfile or script is mostly top-level code, and
the real benchmark's series changes no such file.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from functools import partial

from auditor.scan import pyast
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.pool import map_in_processes
from auditor.scan.pyast import Slice
from auditor.scan.slicecache import SliceCache


@dataclass(frozen=True)
class SliceTally:
    """How much a run left out: files sliced, function bodies and non-blank lines left out."""

    files: int = 0
    functions: int = 0
    lines: int = 0
    of_lines: int = 0  # non-blank lines of the files sliced
    cached: int = 0  # slices taken from the slice cache (no blame needed for them)

    def notes(self) -> list[str]:
        if not self.files:
            return []
        return [f"diff scope: {self.files} modified Python file(s) scanned as slices: the bodies "
                f"of {self.functions} function(s) with no changed line were left out "
                f"({self.lines} of {self.of_lines} non-blank line(s)); findings there could "
                "only be on unchanged lines (auditor.scan.diffslice)"]


def sliceable(t: ScanTarget) -> bool:
    """A bundle file's own Python text (not a derived reading, not superseded by one)."""
    return (t.origin is Origin.BUNDLE and t.family == "python" and not t.derived
            and not t.superseded)


def slice_targets(targets: Sequence[ScanTarget], modified: Callable[[ScanTarget], bool],
                  changed_lines: Callable[[Sequence[ScanTarget]], Mapping[str, AbstractSet[int]]],
                  cache: SliceCache | None = None) -> tuple[list[ScanTarget], SliceTally]:
    """``targets`` with each sliceable target of a ``modified`` file (one upstream also has)
    replaced by its slice; ``changed_lines(targets)`` gives the changed lines by target key (it
    is asked only about the targets ``cache`` does not hold; a mapping that works a file's
    lines out when it is read lets the parsing run beside that work). A slice's ``sha256`` is its own
    text's, so the scan cache keys on the sliced content."""
    wanted = [t for t in targets if sliceable(t) and modified(t)]
    if not wanted:
        return list(targets), SliceTally()
    slices: dict[str, Slice | None] = {}
    if cache is not None:
        for t in wanted:
            found, s = cache.get(t)
            if found:
                slices[t.key] = s
    cached = len(slices)
    need = [t for t in wanted if t.key not in slices]
    changed = changed_lines(need) if need else {}
    # parsed and sliced on every core when there is much (each file given to a process as soon
    # as its lines are known: ``changed`` may still be working the others out, blame on threads)
    made = map_in_processes(_slice_job, need, workers=os.cpu_count() or 1,
                            work=lambda t: len(t.text),
                            given=lambda t: (t.text, frozenset(changed[t.key])))
    for t, s in zip(need, made, strict=True):
        slices[t.key] = s
        if cache is not None:
            cache.put(t, s)
    if cache is not None:
        cache.flush()
    out: list[ScanTarget] = []
    files = functions = lines = of_lines = 0
    for t in targets:
        s = slices.get(t.key)
        if s is None:
            out.append(t)
            continue
        files += 1
        functions += s.functions
        lines += s.lines
        of_lines += sum(1 for line in t.text.split("\n") if line.strip())
        out.append(replace(t, text=s.text,
                           sha256=hashlib.sha256(s.text.encode("utf-8")).hexdigest()))
    return out, SliceTally(files, functions, lines, of_lines, cached)


def _slice_job(job: tuple[str, AbstractSet[int]]) -> Slice | None:
    return slice_python(*job)


def slice_python(text: str, changed: AbstractSet[int]) -> Slice | None:
    """The slice of ``text`` that keeps every function near a line in ``changed`` (1-based), or
    None when the file is to be scanned whole (see the module docstring)."""
    return slice_tree(text, pyast.parse_sliceable(text), changed)


def slice_tree(text: str, tree: ast.Module | None, changed: AbstractSet[int]) -> Slice | None:
    """:func:`slice_python` of ``text`` already parsed (``tree``: :func:`~auditor.scan.pyast.parse_sliceable`)."""
    return None if tree is None else pyast.elide_functions(text, tree, partial(_near, changed=changed))


def _near(f: pyast.Function, changed: AbstractSet[int]) -> bool:
    """Whether a changed line is in the function or on the line just before or after it."""
    start, end = pyast.span(f)
    return any(n in changed for n in range(start - 1, end + 2))
