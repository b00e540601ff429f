"""A 100,000-character commit subject, message, finding message, path or snippet does not make
the reports huge (issue 30 item 23): each shown text is cut, saying how much was left out; the
full text stays in audit.json."""

import io
import json
from dataclasses import replace

import pytest
from reportcases import C1, commit, finding, scan_data, verify_stage
from rich.console import Console

from auditor.model import AuditResult, StageResult, StageStatus, compute_verdict
from auditor.report import formatter_for
from auditor.report.console import print_summary
from auditor.report.formats import ReportFormat
from auditor.report.github import step_summary, workflow_commands

LONG = 100_000


def _long_audit(field: str) -> AuditResult:
    texts = {k: ("short " + k) for k in ("subject", "body", "message", "path", "snippet",
                                          "author", "reason", "waiver")}
    texts[field] = field[0].upper() + ("x" * (LONG - 2)) + "Z"
    c = commit(C1, texts["subject"], 1, author_name=texts["author"],
               message=f"{texts['subject']}\n\n{texts['body']}\n")
    f = finding(path=texts["path"], commit=C1, message=texts["message"],
                snippet=texts["snippet"], line=1, waived=field == "waiver",
                waiver=texts["waiver"] if field == "waiver" else None)
    stages = {"verify": verify_stage([c]),
              "scan": StageResult("scan", StageStatus.OK, scan_data(), findings=(f,))}
    verdict, reasons = compute_verdict(stages.values())
    if field == "reason":
        reasons = (*reasons, texts["reason"])
    return AuditResult(verdict, reasons, stages, tool={"name": "auditor", "version": "9.9.9"},
                       inputs={"engine": {"profile": "engine", "version": "1.0.0"}})


FIELDS = ["subject", "body", "message", "path", "snippet", "author", "reason", "waiver"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("fmt", [ReportFormat.MARKDOWN, ReportFormat.HTML, ReportFormat.SARIF,
                                 ReportFormat.GITHUB])
def test_a_long_text_is_cut_in_every_report(field, fmt):
    audit = _long_audit(field)
    short = formatter_for(fmt).render(_long_audit("none"))
    text = formatter_for(fmt).render(audit)
    assert len(text) < len(short) + 25_000, (field, fmt, len(text), len(short))
    assert "x" * 5000 not in text
    if fmt is ReportFormat.MARKDOWN and field in ("subject", "message", "path"):
        assert "more characters in audit.json" in text


@pytest.mark.parametrize("field", FIELDS)
def test_the_full_text_stays_in_audit_json(field):
    audit = _long_audit(field)
    text = formatter_for(ReportFormat.JSON).render(audit)
    assert "x" * (LONG - 2) in text
    assert AuditResult.from_json(json.loads(text)).to_json() == audit.to_json()


@pytest.mark.parametrize("field", FIELDS)
def test_console_and_github_outputs_are_cut_too(field, tmp_path):
    audit = _long_audit(field)
    buf = io.StringIO()
    print_summary(Console(file=buf, width=200), replace(audit), tmp_path)
    assert len(buf.getvalue()) < 40_000
    assert len(step_summary(audit)) < 40_000
    assert all(len(line) < 5_000 for line in workflow_commands(audit))
