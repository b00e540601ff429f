"""report.md: golden output, the section order, and what is shown for missing or partial stages."""

from __future__ import annotations

from dataclasses import replace

from reportcases import C1, C2, C3, check_golden, hostile_audit, rich_audit
from typed_results import unit_data

from auditor.model import AuditResult, StageResult, StageStatus, Verdict, compute_verdict
from auditor.report.jsonout import JsonFormatter
from auditor.report.markdown import MarkdownFormatter, code
from auditor.results import Crashed
from auditor.results.verify import VerifyData


def render(audit: AuditResult) -> str:
    return MarkdownFormatter().render(audit)


def test_report_markdown_golden() -> None:
    check_golden("rich.report.md", render(rich_audit()))


def test_report_markdown_golden_hostile() -> None:
    check_golden("hostile.report.md", render(hostile_audit()))


def test_report_json_golden_roundtrip() -> None:
    text = JsonFormatter().render(rich_audit())
    check_golden("rich.audit.json", text)
    import json

    again = AuditResult.from_json(json.loads(text))
    assert again.verdict is Verdict.FAIL
    assert [f.fingerprint for f in again.findings] == [f.fingerprint
                                                       for f in rich_audit().findings]


def test_report_markdown_order_verdict_then_not_checked_then_stages() -> None:
    text = render(hostile_audit())
    assert text.startswith("# ❌ Audit verdict: **FAIL**")
    i_nc, i_st, i_proof = (text.index("## Not checked"), text.index("## Stages"),
                           text.index("## Tree proof"))
    assert i_nc < i_st < i_proof
    assert "osv snapshot missing" in text[i_nc:i_st]
    assert "Not requested by the spec, so not checked at all: build, sbom, unit" in text


def test_report_markdown_commits_in_series_order_with_counts() -> None:
    text = render(rich_audit())
    section = text[text.index("## Findings by commit"):text.index("## Findings by category")]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    assert [r.split("|")[2].strip() for r in rows] == [code(C1[:10]), code(C2[:10]),
                                                        code(C3[:10])]
    assert "| clean |" in rows[0]  # the benign commit is shown clean
    assert "2 block" in rows[1] and "network: 1 block; secret-access: 1 block" in rows[1]
    assert "2 review" in rows[2]
    assert "upstream code \\(inherited\\)" in section and "1 waived" in section


def test_report_markdown_every_stage_has_one_line() -> None:
    text = render(rich_audit())
    for line in ("| verify | ✅ ok | proof holds", "| scan | ✅ ok | scope diff; 2 file",
                 "| deps | ✅ ok | 1 added, 0 removed, 1 changed dependencies; 1 known vuln",
                 "| build | ✅ ok | wheel engine-1.0.0", "| sbom | ✅ ok | SBOM sbom.cdx.json",
                 "| unit | ✅ ok | engine.service: exposure 1.3 OK"):
        assert line in text, line
    assert "reproducible (two builds identical)" in text
    assert "GHSA-xxxx-yyyy-zzzz" in text and "CVE-2026-0001" in text
    assert "**exposure 1.3 OK**" in text
    assert "Every requested check ran." in text


def test_report_markdown_failed_proof_and_incomplete_stage() -> None:
    audit = rich_audit()
    stages = dict(audit.stages)
    verify = stages["verify"].data_as(VerifyData)
    assert verify is not None and verify.proof is not None
    stages["verify"] = replace(stages["verify"], status=StageStatus.FAILED,
                               reasons=("bundle tree differs",),
                               data=replace(verify, ok=False, proof=replace(
                                   verify.proof, differences=({"path": "x.py",
                                                               "change": "added"},),
                                   differences_total=1)))
    stages["build"] = StageResult("build", StageStatus.INCOMPLETE,
                                  not_checked=("nvcc is not installed on this machine",))
    verdict, reasons = compute_verdict(stages.values())
    text = render(AuditResult(verdict, reasons, stages, audit.tool, audit.inputs))
    assert "❌ the bundle is NOT upstream + the listed commits" in text
    assert "| x.py | added |" in text
    assert "⚠️ build: nvcc is not installed on this machine" in text
    assert "| build | ⚠️ incomplete | incomplete: nvcc is not installed" in text
    assert "verify: bundle tree differs" in text


def test_report_markdown_stage_without_a_result_does_not_crash() -> None:
    """A stage that crashed has only its error; one without data has nothing to summarise."""
    stages = {"verify": StageResult("verify", StageStatus.OK),
              "deps": StageResult("deps", StageStatus.INCOMPLETE, Crashed("ValueError: x"),
                                  not_checked=("stage crashed: ValueError: x",)),
              "unit": StageResult("unit", StageStatus.OK, unit_data(score=None))}
    verdict, reasons = compute_verdict(stages.values())
    text = render(AuditResult(verdict, reasons, stages))
    assert "# ⏳ Audit verdict: **INCOMPLETE**" in text or "INCOMPLETE" in text.splitlines()[0]
    assert "exposure not measured" in text


def test_report_markdown_fits_a_pull_request_comment() -> None:
    from reportcases import finding

    from auditor.model import Category

    many = tuple(finding(category=cat, fingerprint=f"{i:032x}", line=i + 1,
                         message="x" * 120, path=f"engine/module_{i}.py")
                 for i in range(1500) for cat in [list(Category)[i % 12]])
    audit = rich_audit()
    stages = dict(audit.stages)
    stages["scan"] = replace(stages["scan"], findings=many)
    verdict, reasons = compute_verdict(stages.values())
    text = render(AuditResult(verdict, reasons, stages, audit.tool, audit.inputs))
    assert len(text) < 65536
    assert "listed in report.html and findings.sarif" in text
