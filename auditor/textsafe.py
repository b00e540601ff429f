"""Make untrusted text inert: for the terminal, for Markdown and HTML; secrets redacted.

Two control-character escapes, one core: :func:`terminal_safe` escapes *every* control and
format character (newline, tab, CR, ESC, bidi overrides, zero-width and line-separator characters)
so one untrusted string stays one visible line on a console; :func:`document_safe` does the same but
keeps newline and tab, for formats that show multi-line snippets (HTML ``<pre>``, SARIF, Markdown
code). :func:`console_safe` is the console boundary: redacted, escaped, rich markup made literal.
Secret redaction lives in :mod:`auditor.redaction`.
"""

from __future__ import annotations

import html
import re

from auditor.redaction import dump_json, looks_random, redact, redact_tree

# Unicode categories Cc (controls, C0 and C1), Cf (format: bidi embeddings, overrides and
# isolates, zero-width space/joiners, word joiner, BOM, soft hyphen, tag characters), Zl and Zp
# (line and paragraph separators), and lone surrogates (which no terminal can encode). A test checks
# this class against unicodedata for every code point.
_CONTROL_CLASS = (
    "\x00-\x1f\x7f-\x9f\ud800-\udfff\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
_CONTROL = re.compile(f"[{_CONTROL_CLASS}]")
_CONTROL_KEEP_LINES = re.compile(f"(?![\n\t])[{_CONTROL_CLASS}]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    r"""One visible line: every control or format character (``\n``, ``\r``, ``\t``, ESC, BEL,
    bidi overrides, zero-width characters, line separators) becomes a ``\xNN``/``\uNNNN`` escape."""
    return _CONTROL.sub(_visible, text)


def document_safe(text: str) -> str:
    """Like :func:`terminal_safe` but newline and tab stay (multi-line snippets in documents)."""
    return _CONTROL_KEEP_LINES.sub(_visible, text)


def console_safe(text: object) -> str:
    """Untrusted text for a rich console line: redacted, control bytes escaped, markup literal."""
    from rich.markup import escape

    return escape(terminal_safe(redact("" if text is None else str(text))))


EXCERPT_MAX = 24
_RANDOM_WORD = re.compile(r"[A-Za-z0-9+/=_-]{20,}")


def _masked(m: re.Match[str]) -> str:
    return "[REDACTED]" if looks_random(m.group()) else m.group()

_LINE_END = re.compile(r"[\x00\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def excerpt(text: object, limit: int = EXCERPT_MAX) -> str:
    """File content quoted in an error message: redacted (in full, before it is cut), only its
    first line (up to a NUL, newline or other line end), at most ``limit`` characters, control
    characters escaped, and how long it was when cut: ``'FAKE_TOKEN=[REDACTED]'`` or
    ``'hunter2-secret-pa…' (61 characters)``. The one way errors show what a file holds."""
    raw = "" if text is None else str(text)
    clean = _RANDOM_WORD.sub(_masked, redact(raw))
    first = _LINE_END.split(clean, 1)[0]
    cut = len(first) > limit or len(first) < len(clean)
    shown = terminal_safe(first[:limit])
    if not cut:
        return f"'{shown}'"
    return f"'{shown}…' ({len(raw)} characters)"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~&])")


def markdown_safe(text: str) -> str:
    """Inline Markdown text with no links, images, HTML or emphasis; one line."""
    one_line = document_safe(text).replace("\n", " ").replace("\t", " ")
    return _MD_SPECIAL.sub(r"\\\1", one_line)


def html_safe(text: str) -> str:
    return html.escape(document_safe(text), quote=True)


__all__ = ["console_safe", "document_safe", "dump_json", "excerpt", "html_safe", "markdown_safe",
           "redact",
           "redact_tree", "terminal_safe"]
