"""What the scanners are given at most: a per-file size and longest-line cap.

A file past either cap is not given to any scanner: semgrep's matching grows with the square of a
line's length (measured here: a 60 k-character line 1.6 s, a 600 k-character one 242 s, a 29 MB
single-line file minutes and gigabytes), so one such file would stall the whole scan. It is
reported instead, quickly: *not checked* when its kind needs rules (code, scripts, configuration,
unknown text; the verdict is then INCOMPLETE and says why), *skipped* with the reason when it is
text or data that needs none (Markdown, JSON, requirement files the deps stage reads). Never
silently clean.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.scan.coverage import kind_of, needs_rules

#: bytes of a file's UTF-8 text
MAX_BYTES = 4 * 1024 * 1024
#: characters of its longest line (between two ``\n``)
MAX_LINE = 20_000


@dataclass(frozen=True)
class Oversize:
    """Why a file is past the caps, and whether that leaves it not checked."""

    reason: str
    needs_rules: bool


def longest_line(text: str) -> int:
    """The length of the longest ``\\n``-separated line (no copy of the text is made)."""
    longest = start = 0
    while True:
        nl = text.find("\n", start)
        end = len(text) if nl < 0 else nl
        longest = max(longest, end - start)
        if nl < 0:
            return longest
        start = nl + 1


def oversize(path: str, family: str | None, text: str, size: int) -> Oversize | None:
    """None when the file is within the caps; else the reason it is not scanned."""
    parts: list[str] = []
    if size > MAX_BYTES:
        parts.append(f"{size} bytes (cap {MAX_BYTES})")
    if len(text) > MAX_LINE:  # a shorter text has no longer line
        line = longest_line(text)
        if line > MAX_LINE:
            parts.append(f"a line of {line} characters (cap {MAX_LINE})")
    if not parts:
        return None
    kind = kind_of(path, family)
    return Oversize(reason=f"too large to scan: {' and '.join(parts)}; no scanner read it",
                    needs_rules=needs_rules(kind))
