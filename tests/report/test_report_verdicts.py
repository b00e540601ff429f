"""Each verdict and its exit code, and every report format renders each verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from reportcases import finding, rich_audit
from typed_results import verify_data

from auditor.model import (
    Action,
    AuditResult,
    FailOn,
    StageResult,
    StageStatus,
    Verdict,
    compute_verdict,
    exit_code_for,
)
from auditor.report import AUDIT_FORMATS, write_reports
from auditor.report.formats import ReportFormat, formatter_for
from auditor.report.interface import Formatter

OK = StageResult("verify", StageStatus.OK, verify_data())

CASES = {
    "pass": ([OK, StageResult("scan", StageStatus.OK, findings=(
        finding(action=Action.INFO), finding(action=Action.BLOCK, waived=True, waiver="ok")))],
        Verdict.PASS, 0, 0),
    "review": ([OK, StageResult("scan", StageStatus.OK, findings=(
        finding(action=Action.REVIEW),))], Verdict.REVIEW, 1, 0),
    "fail-block": ([OK, StageResult("scan", StageStatus.OK, findings=(finding(),))],
                   Verdict.FAIL, 1, 1),
    "fail-proof": ([StageResult("verify", StageStatus.FAILED, verify_data(ok=False),
                                reasons=("bundle differs",))], Verdict.FAIL, 1, 1),
    "incomplete": ([OK, StageResult("scan", StageStatus.INCOMPLETE,
                                    not_checked=("x.py: parse error",))], Verdict.INCOMPLETE, 3, 3),
    "fail-beats-incomplete": ([OK, StageResult("scan", StageStatus.INCOMPLETE,
                                               findings=(finding(),), not_checked=("y",))],
                              Verdict.FAIL, 1, 1),
    "incomplete-beats-review": ([OK, StageResult("scan", StageStatus.OK, findings=(
        finding(action=Action.REVIEW),)), StageResult("deps", StageStatus.INCOMPLETE,
                                                      not_checked=("osv",))],
        Verdict.INCOMPLETE, 3, 3),
    "not-requested-is-fine": ([OK, StageResult.not_requested("build")], Verdict.PASS, 0, 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_report_verdict_and_exit_code(name: str, tmp_path: Path) -> None:
    stages, verdict, code_review, code_block = CASES[name]
    got, reasons = compute_verdict(stages)
    assert got is verdict
    assert reasons  # every verdict states its reasons
    assert exit_code_for(got, FailOn.REVIEW) == code_review
    assert exit_code_for(got, FailOn.BLOCK) == code_block
    audit = AuditResult(got, reasons, {s.name: s for s in stages})
    write_reports(audit, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert f"Audit verdict: **{verdict.value}**" in md
    for r in reasons:
        assert r.split(":")[0] in md
    assert f'class="verdict v-{verdict.value}"' in (tmp_path / "report.html").read_text()


def test_report_write_reports_files(tmp_path: Path) -> None:
    write_reports(rich_audit(), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["findings.sarif", "report.html",
                                                          "report.md"]
    assert [f.value for f in AUDIT_FORMATS] == ["md", "html", "sarif"]


@pytest.mark.parametrize("fmt", list(ReportFormat))
def test_report_every_format_renders(fmt: ReportFormat) -> None:
    formatter = formatter_for(fmt)
    assert isinstance(formatter, Formatter)
    text = formatter.render(rich_audit())
    assert text.endswith("\n") and "network.python.requests" in text
