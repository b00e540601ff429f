"""Python source as the interpreter decodes it: PEP 263 coding declarations and the BOM.

A coding line such as ``# -*- coding: utf_7 -*-`` makes Python read bytes that look like a comment
(``#+AAo-import urllib...``) as code; a scanner that reads the file as UTF-8 sees nothing. Every
scanner must read what the interpreter runs. :func:`detect` finds the declaration exactly as
:func:`tokenize.detect_encoding` does (the first two lines, the BOM, the same name normalisation and
errors); :func:`decode` decodes the whole file with that codec, as the interpreter does, and maps
every decoded line back to the raw line it came from (a codec may turn one raw line into several).

A declaration of any codec other than UTF-8, ASCII or Latin-1 is itself a finding
(:class:`CodingScanner`): legitimate source has no reason for one. A codec Python does not know, or
bytes the declared codec cannot decode, make the interpreter refuse the file: that is reported
too, and the file is scanned as it is. Two refusals are obfuscation of their own, never a crash of
the reading: a codec that is no text encoding (``rot13``, ``base64``, ``zlib``, ``hex``, ``bz2``,
``uu`` ... turn bytes into bytes; this interpreter refuses them, an older one or a registered
stand-in runs them), and a codec this interpreter does not know (one registered at start-up by a
``.pth`` file or an import hook decides what the file means, out of the scan's sight). A decoder
may raise anything (``zlib.error``, ``binascii.Error``, ``TypeError``): every exception of a
decoding is a refusal.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.model import Category, Severity
from auditor.scan.interface import RawFinding, Scanner, ScannerRun, ScanTarget

#: codecs whose reading of a file is the plain reading the scanners already do
PLAIN_CODECS = frozenset({"utf-8", "utf-8-sig", "ascii", "iso8859-1"})
_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_RE = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")


@dataclass(frozen=True)
class SourceCoding:
    """How the interpreter reads a Python file."""

    encoding: str  # what tokenize.detect_encoding names ("utf-8" without a declaration)
    declared: str | None  # the codec name as written in the coding line
    line: int  # the coding line (1 or 2), 0 without one
    error: str | None = None  # why the interpreter refuses the file
    non_text: bool = False  # the codec is known but is no text encoding (rot13, base64 ...)
    unknown: bool = False  # no codec of that name is known here

    @property
    def plain(self) -> bool:
        """Read as the scanners read UTF-8 text already (no hidden second reading)."""
        if self.error is not None:
            return True  # nothing to decode with: the file is scanned as it is
        try:
            return codecs.lookup(self.encoding).name in PLAIN_CODECS
        except LookupError:
            return True


@dataclass(frozen=True)
class Decoded:
    text: str
    line_map: tuple[int, ...]  # decoded line i + 1 -> raw line


def detect(raw: bytes) -> SourceCoding:
    """The interpreter's reading of ``raw``'s coding declaration (never raises)."""
    declared, line = _cookie(raw)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        reason = str(exc.msg if exc.msg else exc)
        return SourceCoding("", declared, line, error=reason,
                            unknown=reason.startswith("unknown encoding"))
    except Exception as exc:  # a codec's lookup may raise anything: a refusal, never a crash
        return SourceCoding("", declared, line, error=f"{type(exc).__name__}: {exc}")
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        return SourceCoding(encoding, declared, line, error=f"unknown encoding: {encoding}",
                            unknown=True)
    if not getattr(info, "_is_text_encoding", True):
        return SourceCoding(encoding, declared, line, non_text=True,
                            error=f"{declared or encoding} is not a text encoding (a "
                                  f"bytes-to-bytes codec)")
    return SourceCoding(encoding, declared, line)


def _cookie(raw: bytes) -> tuple[str | None, int]:
    lines = raw.split(b"\n", 2)[:2]
    if lines and lines[0].startswith(codecs.BOM_UTF8):
        lines[0] = lines[0][len(codecs.BOM_UTF8):]
    for n, ln in enumerate(lines, start=1):
        m = _COOKIE_RE.match(ln)
        if m:
            return m.group(1).decode("ascii", "replace"), n
        if not _BLANK_RE.match(ln):
            break
    return None, 0


def decode(raw: bytes, coding: SourceCoding) -> Decoded:
    """Decode ``raw`` as the interpreter does; raises UnicodeDecodeError (or LookupError) when
    it cannot be, as the interpreter would refuse it."""
    decoder = codecs.getincrementaldecoder(coding.encoding)(errors="strict")
    chunks: list[str] = []
    source: list[int] = []  # raw line of each decoded character
    raw_lines = raw.split(b"\n")
    for n, part in enumerate(raw_lines, start=1):
        piece = part + (b"\n" if n < len(raw_lines) else b"")
        out = decoder.decode(piece, final=n == len(raw_lines))
        chunks.append(out)
        source.extend([n] * len(out))
    text = "".join(chunks).replace("\r\n", "\n").replace("\r", "\n") if "\r" in "".join(
        chunks) else "".join(chunks)
    if len(text) != len(source):  # newline translation shortened it: map again
        source = _remap(chunks)
    line_map: list[int] = []
    start = 0
    while start < len(text) or not line_map:
        line_map.append(source[start] if start < len(source) else (source[-1] if source else 1))
        nl = text.find("\n", start)
        if nl < 0:
            break
        start = nl + 1
    return Decoded(text, tuple(line_map))


def _remap(chunks: Sequence[str]) -> list[int]:
    source: list[int] = []
    prev_cr = False
    for n, chunk in enumerate(chunks, start=1):
        for ch in chunk:
            if ch == "\n" and prev_cr:
                prev_cr = False
                continue
            prev_cr = ch == "\r"
            source.append(n)
    return source


def decoded_reading(raw_text: str) -> tuple[SourceCoding, Decoded | None]:
    """The coding of a Python file read as UTF-8 text, and its decoded reading when that
    differs from the text (None when the plain reading is the interpreter's, or the interpreter
    refuses the file)."""
    raw = raw_text.encode("utf-8")
    coding = detect(raw)
    if coding.plain:
        return coding, None
    try:
        return coding, decode(raw, coding)
    except Exception as exc:  # a decoder may raise anything (UnicodeError, zlib.error ...)
        return SourceCoding(coding.encoding, coding.declared, coding.line,
                            error=f"the declared codec cannot decode the file "
                                  f"({type(exc).__name__}: {exc})"[:300]), None


class CodingScanner(Scanner):
    """Reports coding declarations that make Python read a file differently from its bytes."""

    name = "coding"
    reads_raw = True

    def version(self) -> str:
        from auditor import __version__

        return f"{__version__}+coding1"

    def options_key(self) -> str:
        import hashlib

        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def accepts(self, target: ScanTarget) -> bool:
        return target.family == "python" and not target.derived

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        return ScannerRun(findings={t.key: tuple(self._scan_one(t)) for t in files}, errors={})

    def _scan_one(self, t: ScanTarget) -> list[RawFinding]:
        coding, _decoded = decoded_reading(t.text)
        line = max(coding.line, 1)
        name = coding.declared or coding.encoding
        if coding.non_text:
            return [RawFinding(
                rule="obfuscation.builtin.non-text-codec", category=Category.OBFUSCATION,
                severity=Severity.HIGH, line=line, end_line=line,
                message=f"the coding declaration names {name}, a codec that is no text "
                        "encoding"[:300],
                help="A bytes-to-bytes codec (rot13, base64, zlib, hex ...) as a source coding "
                     "hides what the file runs where an interpreter or a registered stand-in "
                     "decodes it; this one refuses the file, which was scanned as it looks. "
                     "Source files are UTF-8: ask why this one is not.")]
        if coding.unknown:
            return [RawFinding(
                rule="obfuscation.builtin.unknown-codec", category=Category.OBFUSCATION,
                severity=Severity.HIGH, line=line, end_line=line,
                message=f"the coding declaration names a codec Python does not know ({name})"
                        [:300],
                help="A codec registered at start-up (a .pth file, site or an import hook) "
                     "decides what such a file means; the scan read it as it looks. Find what "
                     "registers the codec, and remove the declaration: source files are UTF-8.")]
        if coding.error is not None:
            return [RawFinding(
                rule="obfuscation.builtin.undecodable-source", category=Category.OBFUSCATION,
                severity=Severity.MEDIUM, line=line, end_line=line,
                message=f"Python refuses this file: {coding.error}"[:300],
                help="The interpreter cannot decode this file as it declares, so it does not run "
                     "as written; it was scanned as plain text. Ask why a source file carries a "
                     "coding declaration that does not work.")]
        if coding.plain:
            return []
        return [RawFinding(
            rule="obfuscation.builtin.coding-declaration", category=Category.OBFUSCATION,
            severity=Severity.HIGH, line=line, end_line=line,
            message=f"a coding declaration ({coding.declared or coding.encoding}) makes Python "
                    "read this file differently from how it looks",
            help="Python decodes the whole file with the declared codec before running it "
                 "(utf_7 and unicode_escape turn comment-looking bytes into code). The scan read "
                 "the decoded text; review that, and remove the declaration: source files are "
                 "UTF-8.")]
