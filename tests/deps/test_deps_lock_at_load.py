"""``[deps] lock`` is untrusted and read before any work: a malformed lock stops the command at
once (exit 2, naming the file and the line). The spec layer only resolves the path (it imports no
stage, issue 32); the command line reads the lock when it loads the spec."""

from __future__ import annotations

from pathlib import Path

from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.spec import load_spec


def _spec(tmp_path: Path) -> Path:
    case = simple_case(tmp_path)
    lock = tmp_path / "bad.lock"
    lock.write_text("numpy==1.26.4\nrequests>=2.31\n", encoding="utf-8")
    return write_spec(tmp_path / "audit.toml",
                      {**case["spec"], "deps": {"vulns": "none", "lock": str(lock)}})


def test_a_malformed_lock_stops_the_command_before_any_work(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    res = CliRunner().invoke(app, ["deps", str(spec), "--json"])
    assert res.exit_code == 2, res.output
    assert "bad.lock" in res.stderr and "line 2" in res.stderr
    assert "not pinned to one version" in res.stderr
    assert "Traceback" not in res.output + res.stderr


def test_the_spec_resolves_the_lock_path_without_reading_it(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    assert spec.deps is not None and spec.deps.lock == tmp_path / "bad.lock"
