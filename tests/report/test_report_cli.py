"""`auditor report AUDIT_JSON --format ...`: every format from a saved audit.json; GitHub output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reportcases import rich_audit
from typer.testing import CliRunner

from auditor.cli import app
from auditor.report.formats import ReportFormat
from auditor.report.github import command, escape_property, step_summary


@pytest.fixture()
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(rich_audit().to_json()))
    return path


@pytest.mark.parametrize("fmt", [f.value for f in ReportFormat])
def test_report_cli_every_format(fmt: str, saved: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["report", str(saved), "--format", fmt])
    assert res.exit_code == 0, res.output
    assert "network.python.requests" in res.stdout
    out = tmp_path / f"out.{fmt}"
    res = CliRunner().invoke(app, ["report", str(saved), "--format", fmt, "-o", str(out)])
    assert res.exit_code == 0 and out.read_text() and not res.stdout


def test_report_cli_github_annotations_and_summary(saved: Path, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    res = CliRunner().invoke(app, ["report", str(saved), "--format", "github",
                                   "--summary", str(summary)])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0].startswith("::error title=auditor verdict%3A FAIL::")
    assert ("::error file=engine/telemetry.py,line=4,title=block%3A network::outbound HTTP "
            "request [network.python.requests; commit 2222222222]") in lines
    assert any(x.startswith("::notice file=engine/cache.py,title=waived%3A filesystem::")
               for x in lines)  # the waived, line-0 finding: no line property
    text = summary.read_text()
    assert text.startswith("earlier step\n## ❌ Audit verdict: **FAIL**")  # appended
    assert text.endswith(step_summary(rich_audit()))


def test_report_cli_github_escaping_rules() -> None:
    assert escape_property("a:b,c%d\r\ne") == "a%3Ab%2Cc%25d\\x0d%0Ae"
    assert command("warning", "50% done\nnext", file="x,y.py", line=3, title=None) == \
        "::warning file=x%2Cy.py,line=3::50%25 done%0Anext"
    assert command("notice", "plain") == "::notice::plain"


@pytest.mark.parametrize("content", [None, "{", "[]", '{"schema": "other"}'])
def test_report_cli_bad_audit_json_exit_2(content: str | None, tmp_path: Path) -> None:
    path = tmp_path / "audit.json"
    if content is not None:
        path.write_text(content)
    res = CliRunner().invoke(app, ["report", str(path)])
    assert res.exit_code == 2
    assert str(path) in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("fmt", [f.value for f in ReportFormat])
def test_report_recomputes_a_forged_verdict(fmt: str, tmp_path: Path) -> None:
    data = rich_audit().to_json()
    assert data["verdict"] == "FAIL"
    data["verdict"] = "PASS"
    data["reasons"] = ["every requested check ran and nothing needs review"]
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["report", str(path), "--format", fmt])
    assert res.exit_code == 0
    assert "audit.json says PASS" in " ".join(res.stderr.split())
    if fmt != "sarif":  # SARIF carries findings, not a verdict
        assert "FAIL" in res.stdout and "says PASS" in res.stdout
    if fmt == "json":
        assert json.loads(res.stdout)["verdict"] == "FAIL"
    if fmt == "md":
        assert "✅" not in res.stdout.splitlines()[0]


def test_report_keeps_an_honest_verdict_without_a_warning(saved: Path) -> None:
    res = CliRunner().invoke(app, ["report", str(saved), "--format", "md"])
    assert res.exit_code == 0 and "warning" not in res.stderr
