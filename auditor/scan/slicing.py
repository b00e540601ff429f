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
or when its slice would not parse. The slices of a series are cached (:class:`SliceCache`) by
path, content and what blame depends on, so a warm run neither blames nor parses.
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
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from auditor.errors import ToolError
from auditor.fsutil import JsonStore
from auditor.gitio import Git
from auditor.model import Workspace
from auditor.provenance.gitstate import git_settings
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.pool import map_in_processes

SLICE_CACHE_SCHEMA = "auditor/slice-cache/v1"
# line breaks other than "\n" and "\r\n" that Python, semgrep or bandit might count
_ODD_BREAK = re.compile("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# bidirectional control characters (bandit B613 reports only the first in a file)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200f]")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef
_SCOPE_WORDS = re.compile(r"\b(?:global|nonlocal)\b")
_IMPORT_WORD = re.compile(r"\bimport\b")
_COMPOUND_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
# the ASCII characters of _ODD_BREAK (every character of _BIDI is outside ASCII): a text that is
# ASCII and has none of these needs neither search
_ODD_ASCII = "\r\x0b\x0c\x1c\x1d\x1e"


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
    cached: int = 0  # slices taken from the slice cache (no blame needed for them)

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


class SliceCache:
    """Slices by (path, file sha256, what blame's answer depends on): a warm run, and an upgrade
    gate whose rebased series gives a file the same blobs, need no blame to find them.

    What blame's answer depends on is the series identity (:func:`blame_identity`: git's settings
    and the two commits), or, for a path the series only modifies in place on a line of
    single-parent commits on upstream (:func:`path_histories`), git's settings, upstream's blob
    and the blobs the commits give the path, in order: which lines of the file the series wrote
    follows from those blobs alone. An entry is a JSON file holding the replaced lines (or that
    the file is scanned whole). Unreadable entries are misses; a cache that cannot be written
    only costs speed."""

    def __init__(self, root: Path, series: str, settings: str = "",
                 histories: SeriesPaths | None = None,
                 upstream: Mapping[str, str] | None = None) -> None:
        self.store = JsonStore(root / "slice")
        # entries are written on a thread of their own (file system calls let the parsing go on)
        self._writer: ThreadPoolExecutor | None = None
        self.series = series
        self.settings = settings
        self.histories = histories
        self.upstream = upstream or {}

    def _blame_key(self, path: str) -> list[object]:
        h = self.histories
        if h is None or path in h.moved or path not in self.upstream:
            return [self.series]
        return [self.settings, self.upstream[path], list(h.blobs.get(path, ()))]

    def _key(self, t: ScanTarget) -> str:
        from auditor.scan.cache import code_digest

        raw = json.dumps([SLICE_CACHE_SCHEMA, code_digest(), self._blame_key(t.path), t.path,
                          t.sha256])
        return hashlib.sha256(raw.encode()).hexdigest()

    def get(self, t: ScanTarget) -> tuple[bool, Slice | None]:
        """(found, the slice or None for "scan it whole")."""
        data = self.store.get(self._key(t))
        if data is None:
            return False, None
        if data.get("whole"):
            return True, None
        try:
            lines = t.text.split("\n")
            for n, text in data["edits"]:
                if not 1 <= int(n) <= len(lines):
                    return False, None
                lines[int(n) - 1] = str(text)
            return True, Slice("\n".join(lines), int(data["functions"]), int(data["lines"]))
        except (ValueError, KeyError, TypeError):
            return False, None

    def put(self, t: ScanTarget, s: Slice | None) -> None:
        doc: dict[str, object] = {"whole": s is None}
        if s is not None:
            old = t.text.split("\n")
            doc.update(functions=s.functions, lines=s.lines,
                       edits=[[n, line] for n, line in enumerate(s.text.split("\n"), start=1)
                              if line != old[n - 1]])
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="auditor-slices")
        self._writer.submit(self.store.put, self._key(t), doc)

    def flush(self) -> None:
        """Wait until every entry given to :meth:`put` is written (or failed to be)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None


def slice_cache(cache_dir: Path | None, ws: Workspace,
                upstream: Mapping[str, str] | None = None) -> SliceCache | None:
    """The slice cache of this series under ``cache_dir`` (None: no cache, or git could not say
    what the series' identity is); ``upstream`` maps upstream's paths to their blobs."""
    if cache_dir is None:
        return None
    try:
        settings = blame_settings(ws)
        return SliceCache(cache_dir, blame_identity(ws, settings), settings, path_histories(ws),
                          upstream)
    except (ToolError, OSError):
        return None


def _digest(parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def blame_identity(ws: Workspace, settings: str | None = None) -> str:
    """What blame over the series says depends on: the two commits and git's settings
    (:func:`blame_settings`, computed unless given). Two runs with the same identity blame
    alike."""
    return _digest([settings or blame_settings(ws), ws.upstream_commit, ws.head_commit])


@dataclass(frozen=True)
class SeriesPaths:
    """What the series' commits do to each path (:func:`path_histories`)."""

    blobs: Mapping[str, tuple[str, ...]]  # path -> the blobs its commits give it, in order
    moved: frozenset[str]  # paths some commit adds, deletes or changes the type of


def path_histories(ws: Workspace) -> SeriesPaths | None:
    """For each path the series modifies in place: the blobs its commits give it, in order; the
    paths some commit adds, deletes or changes the type of apart (blame could follow such a path
    to another's history). None unless the series is one line of single-parent commits from
    upstream to head. One ``git log --no-renames --raw``."""
    git = Git(ws.patches_repo)
    res = git.run("log", "--reverse", "--raw", "-z", "--no-renames", "--no-abbrev",
                  "--no-ext-diff", "--format=%x01%H %P",
                  *ws.series_revs, text=False)
    raw = res.stdout if isinstance(res.stdout, bytes) else res.stdout.encode()
    parent = ws.upstream_commit
    blobs: dict[str, list[str]] = {}
    moved: set[str] = set()
    tokens = iter(raw.split(b"\0"))
    for token in tokens:
        tok = token.lstrip(b"\n")
        if tok.startswith(b"\x01"):
            sha, *parents = tok[1:].decode("ascii").split()
            if parents != [parent]:
                return None
            parent = sha
        elif tok.startswith(b":"):
            path = next(tokens, b"").decode("utf-8", "surrogateescape")
            _ma, _mb, _old, new, status = tok[1:].decode("ascii").split()
            if status != "M":
                moved.add(path)
            blobs.setdefault(path, []).append(new)
        elif tok:
            return None
    if parent != ws.head_commit:
        return None
    return SeriesPaths(blobs={p: tuple(b) for p, b in blobs.items() if p not in moved},
                       moved=frozenset(moved))


def blame_settings(ws: Workspace) -> str:
    """git's settings that can change what blame says of the same commits
    (:func:`~auditor.provenance.gitstate.git_settings` of the patches repository)."""
    return git_settings(Git(ws.patches_repo))


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
    return slice_tree(text, parse_sliceable(text), changed)


def slice_tree(text: str, tree: ast.Module | None, changed: AbstractSet[int]) -> Slice | None:
    """:func:`slice_python` of ``text`` already parsed (``tree``: :func:`parse_sliceable`)."""
    return None if tree is None else elide_functions(text, tree, partial(_near, changed=changed))


def parse_sliceable(text: str) -> ast.Module | None:
    """``text`` parsed, or None when it is not to be sliced at all: it does not parse as Python 3
    here, or has a line break or bidirectional control character the scanners count differently."""
    if odd_characters(text):
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def odd_characters(text: str) -> bool:
    """Whether ``text`` has a line break other than ``\\n``/``\\r\\n`` or a bidirectional control
    character (the scanners count lines differently; bandit B613 reads the raw lines)."""
    return ((not text.isascii() or any(c in text for c in _ODD_ASCII))
            and bool(_ODD_BREAK.search(text) or _BIDI.search(text)))


def elide_functions(text: str, tree: ast.Module, keep: Callable[[Function], bool], *,
                    verify: bool = True) -> Slice | None:
    """``text`` (parsed as ``tree``) with the bodies of the outermost functions that ``keep``
    refuses left out (those that can be: see :func:`elidable`), lines and columns in place; None
    when nothing is left out or (``verify``) the result would not parse."""
    lines = text.split("\n")
    elided = [f for f in outer_functions(tree.body) if not keep(f) and elidable(f, lines)]
    out = list(lines)
    left_out = functions = 0
    for f in elided:
        removed = _elide(f, lines, out)
        if removed:
            functions += 1
            left_out += removed
    if not functions:
        return None
    sliced = "\n".join(out)
    if not verify:
        return Slice(text=sliced, functions=functions, lines=left_out)
    if not compiles(sliced):  # a slice that does not parse would leave the file unread
        return None  # scan it whole instead
    return Slice(text=sliced, functions=functions, lines=left_out)


def compiles(text: str) -> bool:
    """Whether ``text`` compiles: CPython's parser without building Python's ``ast`` objects
    (~4x faster than :func:`ast.parse` on vLLM's code), and stricter (``return`` outside a
    function, ``nonlocal`` at module level): a text it refuses is one scanned whole."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are the code's, not ours to print
            compile(text, "<slice>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def outer_functions(stmts: Sequence[ast.stmt]) -> Iterator[Function]:
    """The outermost functions among ``stmts``: at module level, in classes, in compound
    statements (``if``/``try``/``with`` ...), but not inside other functions."""
    for s in stmts:
        if isinstance(s, FUNCTIONS):
            yield s
            continue
        if isinstance(s, ast.ClassDef):
            yield from outer_functions(s.body)
            continue
        for name in _COMPOUND_FIELDS:
            for child in getattr(s, name, None) or ():
                if isinstance(child, ast.stmt):
                    yield from outer_functions([child])
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from outer_functions(child.body)


def outer_classes(stmts: Sequence[ast.stmt]) -> Iterator[ast.ClassDef]:
    """The outermost classes among ``stmts``: not inside a function or another class."""
    for s in statements(stmts, not_into=lambda s: isinstance(s, (*FUNCTIONS, ast.ClassDef))):
        if isinstance(s, ast.ClassDef):
            yield s


def class_body(c: ast.ClassDef, lines: Sequence[str]) -> tuple[int, int] | None:
    """The first and last line of a class's body, 1-based; None when the body does not begin a
    line of its own (``class C: x = 1``)."""
    first = c.body[0]
    start = _start(first)
    decorators: list[ast.expr] = getattr(first, "decorator_list", None) or []
    at: ast.stmt | ast.expr = decorators[0] if decorators else first
    if before(lines[start - 1], at.col_offset).strip():
        return None
    return start, c.end_lineno or c.body[-1].lineno


def span(f: Function) -> tuple[int, int]:
    """The function's first line (its first decorator's) and last line, 1-based."""
    return _start(f), _end(f)


def _near(f: Function, changed: AbstractSet[int]) -> bool:
    """Whether a changed line is in the function or on the line just before or after it."""
    start, end = span(f)
    return any(n in changed for n in range(start - 1, end + 2))


def elidable(f: Function, lines: Sequence[str]) -> bool:
    """Whether the body can be left out: it starts on a line of its own and declares no
    ``global``/``nonlocal`` (a word test on its lines: a comment or string only keeps more)."""
    first = f.body[0]
    start = _start(first)
    if start == first.lineno and not _blank(before(lines[start - 1], first.col_offset)):
        return False
    body = "\n".join(lines[start - 1:_end(f)])
    return not (("global" in body or "nonlocal" in body) and _SCOPE_WORDS.search(body))


def _start(stmt: ast.stmt) -> int:
    """The first line of a statement: a decorated one starts at its first decorator (each
    decorator begins a line of its own)."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _end(f: Function) -> int:
    return f.end_lineno or f.body[-1].lineno


