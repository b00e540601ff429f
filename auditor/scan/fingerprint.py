"""A scan finding's fingerprint: one finding in its context, not every copy of its line.

A waiver or a gate's approval names a finding by its fingerprint. Made of the rule, the path and
the line's text alone, one fingerprint would also cover a copy of that line anywhere else in the
file: a new function of the series that ends in upstream's reviewed line would be waived with it.
So the fingerprint also holds

- the context: for Python, the chain of ``def``/``class`` headers the finding sits in (by
  indentation, as the interpreter nests them); for other text, the nearest non-blank line before
  and after the finding's lines;
- the origin: whether the finding's lines come from the series or from upstream.

Whitespace runs are normalised, so re-indenting or moving a finding within the same context keeps
its fingerprint (line numbers are never part of it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from auditor.model import fingerprint_of

_HEADER = re.compile(r"\s*(?:async\s+def|def|class)\s+\w+")
_CONTEXT_SCAN = 2000  # lines looked at above a finding for its enclosing headers


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def python_context(lines: Sequence[str], line: int) -> list[str]:
    """The ``def``/``class`` header lines enclosing 1-based ``line``, outermost first."""
    if not 1 <= line <= len(lines):
        return []
    current = lines[line - 1]
    depth = _indent(current) if current.strip() else None
    out: list[str] = []
    for n in range(line - 2, max(-1, line - 2 - _CONTEXT_SCAN), -1):
        text = lines[n]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        ind = _indent(text)
        if depth is None or ind < depth:
            if _HEADER.match(text):
                out.append(text.strip())
            depth = ind
            if ind == 0:
                break
    return out[::-1]


def neighbour_context(lines: Sequence[str], line: int, end_line: int) -> list[str]:
    """The nearest non-blank line before ``line`` and after ``end_line`` (1-based)."""
    before = next((lines[n].strip() for n in range(line - 2, max(-1, line - 5), -1)
                   if 0 <= n < len(lines) and lines[n].strip()), "")
    after = next((lines[n].strip() for n in range(end_line, min(len(lines), end_line + 3))
                  if lines[n].strip()), "")
    return [before, after]


def scan_fingerprint(rule: str, path: str, code: str, lines: Sequence[str], line: int,
                     end_line: int, *, python: bool, from_series: bool) -> str:
    """The fingerprint of a scan finding (see the module's text)."""
    context = (python_context(lines, line) if python
               else neighbour_context(lines, line, max(line, end_line)))
    origin = "series" if from_series else "upstream"
    return fingerprint_of(rule, path, "\n".join([code, "\0context", *context, "\0" + origin]))
