"""Reading git's patch output (``git log -p``): the names it writes and its hunk headers.

git writes a path as it is, or C-quoted (``"tab\\there.py"``, octal escapes for other bytes) when
it has odd characters; ``---``/``+++`` rows end a name that has a space with a tab. Both readers
of patches, the review's hunks (:mod:`auditor.review.hunks`) and the series walk
(:mod:`auditor.provenance.serieswalk`), read names and hunk headers here.
"""

from __future__ import annotations

import os

from auditor.errors import ToolError

_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
            ord("r"): 13, ord('"'): 34, ord("\\"): 92}


def split_quoted(value: bytes) -> tuple[bytes, bytes]:
    """The first C-quoted string of ``value`` (as git quotes odd paths), and the rest after it."""
    out = bytearray()
    i = 1
    while i < len(value):
        c = value[i]
        if c == 34:  # closing quote
            return bytes(out), value[i + 1:]
        if c == 92 and i + 1 < len(value):
            n = value[i + 1]
            if 48 <= n <= 55 and i + 3 < len(value):
                out.append(int(value[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    raise ToolError(f"git log -p: unterminated quoted path {value[:120]!r}")


def side_path(value: bytes, prefix: bytes) -> str | None:
    """The path of a ``---``/``+++`` row (``value`` after the marker), without ``prefix``; None
    for ``/dev/null`` (a created or deleted file's other side)."""
    value = value.split(b"\t")[0] if not value.startswith(b'"') else value
    if value == b"/dev/null":
        return None
    raw = split_quoted(value)[0] if value.startswith(b'"') else value
    if raw.startswith(prefix):
        raw = raw[len(prefix):]
    return os.fsdecode(raw)


def header_path(rest: bytes) -> str | None:
    """The path of ``diff --git a/P b/P`` (``rest``: the row after ``diff --git``; renames are off,
    so both sides name the same path); None when the row cannot be read that way."""
    if rest.startswith(b'"'):
        first, _ = split_quoted(rest)
        return os.fsdecode(first[2:] if first.startswith(b"a/") else first)
    n = (len(rest) - 5) // 2
    if n > 0 and rest[:2] == b"a/" and rest[2 + n:2 + n + 3] == b" b/":
        return os.fsdecode(rest[2:2 + n])
    return None


def hunk_ranges(header: bytes) -> tuple[int, int, int, int]:
    """``(old start, old length, new start, new length)`` of a ``@@ -a,b +c,d @@`` row (a length
    left out is 1); ValueError when the row is not one."""
    try:
        ranges = header.split(b"@@")[1].split()
        old = _range(ranges[0], b"-")
        new = _range(ranges[1], b"+")
    except IndexError:
        raise ValueError(header[:120]) from None
    return (*old, *new)


def _range(token: bytes, sign: bytes) -> tuple[int, int]:
    if not token.startswith(sign):
        raise ValueError(token)
    start, _, length = token[1:].partition(b",")
    return int(start), int(length) if length else 1
