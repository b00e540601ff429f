"""Make untrusted text inert: terminal control bytes, Markdown, HTML; and redact secrets."""

from __future__ import annotations

import html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    r"""Control bytes (ESC, BEL, CR, bidi overrides...) become visible ``\xNN`` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~&])")


def markdown_safe(text: str) -> str:
    """Inline Markdown text with no links, images, HTML or emphasis; one line."""
    one_line = terminal_safe(text).replace("\r", " ").replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", one_line)


def html_safe(text: str) -> str:
    return html.escape(terminal_safe(text), quote=True)


# Secrets: well-known token shapes and `key = "value"` assignments of secret-looking names.
_SECRET_PATTERNS = [
    re.compile(r"\b(sk-[A-Za-z0-9_-]{16,})"),
    re.compile(r"\b(hf_[A-Za-z0-9]{20,})"),
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,})"),
    re.compile(r"\b(AKIA[0-9A-Z]{16})\b"),
    re.compile(r"\b(xox[abpr]-[A-Za-z0-9-]{10,})"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"),
    # `name = "value"` (quoted literal), or env-file style `NAME=value` with a plain token value
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password|passwd|credential)s?[\"']?\s*[:=]\s*"
               r"[\"'])([^\s\"']{6,})"),
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password|passwd|credential)s?\s*[:=]\s*)"
               r"([A-Za-z0-9_\-./+:@]{8,})(?=\s|$)"),
    re.compile(r"(?i)(--api-key[= ]+)([^\s\"']{4,})"),
]


def redact(text: str) -> str:
    """Replace secret values with ``[REDACTED]``, keeping the name so the finding still reads."""
    out = text
    for pat in _SECRET_PATTERNS:
        if pat.groups >= 2:
            out = pat.sub(lambda m: m.group(1) + "[REDACTED]", out)
        else:
            out = pat.sub("[REDACTED]", out)
    return out
