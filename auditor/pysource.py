"""Python source parsed by this interpreter, including files that use the f-strings of newer
Pythons (PEP 701, Python 3.12: the same quote inside a replacement field, a backslash or a
comment in one), which this interpreter's parser refuses.

Such a file is still read: every run of adjacent string literals that holds an f-string this
interpreter cannot compile is read as an opaque expression, ``(_f ...)``, that spans the same
lines and columns, and the rest of the file is parsed as written. An opaque expression is a name,
not a constant: a reader that takes literal values (a requirement list, a command line, a code
string) counts it as computed, never as a value, and :attr:`Parsed.opaque` names its lines.
A file that fails for any other reason raises the parser's own error.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from dataclasses import dataclass

INTERPRETER = f"Python {sys.version_info.major}.{sys.version_info.minor}"
_PREFIX = re.compile(r"(?i)(?:rb|br|fr|rf|r|b|u|f)(?=['\"])")
_NAME_CHAR = re.compile(r"\w")
_OPEN = "([{"
_CLOSE = ")]}"


@dataclass(frozen=True)
class Parsed:
    """A module's tree; ``opaque``: the (first) lines of the string runs read as opaque."""

    tree: ast.Module
    opaque: tuple[int, ...] = ()


def parse(text: str, filename: str = "<unknown>") -> Parsed:
    """``ast.parse(text)``; when that fails, the text with its newer-Python f-strings read as
    opaque (module docstring), or the first error raised again."""
    try:
        return Parsed(_parse(text, filename))
    except SyntaxError as first:
        if "{" not in text:  # no replacement field: no f-string of a newer Python
            raise
        try:
            runs = [r for r in _string_runs(text) if r.fstring and not _compiles(text[r.start:r.end])]
        except ValueError:  # the lexer lost its way: the parser's own error stands
            raise first from None
        if not runs:
            raise
        masked = _mask(text, runs)
        try:
            tree = _parse(masked, filename)
        except (SyntaxError, ValueError):
            raise first from None
        return Parsed(tree, tuple(sorted({text.count("\n", 0, r.start) + 1 for r in runs})))


def _parse(text: str, filename: str) -> ast.Module:
    with warnings.catch_warnings():  # the file's own oddities are not our warnings
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(text, filename=filename)


def _compiles(literal: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile("(" + literal + "\n)", "<literal>", "eval", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class _Run:
    start: int
    end: int
    fstring: bool


def _mask(text: str, runs: list[_Run]) -> str:
    out: list[str] = []
    at = 0
    for r in runs:
        out.append(text[at:r.start])
        out.append(_opaque(text[r.start:r.end]))
        at = r.end
    out.append(text[at:])
    return "".join(out)


def _opaque(span: str) -> str:
    """An expression as long as ``span``, with its line breaks where they were."""
    lines = re.split(r"(\r\n|\r|\n)", span)
    blank = ["".join(" " for _ in part) if i % 2 == 0 else part for i, part in enumerate(lines)]
    first, last = blank[0], blank[-1]
    head = "(_f"[:max(2, min(3, len(first)))]
    if len(blank) == 1:
        return head + first[len(head):-1] + ")" if len(first) > len(head) else "(_)"[:len(first)]
    blank[0] = head + first[len(head):]
    blank[-1] = last[:-1] + ")"
    return "".join(blank)


def _string_runs(text: str) -> list[_Run]:
    """The runs of adjacent string literals in ``text`` at any depth of the module's own code
    (not inside other literals), each marked when it holds an f-string."""
    lexer = _Lexer(text)
    runs: list[_Run] = []
    depth = 0
    current: _Run | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"" or (c in "rRbBuUfF" and _PREFIX.match(text, i)):
            start = i
            i, fstring = lexer.literal(i)
            current = (_Run(start, i, fstring) if current is None
                       else _Run(current.start, i, current.fstring or fstring))
            continue
        gap = _gap_end(text, i, depth)
        if gap is not None:  # between the literals of one run, or between tokens
            i = gap
            continue
        if current is not None:
            runs.append(current)
            current = None
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        i += 1
        while _NAME_CHAR.match(c) and i < n and _NAME_CHAR.match(text[i]):
            i += 1  # a whole word: a prefix letter inside a name is no prefix
    if current is not None:
        runs.append(current)
    return runs


def _gap_end(text: str, i: int, depth: int) -> int | None:
    """The end of the blank, comment or line continuation at ``i`` (a line break counts inside
    brackets only), or None when ``text[i]`` starts a token."""
    c = text[i]
    if c in " \t\f" or (c in "\r\n" and depth > 0):
        return i + 1
    if c == "#":
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if c == "\\" and text.startswith(("\\\n", "\\\r"), i):
        return i + (3 if text.startswith("\\\r\n", i) else 2)
    return None


class _Lexer:
    """String literals read the way Python 3.12 reads them (PEP 701)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def literal(self, i: int) -> tuple[int, bool]:
        """The end of the literal starting at ``i`` (its prefix included), and whether it is an
        f-string."""
        text = self.text
        m = _PREFIX.match(text, i)
        prefix = m.group(0).lower() if m else ""
        i += len(prefix)
        quote = text[i:i + 3] if text.startswith(("'''", '"""'), i) else text[i]
        i += len(quote)
        raw, fmt = "r" in prefix, "f" in prefix
        return self._body(i, quote, raw, fmt, in_spec=False), fmt

    def _body(self, i: int, quote: str, raw: bool, fmt: bool, in_spec: bool) -> int:
        """From inside a literal (or a format spec, ``in_spec``) to just past its end."""
        text, n = self.text, len(self.text)
        while i < n:
            if text.startswith(quote, i) and not in_spec:
                return i + len(quote)
            c = text[i]
            if c == "\\":
                if fmt and not raw and text.startswith("\\N{", i):  # a named character
                    end = text.find("}", i)
                    i = n if end < 0 else end + 1
                elif fmt and text.startswith(("\\{", "\\}"), i):  # no escape: a field follows
                    i += 1
                else:
                    i += 2
                continue
            if len(quote) == 1 and c in "\r\n" and not in_spec:
                raise ValueError("line break in a one-line string")
            if fmt and c == "{":
                if text.startswith("{{", i) and not in_spec:
                    i += 2
                    continue
                i = self._field(i + 1, raw)
                continue
            if fmt and c == "}":
                if in_spec:
                    return i  # the field's closing brace ends its spec
                i += 2 if text.startswith("}}", i) else 1
                continue
            i += 1
        raise ValueError("unterminated string")

    def _field(self, i: int, raw: bool) -> int:
        """From inside a replacement field to just past its closing brace."""
        text, n = self.text, len(self.text)
        depth = 0
        while i < n:
            c = text[i]
            m = _PREFIX.match(text, i) if c in "rRbBuUfF" else None
            if c in "'\"" or (m and not (i and _NAME_CHAR.match(text[i - 1]))):
                i, _ = self.literal(i)
                continue
            if _NAME_CHAR.match(c):
                while i < n and _NAME_CHAR.match(text[i]):
                    i += 1
                continue
            if c == "#":
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                if depth == 0:
                    if c != "}":
                        raise ValueError("unbalanced replacement field")
                    return i + 1
                depth -= 1
            elif depth == 0 and c == ":":
                i = self._body(i + 1, "", raw, True, in_spec=True)
                if not text.startswith("}", i):
                    raise ValueError("unterminated format spec")
                return i + 1
            elif depth == 0 and c == "!" and not text.startswith("!=", i):
                i += 1  # a conversion: the spec or the closing brace follows
                continue
            i += 1
        raise ValueError("unterminated replacement field")
