"""Fuzzing the readers of a saved audit.json (``report`` in every format, ``gate --baseline``):
a realistic audit with one part replaced by arbitrary JSON renders or is an InputError (exit 2)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from fuzz_support import FUZZ, JSON, TRIED, json_paths, replace_at
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from reportcases import hostile_audit, rich_audit  # noqa: E402

from auditor.errors import AuditError  # noqa: E402
from auditor.gate.baseline import load_baseline  # noqa: E402
from auditor.gate.result import decide  # noqa: E402
from auditor.report import render_saved  # noqa: E402
from auditor.report.formats import ReportFormat  # noqa: E402

SEEDS = [rich_audit().to_json(), hostile_audit().to_json()]


@st.composite
def mutated_audits(draw: st.DrawFn) -> object:
    doc = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(json_paths(doc)))
        doc = replace_at(doc, path, draw(JSON))
    return doc


def read_property(doc: object, fmt: ReportFormat) -> None:
    TRIED["audit.json"] += 1
    with tempfile.TemporaryDirectory(prefix="fuzz-audit-") as d:
        path = Path(d) / "audit.json"
        path.write_text(json.dumps(doc))
        try:
            text = render_saved(path, fmt)
        except AuditError as exc:
            assert exc.exit_code == 2
        else:
            assert isinstance(text, str)
        try:
            old = load_baseline(path)
        except AuditError as exc:
            assert exc.exit_code == 2
        else:
            decide(old, rich_audit(), baseline_path=str(path))


@FUZZ
@given(mutated_audits(), st.sampled_from(list(ReportFormat)))
def test_saved_audit_renders_or_is_an_input_error(doc: object, fmt: ReportFormat) -> None:
    read_property(doc, fmt)
