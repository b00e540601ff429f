"""`--format github`: at most 10 annotations of each level, the most important first, then one
summary notice with the counts and the path of report.md (issue 33 item 10: the demo gave 12
`::error` and 14 `::warning` lines; GitHub shows 10 of each per step)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reportcases import finding, rich_audit

from auditor.model import Action, AuditResult, Severity, StageResult, compute_verdict
from auditor.report.github import PER_LEVEL, report_md_beside, workflow_commands


def _many() -> AuditResult:
    base = rich_audit()
    blocks = [finding(path=f"engine/b{i:02}.py", line=i + 1, fingerprint=f"{i:032x}",
                      severity=Severity.LOW if i else Severity.CRITICAL,
                      message=f"block {i}") for i in range(12)]
    reviews = [finding(path=f"engine/r{i:02}.py", line=i + 1, fingerprint=f"{100 + i:032x}",
                       action=Action.REVIEW, severity=Severity.MEDIUM, message=f"review {i}")
               for i in range(14)]
    stages = dict(base.stages)
    stages["scan"] = replace(stages["scan"], findings=tuple(blocks + reviews))
    verdict, reasons = compute_verdict(stages.values())
    return replace(base, verdict=verdict, reasons=reasons, stages=stages)


def _levels(lines: list[str]) -> list[str]:
    return [line[2:].split(" ", 1)[0].split("::", 1)[0] for line in lines]


def test_at_most_ten_of_each_level_then_a_summary() -> None:
    lines = workflow_commands(_many(), "audit-out/report.md")
    levels = _levels(lines)
    for level in ("error", "warning", "notice"):
        assert levels.count(level) <= PER_LEVEL, (level, levels.count(level))
    assert levels.count("error") == PER_LEVEL and levels.count("warning") == PER_LEVEL
    summary = lines[-1]
    assert summary.startswith("::notice ")
    assert "audit-out/report.md" in summary
    # 12 blocking findings + the verdict are errors; 14 reviews + the deps one are warnings
    assert "10 of 13 errors" in summary and "10 of 15 warnings" in summary
    assert "12 block" in summary and "15 review" in summary


def test_the_most_important_come_first() -> None:
    lines = workflow_commands(_many())
    assert "auditor verdict" in lines[0]
    errors = [line for line in lines if line.startswith("::error")]
    assert "block 0" in errors[1]  # the critical one, before the low ones
    assert not any("block 11" in line for line in lines)  # the least: cut, counted in the summary
    assert lines[-1].endswith("every finding is in report.md")


def test_a_small_audit_is_not_cut() -> None:
    audit = rich_audit()
    lines = workflow_commands(audit)
    n = len(audit.findings)
    assert len(lines) == 1 + n + 1  # the verdict, every finding, the summary
    assert "annotations shown: " in lines[-1]


def test_report_md_beside_names_the_folder_as_given() -> None:
    assert report_md_beside(Path("audit-out/audit.json")) == "audit-out/report.md"
    assert report_md_beside(Path("audit.json")) == "report.md"
    assert report_md_beside(Path("/elsewhere/x/audit.json")) == "report.md"  # no machine path


def test_empty_stage_list_still_summarises() -> None:
    base = rich_audit()
    stages = {name: StageResult.not_requested(name) for name in base.stages}
    verdict, reasons = compute_verdict(stages.values())
    lines = workflow_commands(replace(base, verdict=verdict, reasons=reasons, stages=stages))
    assert len(lines) == 2 and lines[-1].startswith("::notice ")
