"""Lines as git counts them, for every place that maps a line number between git and a scanner."""

from __future__ import annotations

from collections.abc import Iterable


def split_lines(text: str) -> list[str]:
    """Split on newline only, as git does (blame, diff): not on a lone carriage return, form feed
    or Unicode separator, which :meth:`str.splitlines` also breaks on. One ``\\r`` before the
    newline is the CRLF line ending and is dropped; any other ``\\r`` is the line's content."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def line_ranges(lines: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """Line numbers as runs of consecutive lines, ``(first, last)``, in order (duplicates merged)."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return tuple(out)
