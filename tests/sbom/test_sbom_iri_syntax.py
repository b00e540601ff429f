"""The lazy rfc3987_syntax stand-in answers exactly as the real package does."""

from __future__ import annotations

import importlib.util
import json
import subprocess
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


_COMPARE = """
import importlib, json, sys
import auditor.sbom
from auditor.sbom import iri_syntax
stand_in = sys.modules[iri_syntax.REAL]
assert stand_in.__file__ == iri_syntax.__file__, "stand-in not installed"
real = importlib.import_module(iri_syntax.REAL + ".syntax_helpers")
term, samples = sys.argv[1], json.loads(sys.argv[2])
print(json.dumps([[stand_in.is_valid_syntax(term, v), real.is_valid_syntax(term, v)]
                  for v in samples]))
"""


@pytest.mark.parametrize("term", ["iri", "iri_reference"])
def test_iri_syntax_stand_in_matches_the_real_package(term: str) -> None:
    """In a fresh interpreter, so that no earlier import of jsonschema can hide the stand-in."""
    if importlib.util.find_spec(iri_syntax.REAL) is None:
        pytest.skip("rfc3987_syntax is not installed: jsonschema does not check iri formats")
    res = subprocess.run([sys.executable, "-c", _COMPARE, term, json.dumps(SAMPLES)],
                         capture_output=True, text=True, check=True)
    for value, (ours, theirs) in zip(SAMPLES, json.loads(res.stdout), strict=True):
        assert ours == theirs, value


def test_jsonschema_iri_reference_format_uses_it() -> None:
    import jsonschema

    checker = jsonschema.FormatChecker()
    assert checker.conforms("https://example.com/x?y=1#z", "iri-reference")
    assert not checker.conforms("https://example.com/a b", "iri-reference")
