"""audit.json against its schema: the one loader (report and gate), and the check before writing.

A file that fails docs/audit.schema.json is bad input: exit 2 with the file and the first failing
path named. A result auditor itself made that fails it is a bug: exit 3, and nothing is written.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from reportcases import rich_audit
from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import BaselineError, InputError, InternalError
from auditor.model import AuditResult, StageResult, StageStatus
from auditor.results.audit_file import (
    SCHEMA_FILE,
    audit_schema,
    check_before_writing,
    load_audit,
    schema_problem,
)
from auditor.results.jsoncheck import Checker, UnsupportedKeyword
from auditor.spec import load_spec
from auditor.stage import Context, Options, Stage


def good() -> dict:  # type: ignore[type-arg]
    return json.loads(json.dumps(rich_audit().to_json()))


def test_the_schema_is_a_valid_draft_2020_12_schema_versioned_by_the_schema_field() -> None:
    from jsonschema import Draft202012Validator

    schema = audit_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["schema"] == {"const": "auditor/audit/v1"}
    assert SCHEMA_FILE.resolve() == (Path(__file__).parents[2] / "docs" /
                                     "audit.schema.json").resolve()


def jsonschema_accepts(data: object) -> bool:
    from jsonschema import Draft202012Validator

    return bool(Draft202012Validator(audit_schema()).is_valid(data))


def test_the_checker_refuses_a_schema_keyword_it_does_not_check() -> None:
    with pytest.raises(UnsupportedKeyword):
        Checker({"type": "object", "patternProperties": {"^x": {"type": "string"}}})
    assert Checker(audit_schema()).first_problem(good()) is None


def test_a_good_audit_fits_and_loads(tmp_path: Path) -> None:
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(good()))
    assert schema_problem(good()) is None and jsonschema_accepts(good())
    assert load_audit(path) == AuditResult.from_json(good())


BROKEN = {
    "wrong-type-deep": (lambda d: d["stages"]["deps"]["vulnerabilities"][0].update(fixed="3.1"),
                        "stages/deps/vulnerabilities/0/fixed"),
    "missing-key": (lambda d: d["stages"]["scan"].pop("checked_files"), "stages/scan"),
    "unknown-key": (lambda d: d["stages"]["unit"].update(surprise=1), "stages/unit"),
    "bad-verdict": (lambda d: d.update(verdict="MAYBE"), "verdict"),
    "finding": (lambda d: d["findings"][0].update(line="4"), "findings/0/line"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_report_on_a_file_that_fails_the_schema_is_exit_2_naming_file_and_path(
        case: str, tmp_path: Path) -> None:
    data = good()
    change, where = BROKEN[case]
    change(data)
    assert not jsonschema_accepts(data)  # jsonschema itself agrees the file is bad
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_audit(path)
    assert str(path) in info.value.message and f" at {where}" in info.value.message
    assert "docs/audit.schema.json" in info.value.message
    res = CliRunner().invoke(app, ["report", str(path), "--format", "md"])
    assert res.exit_code == 2, res.output
    assert str(path) in " ".join(res.stderr.split()) and "Traceback" not in res.output


def test_report_on_truncated_or_foreign_json_is_exit_2(tmp_path: Path) -> None:
    text = json.dumps(good())
    for name, content, words in (("truncated", text[: len(text) // 2], "not JSON"),
                                 ("list", "[1, 2]", "a JSON object is expected"),
                                 ("other-schema", json.dumps({**good(), "schema": "x/v9"}),
                                  "schema is 'x/v9'")):
        path = tmp_path / f"{name}.json"
        path.write_text(content)
        res = CliRunner().invoke(app, ["report", str(path), "--format", "json"])
        assert res.exit_code == 2, (name, res.output)
        err = " ".join(res.stderr.split())
        assert str(path) in err and words in err, (name, err)
        assert res.stdout == ""


def test_gate_baseline_that_fails_the_schema_is_exit_2_before_anything_runs(tmp_path: Path
                                                                            ) -> None:
    case = simple_case(tmp_path)
    spec_path = write_spec(tmp_path / "audit.toml", case["spec"])
    data = good()
    data["stages"]["verify"]["upstream"]["ref"] = 7
    baseline = tmp_path / "old" / "audit.json"
    baseline.parent.mkdir()
    baseline.write_text(json.dumps(data))
    with pytest.raises(BaselineError) as info:
        load_audit(baseline, label="baseline", error=BaselineError)
    assert f"baseline {baseline}" in info.value.message
    assert "stages/verify/upstream/ref" in info.value.message
    out = tmp_path / "gate-out"
    res = CliRunner().invoke(app, ["gate", str(spec_path), "--baseline", str(baseline),
                                   "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "stages/verify/upstream/ref" in " ".join(res.stderr.split())
    assert not out.exists()


def test_a_result_that_breaks_the_schema_is_an_internal_error_exit_3() -> None:
    data = copy.deepcopy(good())
    data["stages"]["scan"]["scope"] = "everything"
    with pytest.raises(InternalError) as info:
        check_before_writing(data)
    assert info.value.exit_code == 3
    assert "stages/scan/scope" in info.value.message


def test_audit_with_a_stage_whose_result_breaks_the_contract_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage returning data the schema refuses (here a ruleset that is not a string) stops the
    audit with exit 3 before audit.json exists: a bug is never reported as a verdict."""
    from typed_results import scan_data

    import auditor.pipeline as pipeline

    class Odd(Stage):
        name = "scan"
        needs = ("verify",)

        def requested(self, spec):  # noqa: ANN001, ANN201
            return True

        def run(self, ctx: Context) -> StageResult:
            return StageResult("scan", StageStatus.OK, scan_data(ruleset=5))

    real = pipeline.load_stage
    monkeypatch.setattr(pipeline, "load_stage",
                        lambda name: Odd() if name == "scan" else real(name))
    case = simple_case(tmp_path)
    spec = load_spec(write_spec(tmp_path / "audit.toml", case["spec"]))
    out = tmp_path / "audit-out"
    with pytest.raises(InternalError):
        pipeline.audit(spec, Options(), out)
    assert not out.exists()
