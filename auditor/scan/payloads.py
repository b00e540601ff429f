"""What an encoded literal stands for: a program, or only data (issue 29, principle 6).

An encoded literal is a claim of obfuscation only when what it hides could run: text that reads as
code (Python, shell, PowerShell, JavaScript, VBScript), an executable (ELF, PE, Mach-O), a
marshalled code object or a pickle that names a function to call, or a compressed stream or a
second encoding holding one of those. A curve constant, a test image, a key in a JWK set or
time-zone data decode to bytes that are none of these: they are data, only compared or parsed.

:func:`payload` decodes a literal the ways malware spells one (base64, URL-safe base64, hex,
``\\xNN`` escapes; each also reversed or rot13'd first, the tricks stacked on top), looks through
compression (zlib, gzip, bz2, xz/lzma) and nested encodings, and names what it found, or ``None``
for data. Nothing is ever executed or unpickled: the checks read bytes.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import codecs
import lzma
import re
import zlib
from collections.abc import Callable, Iterator

MAX_DECODED = 1 << 20  # bytes of one decoding looked at (a decompression bomb stops here)
MAX_DEPTH = 4  # encodings and compressions stacked on one another

# words that only code holds (the decoded text of a payload, or the names a code object or a
# pickle carries); an encoded image, key or table has none of them
_CODE = re.compile(
    rb"(?:^|[;\n])[ \t]*(?:import|from[ \t]+[\w.]+[ \t]+import)[ \t]+[A-Za-z_]|\b__import__\b"
    rb"|\b(?:exec|eval|compile|getattr|system|popen|Popen|spawn\w*|startfile)[ \t]*\("
    rb"|\bsubprocess\b|\bos\.(?:system|popen|exec\w*)|\bsocket\.socket\b|\burlopen\b"
    rb"|\burlretrieve\b|\brequests\.(?:get|post)\b|\bdef[ \t]+\w+[ \t]*\(|\blambda\b[^:\n]{0,40}:"
    rb"|/bin/(?:ba|z|da)?sh\b|/dev/tcp/|\b(?:curl|wget)[ \t]+\S|\bchmod[ \t]+[+0-7]"
    rb"|\bnc[ \t]+-[el]|\bchild_process\b|\brequire[ \t]*\(|\bnew[ \t]+Function[ \t]*\(")
# PowerShell, cmd and VBScript words: those languages ignore case
_SCRIPT = re.compile(
    rb"\bpowershell\b|\bcmd(?:\.exe)?[ \t]+/[ck]\b|\bInvoke-(?:Expression|WebRequest)\b|\bIEX[ \t(]"
    rb"|\bDownload(?:String|File|Data)\b|\bStart-Process\b|\bWScript\.|\bCreateObject[ \t]*\("
    rb"|\bShellExecute\b", re.IGNORECASE)
# pickle opcodes that name a callable: GLOBAL ("c" module "\n" name) or the short strings of
# STACK_GLOBAL; a pickle of plain data names none
_PICKLE_CALL = re.compile(rb"(?:os|posix|nt|subprocess|builtins|__builtin__|socket|runpy|"
                          rb"importlib|ctypes)[\x00-\x20\x80-\xff]{1,6}(?:system|popen|exec|"
                          rb"eval|compile|getattr|Popen|call|run|check_output|__import__|"
                          rb"import_module|run_path|run_module|CDLL)")
_EXECUTABLES = ((b"\x7fELF", "an ELF executable"), (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
                (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
                (b"\xfe\xed\xfa\xcf", "a Mach-O executable"))
_B64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{40,}={0,2}")
_HEX_ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2})+")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def payload(run: str, depth: int = MAX_DEPTH) -> str | None:
    """What the encoded ``run`` hides that could run (a phrase for a message), or ``None``."""
    for spelling, text in _spellings(run):
        for encoding, data in _decodings(text):
            found = _inspect(data, depth)
            if found is not None:
                return f"{spelling + ', then ' if spelling else ''}{encoding}: {found}"
    return None


def _spellings(run: str) -> Iterator[tuple[str, str]]:
    yield "", run
    yield "reversed", run[::-1]
    if not run.startswith("\\x"):
        yield "rot13", codecs.encode(run, "rot13")


def _decodings(run: str) -> Iterator[tuple[str, bytes]]:
    """The bytes ``run`` may stand for, each with the name of its encoding."""
    if run.startswith("\\x") or run.endswith("x\\"):
        escapes = run if run.startswith("\\x") else run[::-1]
        if _HEX_ESCAPES.fullmatch(escapes):
            yield "\\x escapes", bytes.fromhex(escapes.replace("\\x", ""))
        return
    if len(run) % 2 == 0 and set(run) <= _HEX_DIGITS:
        yield "hex", bytes.fromhex(run)
    body = run.rstrip("=")
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    padded = body + "=" * (-len(body) % 4)
    for name, alt in (("base64", b"+/"), ("URL-safe base64", b"-_")):
        try:
            yield name, base64.b64decode(padded, altchars=alt, validate=True)[:MAX_DECODED]
        except (binascii.Error, ValueError):
            continue


def _inspect(data: bytes, depth: int) -> str | None:
    """What ``data`` holds that could run, looking through compression and nested encodings."""
    for magic, what in _EXECUTABLES:
        if data.startswith(magic):
            return what
    if data.startswith(b"MZ") and b"PE\0\0" in data[:1024]:
        return "a Windows (PE) executable"
    if data[:1] in (b"c", b"\xe3") and (b"<module>" in data or b"<string>" in data):
        return "a marshalled code object"
    pickled = data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")
    if (pickled or data[:1] == b"c") and _PICKLE_CALL.search(data[:4096]):
        return "a pickle that calls a function"
    if _is_text(data) and (_CODE.search(data) or _SCRIPT.search(data)):
        return "code"
    if depth <= 0:
        return None
    for name, unpack in _UNPACKERS:
        inner = _unpack(unpack, data)
        found = _inspect(inner, depth - 1) if inner is not None else None
        if found is not None:
            return f"{name} holding {found}"
    if _is_text(data):  # a second layer of encoding
        for m in _B64_RUN.finditer(data):
            found = payload(m.group().decode("ascii"), depth - 1)
            if found is not None:
                return f"another encoding ({found})"
    return None


def _is_text(data: bytes) -> bool:
    if not data:
        return False
    sample = data[:4096]
    printable = sum(1 for b in sample if 32 <= b < 127 or b in (9, 10, 13))
    return printable >= 0.9 * len(sample)


def _zlib(data: bytes) -> bytes:
    return zlib.decompressobj(wbits=47).decompress(data, MAX_DECODED)  # zlib or gzip header


def _raw_deflate(data: bytes) -> bytes:
    return zlib.decompressobj(wbits=-15).decompress(data, MAX_DECODED)


def _bz2(data: bytes) -> bytes:
    return bz2.BZ2Decompressor().decompress(data, MAX_DECODED)


def _lzma(data: bytes) -> bytes:
    return lzma.LZMADecompressor().decompress(data, MAX_DECODED)


_UNPACKERS: tuple[tuple[str, Callable[[bytes], bytes]], ...] = (
    ("a zlib/gzip stream", _zlib), ("a bz2 stream", _bz2), ("an xz/lzma stream", _lzma),
    ("a raw deflate stream", _raw_deflate))


def _unpack(unpack: Callable[[bytes], bytes], data: bytes) -> bytes | None:
    try:
        out = unpack(data)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        return None
    return out if len(out) >= 16 else None
