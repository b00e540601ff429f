"""The lazy rfc3987_syntax stand-in answers exactly as the real package does."""

from __future__ import annotations

import importlib
import sys

import pytest

import auditor.sbom  # noqa: F401  (installs the stand-in before jsonschema is imported)
from auditor.sbom import iri_syntax

SAMPLES = [
    "https://example.com/x?y=1#z", "https://example.com/a b", "git+https://github.com/a/b.git",
    "urn:uuid:6f0d5d2e-3a58-5b8e-9c3e-1f5a0a6b7c21", "", "relative/path", "http://[::1]:80/",
    "https://例え.jp/パス", "mailto:a@b.example", "http://a/%zz", "pkg:pypi/vllm@0.30.0",
    "file:///etc/passwd", "http://x\x00y", "//host/only", "?q", "#frag", "http://a:b@c:8080/d",
]


@pytest.mark.parametrize("term", ["iri", "iri_reference"])
def test_iri_syntax_stand_in_matches_the_real_package(term: str) -> None:
    stand_in = sys.modules.get(iri_syntax.REAL)
    if stand_in is None or getattr(stand_in, "__file__", None) != iri_syntax.__file__:
        pytest.skip("the real rfc3987_syntax was imported first or is not installed")
    real = importlib.import_module(f"{iri_syntax.REAL}.syntax_helpers")
    for value in SAMPLES:
        assert stand_in.is_valid_syntax(term, value) == real.is_valid_syntax(term, value), value


def test_jsonschema_iri_reference_format_uses_it() -> None:
    import jsonschema

    checker = jsonschema.FormatChecker()
    assert checker.conforms("https://example.com/x?y=1#z", "iri-reference")
    assert not checker.conforms("https://example.com/a b", "iri-reference")
