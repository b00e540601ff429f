"""The report reads the stages' typed results, live or read back from audit.json (issue 32)."""

from __future__ import annotations

import json

from reportcases import rich_audit

from auditor.model import AuditResult, StageResult, StageStatus
from auditor.report.html import HtmlFormatter
from auditor.report.markdown import MarkdownFormatter
from auditor.report.view import build_view
from auditor.results.base import Crashed
from auditor.results.build import BuildData
from auditor.results.deps import DepsData
from auditor.results.sbom import SbomData
from auditor.results.unit import UnitData


def test_the_view_holds_the_typed_results() -> None:
    v = build_view(rich_audit())
    assert v.deps is not None and isinstance(v.deps.data, DepsData)
    assert v.build is not None and isinstance(v.build.data, BuildData)
    assert v.sbom is not None and isinstance(v.sbom.data, SbomData)
    assert v.unit is not None and isinstance(v.unit.data, UnitData)


def test_audit_json_read_back_renders_the_same_report() -> None:
    live = rich_audit()
    back = AuditResult.from_json(json.loads(json.dumps(live.to_json())))
    assert build_view(back) == build_view(live)
    for fmt in (MarkdownFormatter(), HtmlFormatter()):
        assert fmt.render(back) == fmt.render(live)


def test_a_crashed_stage_shows_as_no_data_not_as_an_empty_table() -> None:
    audit = rich_audit()
    stages = dict(audit.stages)
    stages["deps"] = StageResult("deps", StageStatus.INCOMPLETE, Crashed("boom"),
                                 not_checked=("stage crashed: boom",))
    v = build_view(AuditResult(audit.verdict, audit.reasons, stages, tool=audit.tool,
                               inputs=audit.inputs))
    assert v.deps is not None and v.deps.data is None
    assert "No dependency data (the stage did not complete)." in MarkdownFormatter().render(
        AuditResult(audit.verdict, audit.reasons, stages, tool=audit.tool, inputs=audit.inputs))
