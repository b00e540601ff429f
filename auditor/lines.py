"""Lines as git counts them, for every place that maps a line number between git and a scanner."""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """Split on newline only, as git does (blame, diff): not on a lone carriage return, form feed
    or Unicode separator, which :meth:`str.splitlines` also breaks on. One ``\\r`` before the
    newline is the CRLF line ending and is dropped; any other ``\\r`` is the line's content."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
