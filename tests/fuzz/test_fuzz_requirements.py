"""Fuzzing the dependency extractors: any requirements file or pyproject.toml gives declarations
or "not checked" lines, never a crash."""

from __future__ import annotations

from fuzz_support import FUZZ, REQUIREMENTS, TRIED, spec_toml
from hypothesis import given

from auditor.deps.extract import pyproject, requirements


def extract_property(text: str) -> None:
    TRIED["requirements"] += 1
    files = {"requirements.txt": text, "other.txt": text[::-1], "constraints.txt": ""}
    result = requirements.extract(["requirements.txt"], files.get, frozenset(files))
    assert all(d.file in files for d in result.declarations)


@FUZZ
@given(REQUIREMENTS)
def test_requirements_extract_never_crashes(text: str) -> None:
    extract_property(text)


@FUZZ
@given(spec_toml())
def test_pyproject_extract_never_crashes(text: str) -> None:
    TRIED["pyproject"] += 1
    pyproject.extract("pyproject.toml", "[project]\ndependencies = []\n" + text)
