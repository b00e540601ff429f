"""Logical lines of line-oriented files: a line ending in ``\\`` is continued on the next one."""

from __future__ import annotations

from collections.abc import Callable


def logical_lines(text: str, clean: Callable[[str], str | None]) -> list[tuple[int, int, str]]:
    """(first line, last line, joined text) of every logical line that is not blank.

    Each physical line goes through ``clean`` first (None drops it, without ending a continuation);
    a cleaned line ending in ``\\`` continues on the next with the backslash replaced by a space.
    """
    out: list[tuple[int, int, str]] = []
    buf = ""
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = n
        line = clean(raw)
        if line is None:
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            out.append((start, n, buf.strip()))
        buf = ""
    if buf.strip():
        out.append((start, start, buf.strip()))
    return out
