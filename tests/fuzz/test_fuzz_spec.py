"""Fuzzing the spec loader: any audit.toml loads or is a typed AuditError (exit 2), never a crash."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fuzz_support import FUZZ, TRIED, spec_toml
from hypothesis import given
from hypothesis import strategies as st

from auditor.errors import AuditError
from auditor.spec import load_spec


def load_property(text: str | bytes) -> None:
    TRIED["spec"] += 1
    with tempfile.TemporaryDirectory(prefix="fuzz-spec-") as d:
        top = Path(d)
        (top / "x.txt").write_text("x\n")
        (top / "dir").mkdir()
        os.mkfifo(top / "fifo")
        spec = top / "audit.toml"
        if isinstance(text, bytes):
            spec.write_bytes(text)
        else:
            spec.write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            load_spec(spec)
        except AuditError as exc:
            assert exc.exit_code == 2 and exc.diagnostics()


@FUZZ
@given(spec_toml())
def test_spec_loads_or_is_a_spec_error(text: str) -> None:
    load_property(text)


@FUZZ
@given(st.binary(max_size=400))
def test_spec_bytes_load_or_are_a_spec_error(data: bytes) -> None:
    load_property(data)
