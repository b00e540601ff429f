"""Find the line a value is written on, for formats whose parsers do not keep line numbers."""

from __future__ import annotations

import re


def section_line(lines: list[str], header: str) -> int:
    """1-based line of a ``[header]`` (TOML/INI), or 0."""
    pat = re.compile(r"^\s*\[\s*" + re.escape(header) + r"\s*\]\s*(#.*)?$")
    for n, line in enumerate(lines, 1):
        if pat.match(line):
            return n
    return 0


def value_line(lines: list[str], value: str, start: int = 0,
               used: set[tuple[int, str]] | None = None) -> int:
    """1-based line at or after ``start`` (1-based) holding ``value`` quoted, else ``start``."""
    quoted = (f'"{value}"', f"'{value}'", f'"""{value}', f"'''{value}")
    for n in range(max(start, 1), len(lines) + 1):
        if used is not None and (n, value) in used:
            continue
        if any(q in lines[n - 1] for q in quoted):
            if used is not None:
                used.add((n, value))
            return n
    return start
