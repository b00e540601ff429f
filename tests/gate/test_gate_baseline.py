"""A baseline that does not fit is a clear one-line error (exit 2) before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gatecases import audit
from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import BaselineError
from auditor.gate.baseline import check_fits, load_baseline
from auditor.gate.run import run_gate
from auditor.results.verify import VerifyData
from auditor.spec import load_spec
from auditor.stage import Options


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("gate-baseline")
    case = simple_case(tmp)
    return write_spec(tmp / "audit.toml", case["spec"])


def good_baseline(profile: str = "engine") -> dict:  # type: ignore[type-arg]
    return audit("v1.0.0", [("1" * 40, "x", "p")], [], profile=profile).to_json()


BAD = {
    "missing": (None, "file not found"),
    "not-json": ("{nope", "not JSON"),
    "not-object": ("[1, 2]", "a JSON object is expected"),
    "schema": (json.dumps({"schema": "auditor/audit/v0"}), "schema is 'auditor/audit/v0'"),
    "malformed": (json.dumps({"schema": "auditor/audit/v1", "verdict": "MAYBE", "stages": {}}),
                  "malformed audit.json"),
    "profile": (json.dumps(good_baseline("vllm")), "made for engine profile 'vllm'"),
    "package": (json.dumps({**good_baseline(), "inputs": {"engine": {
        "profile": "engine", "package": "vllm"}}}), "made for package 'vllm'"),
    "no-inputs": (json.dumps({**good_baseline(), "inputs": {}}), "has no inputs.engine"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_gate_baseline_errors(case: str, tmp_path: Path, spec_path: Path) -> None:
    content, message = BAD[case]
    path = tmp_path / "old" / "audit.json"
    if content is not None:
        path.parent.mkdir()
        path.write_text(content)
    out = tmp_path / "gate-out"
    with pytest.raises(BaselineError) as info:
        run_gate(load_spec(spec_path), path, out, Options(), False)
    assert message in info.value.message
    assert str(path) in info.value.message
    assert info.value.exit_code == 2
    assert "\n" not in info.value.message
    assert not out.exists()  # nothing ran


def test_gate_baseline_good_one_loads_and_fits(tmp_path: Path, spec_path: Path) -> None:
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(good_baseline()))
    baseline = load_baseline(path)
    check_fits(baseline, load_spec(spec_path), path)
    verify = baseline.stages["verify"].data_as(VerifyData)
    assert verify is not None and verify.listed == ("1" * 40,)


def test_gate_baseline_cli_exit_2_one_line(tmp_path: Path, spec_path: Path) -> None:
    res = CliRunner().invoke(app, ["gate", str(spec_path), "--baseline",
                                   str(tmp_path / "nope" / "audit.json"), "--out",
                                   str(tmp_path / "g")])
    assert res.exit_code == 2
    text = res.stderr if hasattr(res, "stderr") else res.output
    assert "error:" in text and "file not found" in text
    assert "Traceback" not in text
