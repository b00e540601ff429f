"""The pipeline writes the audit directory atomically and fails closed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import simple_case, write_spec

import auditor.report as report
from auditor.model import StageStatus
from auditor.pipeline import audit, closure, run_stage
from auditor.report.interface import Formatter
from auditor.spec import load_spec
from auditor.stage import Context, Options, Stage


def test_audit_directory_is_complete_or_absent(tmp_path: Path, monkeypatch) -> None:
    case = simple_case(tmp_path)
    spec = load_spec(write_spec(tmp_path / "audit.toml", case["spec"]))
    out = tmp_path / "audit-out"
    result = audit(spec, Options(), out)
    data = json.loads((out / "audit.json").read_text())
    assert data["verdict"] == result.verdict.value
    assert (out / "report.md").is_file()
    before = sorted(p.name for p in out.iterdir())

    class Broken(Formatter):
        filename = "broken.txt"

        def document(self, audit):  # noqa: ANN001
            raise RuntimeError("disk on fire")

    monkeypatch.setattr(report, "formatters", lambda: [Broken()])
    with pytest.raises(RuntimeError):
        audit(spec, Options(), out)
    # the earlier directory is untouched and no temporary folder is left behind
    assert sorted(p.name for p in out.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".audit-out")] == []


def test_a_crashing_stage_is_incomplete_never_clean(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    spec = load_spec(write_spec(tmp_path / "audit.toml", case["spec"]))

    class Crashes(Stage):
        name = "scan"

        def run(self, ctx: Context):  # noqa: ANN201
            raise KeyError("boom")

    ctx = Context(spec=spec, options=Options(), workdir=tmp_path, out_dir=tmp_path)
    result = run_stage(Crashes(), ctx)
    assert result.status is StageStatus.INCOMPLETE
    assert "crashed" in result.not_checked[0]


def test_stage_closure_adds_what_a_stage_needs() -> None:
    assert closure(["scan"])[0] == "verify"
    assert closure(["unit"]) == ["unit"]


def test_help_lists_the_contract_commands() -> None:
    res = subprocess.run([sys.executable, "-m", "auditor", "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    for command in ("demo", "audit", "verify", "scan", "deps", "build", "sbom", "unit", "gate"):
        assert command in res.stdout


def test_secrets_are_redacted_before_any_output(tmp_path: Path) -> None:
    from auditor.model import Action, Category, Finding, Severity, StageResult

    case = simple_case(tmp_path)
    spec = load_spec(write_spec(tmp_path / "audit.toml", case["spec"]))
    secret = "sk-live0123456789abcdefghij"

    class Leaky(Stage):
        name = "scan"

        def run(self, ctx: Context) -> StageResult:
            f = Finding(rule="secret-access.python.literal", category=Category.SECRET_ACCESS,
                        severity=Severity.HIGH, action=Action.BLOCK, path="a.py", line=1,
                        commit=None, message=f"literal key {secret}", scanner="semgrep",
                        fingerprint="f", snippet=f'API_KEY = "{secret}"')
            return StageResult("scan", StageStatus.OK, findings=(f,))

    ctx = Context(spec=spec, options=Options(), workdir=tmp_path, out_dir=tmp_path)
    result = run_stage(Leaky(), ctx)
    text = json.dumps(result.to_json())
    assert secret not in text and "[REDACTED]" in text
