"""Python as semgrep can parse it: a line- and column-preserving rewrite of what its parser rejects.

semgrep 1.185's Python parser fails a whole file ("Other syntax error ... Common.Impossible",
reported at line 1) when a ``match`` statement has a mapping pattern with a rest capture,
``case {"data": d, **rest}:`` (PEP 634). Such a file could only be reported not checked; vLLM 0.33's
``vllm/renderers/cohere.py`` is one. :func:`semgrep_python` writes the ``**`` of each such capture
as ``0:`` — the same two characters' width, so every line and column stays where it was — which
makes the rest an ordinary value capture under a literal key: the name is still bound from the
match subject, which is all a pattern or taint rule reads of it. Nothing else is touched, and a
file Python cannot parse, or with line breaks other than ``\\n``/``\\r\\n``, is given unchanged
(semgrep then reports on it as it would).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import re
import tokenize
from pathlib import Path

from auditor import pysource

REST = "**"
STAND_IN = "0:"  # as wide as REST
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
# a file without both (a `match` statement has a `case` clause) has no pattern: a cheap test
# before parsing (`match` alone is a common variable name: 37 files of vLLM 0.32.0 with `**`, 6 with
# a `case` line too)
_MATCH_LINE = re.compile(r"^[ \t]*match\b", re.MULTILINE)
_CASE_LINE = re.compile(r"^[ \t]*case\b", re.MULTILINE)


def semgrep_python(text: str) -> str:
    """``text`` with every mapping-pattern rest ``**name`` written ``0:name``."""
    if (REST not in text or not _MATCH_LINE.search(text) or not _CASE_LINE.search(text)
            or "\r" in text.replace("\r\n", "")):
        return text
    try:
        tree = pysource.parse(text).tree
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    mappings = [n for n in ast.walk(tree) if isinstance(n, ast.MatchMapping) and n.rest]
    if not mappings:
        return text
    lines = text.split("\n")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    spots = [spot for m in mappings if (spot := _rest_operator(m, lines, tokens)) is not None]
    for row, col in spots:  # (1-based row, character column) of a REST token
        line = lines[row - 1]
        lines[row - 1] = line[:col] + STAND_IN + line[col + len(REST):]
    return "\n".join(lines)


@functools.lru_cache(maxsize=1024)
def rewrites(text: str) -> bool:
    """Whether :func:`semgrep_python` changes ``text`` (the scan's coverage says so)."""
    return semgrep_python(text) != text


def _rest_operator(m: ast.MatchMapping, lines: list[str],
                   tokens: list[tokenize.TokenInfo]) -> tuple[int, int] | None:
    """Where the mapping's own ``**`` is: the one at the mapping's outermost bracket depth."""
    assert m.end_lineno is not None and m.end_col_offset is not None
    start = (m.lineno, _chars(lines, m.lineno, m.col_offset))
    end = (m.end_lineno, _chars(lines, m.end_lineno, m.end_col_offset))
    depth = 0
    for tok in tokens:
        if tok.start < start or tok.end > end or tok.type != tokenize.OP:
            continue
        if tok.string in _OPEN:
            depth += 1
        elif tok.string in _CLOSE:
            depth -= 1
        elif tok.string == REST and depth == 1:
            return tok.start
    return None


def _chars(lines: list[str], row: int, byte_col: int) -> int:
    """ast's UTF-8 byte column as a character column."""
    return len(lines[row - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


@functools.cache
def digest() -> str:
    """A digest of this module's source (part of a scan cache key)."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
