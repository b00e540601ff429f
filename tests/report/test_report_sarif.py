"""findings.sarif validates against the SARIF 2.1.0 schema (offline) and carries what scanners read."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from reportcases import check_golden, hostile_audit, rich_audit

from auditor.model import StageResult, StageStatus
from auditor.report.sarif import FINGERPRINT_KEY, SarifFormatter, write_stage_sarif

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4

    def no_network(uri: str) -> Resource:
        raise AssertionError(f"schema validation tried to fetch {uri}")

    registry = Registry(retrieve=no_network).with_resource(  # type: ignore[call-arg]
        schema["id"], Resource.from_contents(schema, default_specification=DRAFT4))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, registry=registry)


def sarif(audit) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(SarifFormatter().render(audit))


def test_report_sarif_validates(validator: jsonschema.Draft4Validator) -> None:
    for audit in (rich_audit(), hostile_audit()):
        errors = sorted(validator.iter_errors(sarif(audit)), key=str)
        assert not errors, errors[0]


def test_report_sarif_golden() -> None:
    check_golden("rich.findings.sarif.json", SarifFormatter().render(rich_audit()))


def test_report_sarif_content() -> None:
    doc = sarif(rich_audit())
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["network.python.requests"]["properties"]["category"] == "network"
    assert rules["network.python.requests"]["properties"]["security-severity"] == "8.0"
    assert rules["process-exec.subprocess"]["help"]["text"]
    results = run["results"]
    assert len(results) == len(rich_audit().findings)
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["network.python.requests"] == "error"
    assert levels["process-exec.subprocess"] == "warning"
    for r in results:
        assert r["partialFingerprints"][FINGERPRINT_KEY]
        loc = r["locations"][0]["physicalLocation"]
        assert not loc["artifactLocation"]["uri"].startswith("/")
        assert loc["region"]["startLine"] >= 1
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
    waived = [r for r in results if r.get("suppressions")]
    assert len(waived) == 1
    assert waived[0]["suppressions"][0]["kind"] == "external"
    assert "upstream behaviour" in waived[0]["suppressions"][0]["justification"]
    assert "whole file" in waived[0]["message"]["text"]  # the line-0 finding
    assert run["invocations"][0]["executionSuccessful"] is True


def test_report_sarif_incomplete_is_not_successful() -> None:
    run = sarif(hostile_audit())["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert "osv snapshot missing" in run["invocations"][0]["toolExecutionNotifications"][0][
        "message"]["text"]


def test_report_sarif_stage_file_and_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            validator: jsonschema.Draft4Validator) -> None:
    stage = rich_audit().stages["scan"]
    write_stage_sarif(stage, tmp_path / "scan.sarif")
    doc = json.loads((tmp_path / "scan.sarif").read_text())
    validator.validate(doc)
    assert len(doc["runs"][0]["results"]) == len(stage.findings)
    write_stage_sarif(StageResult("scan", StageStatus.INCOMPLETE, not_checked=("x.py",)),
                      Path("-"))
    out = json.loads(capsys.readouterr().out)
    validator.validate(out)
    assert out["runs"][0]["results"] == []
    assert out["runs"][0]["invocations"][0]["executionSuccessful"] is False