def before(line: str, col_offset: int) -> str:
    """The text before a node on its line (``col_offset`` counts UTF-8 bytes)."""
    if line.isascii():
        return line[:col_offset]
    return line.encode("utf-8")[:col_offset].decode("utf-8", "replace")


def _blank(s: str) -> bool:
    return not s.strip(" \t")


def import_statements(f: Function, lines: Sequence[str]) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in the body of ``f`` (at any depth), in source order; a word test
    on the body's lines first (most bodies import nothing)."""
    first, end = _start(f.body[0]), _end(f)
    if not _IMPORT_WORD.search("\n".join(lines[first - 1:end])):
        return []
    return [n for n in statements(f.body) if isinstance(n, (ast.Import, ast.ImportFrom))]


def outside_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` that is not in a function's body, in source order."""
    return [n for n in statements(tree.body, not_into=lambda s: isinstance(s, FUNCTIONS))
            if isinstance(n, (ast.Import, ast.ImportFrom))]


def body_imports(f: Function, lines: Sequence[str]) -> dict[int, list[str]]:
    """:func:`import_statements` of ``f``, as one line of code by start line."""
    out: dict[int, list[str]] = {}
    for n in import_statements(f, lines):
        out.setdefault(n.lineno, []).append(ast.unparse(n))
    return out


def statements(stmts: Sequence[ast.stmt], *,
               not_into: Callable[[ast.stmt], bool] = lambda _s: False) -> Iterator[ast.stmt]:
    """Every statement among ``stmts`` and in their bodies at any depth (an expression holds
    none), in source order, not entering the bodies of those ``not_into`` names."""
    for s in stmts:
        yield s
        if not_into(s):
            continue
        for name in _COMPOUND_FIELDS:
            for child in getattr(s, name, None) or ():
                if isinstance(child, ast.stmt):
                    yield from statements([child], not_into=not_into)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from statements(child.body, not_into=not_into)


def _elide(f: Function, lines: Sequence[str],
           out: list[str]) -> int:
    """Replace the body's lines in ``out``; returns how many non-blank lines were left out."""
    first, end = _start(f.body[0]), _end(f)
    indent = lines[first - 1][:len(lines[first - 1]) - len(lines[first - 1].lstrip(" \t"))]
    imports = body_imports(f, lines)
    for n in range(first, end + 1):
        cr = "\r" if lines[n - 1].endswith("\r") else ""
        if n in imports:
            out[n - 1] = indent + "; ".join(imports[n]) + cr
        else:
            out[n - 1] = (indent + "..." if n == first else "") + cr
    if all(out[n - 1] == lines[n - 1] for n in range(first, end + 1)):
        return 0
    return sum(1 for n in range(first, end + 1) if lines[n - 1].strip() and n not in imports)
