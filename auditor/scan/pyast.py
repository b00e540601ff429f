"""Python source read as an AST, with lines and columns in place: the outermost functions and
classes, their spans, the imports of a body, and eliding function bodies.

The toolkit the diff-scope slices (:mod:`auditor.scan.diffslice`), the taint views
(:mod:`auditor.scan.taintviews`) and bandit's views (:mod:`auditor.scan.banditviews`) are made
with. A text is read only when the scanners would count its lines as Python does
(:func:`parse_sliceable`); an elided body keeps its imports on their lines (semgrep and bandit
resolve an alias imported inside one function in the functions after it), and a function that
declares ``global``/``nonlocal`` is never elided (:func:`elidable`).
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from auditor import pysource

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


# the tree of the text this process parsed last (:func:`parsed`); one only: many live trees make
# every garbage collection walk their nodes (remembering 8 MB of source cost more than it saved)
_last: list[tuple[str, pysource.Parsed]] = []
_last_lock = threading.Lock()


def parsed(text: str) -> pysource.Parsed:
    """:func:`auditor.pysource.parse` of ``text`` (newer-Python f-strings read as opaque), the
    same tree when the text is the one this process parsed last: the readings of one file (its
    command lines, then its code strings) are made from one text one after the other, and none
    of them changes a tree. A text that does not parse raises as ``ast.parse`` does, every time
    (errors are not remembered)."""
    with _last_lock:
        if _last and _last[0][0] == text:
            return _last[0][1]
    got = pysource.parse(text)
    with _last_lock:
        _last[:] = [(text, got)]
    return got


def parse(text: str) -> ast.Module:
    """The tree of :func:`parsed` (what a reading of the file's values reads)."""
    return parsed(text).tree


# the nodes of the last tree :func:`walk` listed whole (one: see ``_last``)
_walked: list[tuple[ast.AST, list[ast.AST]]] = []


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, the same nodes in the same order (breadth first), made without
    ast.walk's generators (~40 % faster) and, for a whole module, remembered: the readings of
    one file walk its tree several times. The list is the caller's to read, not to change."""
    if isinstance(node, ast.Module):
        with _last_lock:
            if _walked and _walked[0][0] is node:
                return _walked[0][1]
    out = [node]
    add = out.append
    i = 0
    while i < len(out):
        n = out[i]
        i += 1
        for name in n._fields:
            try:
                v = getattr(n, name)
            except AttributeError:
                continue
            if isinstance(v, ast.AST):
                add(v)
            elif isinstance(v, list):
                for item in v:
                    if isinstance(item, ast.AST):
                        add(item)
    if isinstance(node, ast.Module):
        with _last_lock:
            _walked[:] = [(node, out)]
    return out


@dataclass(frozen=True)
class Slice:
    """A text with function bodies left out: its text (same line count) and what was left out."""

    text: str
    functions: int  # function bodies left out
    lines: int  # non-blank lines left out


def parse_sliceable(text: str) -> ast.Module | None:
    """``text`` parsed, or None when it is not to be sliced at all: it does not parse as Python 3
    here as written (one read only with opaque f-strings, :mod:`auditor.pysource`, is not), or
    has a line break or bidirectional control character the scanners count differently."""
    if odd_characters(text):
        return None
    try:
        got = parsed(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return None if got.opaque else got.tree


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
