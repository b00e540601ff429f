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
control character (bandit B613 reports only the first one in a file), or when nothing is left out.
``tests/scan/test_scan_slicing.py`` runs the real semgrep and bandit over sliced and whole files
and checks the findings on changed lines are the same.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from auditor.scan.interface import Origin, ScanTarget

#: part of the cache identity of everything derived from a slice (bump when the slice changes)
SLICER_VERSION = "1"

# line breaks other than "\n" and "\r\n" that Python, semgrep or bandit might count
_ODD_BREAK = re.compile("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# bidirectional control characters (bandit B613 reports only the first in a file)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200f]")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_WORDS = re.compile(r"\b(?:global|nonlocal)\b")
_IMPORT_WORD = re.compile(r"\bimport\b")
_COMPOUND_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass(frozen=True)
class Slice:
    """A file's slice: its text (same line count) and what was left out."""

    text: str
    functions: int  # function bodies left out
    lines: int  # non-blank lines left out


@dataclass(frozen=True)
class SliceTally:
    """How much a run left out: files sliced, function bodies and non-blank lines left out."""

    files: int = 0
    functions: int = 0
    lines: int = 0
    of_lines: int = 0  # non-blank lines of the files sliced

    def notes(self) -> list[str]:
        if not self.files:
            return []
        return [f"diff scope: {self.files} modified Python file(s) scanned as slices: the bodies "
                f"of {self.functions} function(s) with no changed line were left out "
                f"({self.lines} of {self.of_lines} non-blank line(s)); findings there could "
                "only be on unchanged lines (auditor.scan.slicing)"]


def sliceable(t: ScanTarget) -> bool:
    """A bundle file's own Python text (not a derived reading, not superseded by one)."""
    return (t.origin is Origin.BUNDLE and t.family == "python" and not t.derived
            and not t.superseded)


def slice_targets(targets: Sequence[ScanTarget], modified: Callable[[ScanTarget], bool],
                  changed_lines: Callable[[Sequence[ScanTarget]], Mapping[str, AbstractSet[int]]]
                  ) -> tuple[list[ScanTarget], SliceTally]:
    """``targets`` with each sliceable target of a ``modified`` file (one upstream also has)
    replaced by its slice; ``changed_lines(targets)`` gives the changed lines by target key. A
    slice's ``sha256`` is its own text's, so the scan cache keys on the sliced content."""
    wanted = [t for t in targets if sliceable(t) and modified(t)]
    if not wanted:
        return list(targets), SliceTally()
    changed = changed_lines(wanted)
    out: list[ScanTarget] = []
    files = functions = lines = of_lines = 0
    for t in targets:
        s = slice_python(t.text, changed[t.key]) if t.key in changed else None
        if s is None:
            out.append(t)
            continue
        files += 1
        functions += s.functions
        lines += s.lines
        of_lines += sum(1 for line in t.text.split("\n") if line.strip())
        out.append(replace(t, text=s.text,
                           sha256=hashlib.sha256(s.text.encode("utf-8")).hexdigest()))
    return out, SliceTally(files, functions, lines, of_lines)


def slice_python(text: str, changed: AbstractSet[int]) -> Slice | None:
    """The slice of ``text`` that keeps every function near a line in ``changed`` (1-based), or
    None when the file is to be scanned whole (see the module docstring)."""
    if _ODD_BREAK.search(text) or _BIDI.search(text):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.split("\n")
    elided = [f for f in _functions(tree.body) if not _near(f, changed) and _elidable(f, lines)]
    out = list(lines)
    left_out = functions = 0
    for f in elided:
        removed = _elide(f, lines, out)
        if removed:
            functions += 1
            left_out += removed
    if not functions:
        return None
    return Slice(text="\n".join(out), functions=functions, lines=left_out)


def _functions(stmts: Sequence[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The outermost functions among ``stmts``: at module level, in classes, in compound
    statements (``if``/``try``/``with`` ...), but not inside other functions."""
    for s in stmts:
        if isinstance(s, _FUNCTIONS):
            yield s
            continue
        if isinstance(s, ast.ClassDef):
            yield from _functions(s.body)
            continue
        for name in _COMPOUND_FIELDS:
            for child in getattr(s, name, None) or ():
                if isinstance(child, ast.stmt):
                    yield from _functions([child])
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from _functions(child.body)


def _span(f: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    start = min([f.lineno, *(d.lineno for d in f.decorator_list)])
    return start, _end(f)


def _near(f: ast.FunctionDef | ast.AsyncFunctionDef, changed: AbstractSet[int]) -> bool:
    """Whether a changed line is in the function or on the line just before or after it."""
    start, end = _span(f)
    return any(n in changed for n in range(start - 1, end + 2))


def _elidable(f: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str]) -> bool:
    """Whether the body can be left out: it starts on a line of its own and declares no
    ``global``/``nonlocal`` (a word test on its lines: a comment or string only keeps more)."""
    first = f.body[0]
    if not _blank(_prefix(lines[first.lineno - 1], first.col_offset)):
        return False
    return not any(_SCOPE_WORDS.search(lines[n - 1]) for n in range(first.lineno, _end(f) + 1))


def _end(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return f.end_lineno or f.body[-1].lineno


def _prefix(line: str, col_offset: int) -> str:
    """The text before a node on its line (``col_offset`` counts UTF-8 bytes)."""
    return line.encode("utf-8")[:col_offset].decode("utf-8", "replace")


def _blank(s: str) -> bool:
    return not s.strip(" \t")


def _imports(stmts: Iterable[ast.stmt]) -> dict[int, list[str]]:
    """Every import statement in ``stmts`` (at any depth), as one line of code by start line."""
    out: dict[int, list[str]] = {}
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                out.setdefault(n.lineno, []).append(ast.unparse(n))
    return out


def _elide(f: ast.FunctionDef | ast.AsyncFunctionDef, lines: Sequence[str],
           out: list[str]) -> int:
    """Replace the body's lines in ``out``; returns how many non-blank lines were left out."""
    first, end = f.body[0].lineno, _end(f)
    indent = _prefix(lines[first - 1], f.body[0].col_offset)
    has_import = any(_IMPORT_WORD.search(lines[n - 1]) for n in range(first, end + 1))
    imports = _imports(f.body) if has_import else {}
    for n in range(first, end + 1):
        cr = "\r" if lines[n - 1].endswith("\r") else ""
        if n in imports:
            out[n - 1] = indent + "; ".join(imports[n]) + cr
        else:
            out[n - 1] = (indent + "..." if n == first else "") + cr
    if all(out[n - 1] == lines[n - 1] for n in range(first, end + 1)):
        return 0
    return sum(1 for n in range(first, end + 1) if lines[n - 1].strip() and n not in imports)
