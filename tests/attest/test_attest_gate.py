"""``auditor gate --key``: the gate signs its own verification summary, and a signed baseline must
still be what was signed."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.attest.keys import generate
from auditor.cli import app


def _run(*args: object) -> Any:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_gate_writes_a_signed_vsa_and_checks_the_baseline(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    keys = generate(tmp_path / "keys")
    base = tmp_path / "approved"
    assert _run("audit", spec, "--out", base, "--key", keys.private).exit_code in (0, 1)
    res = _run("gate", spec, "--baseline", base / "audit.json", "--out", tmp_path / "gate",
               "--key", keys.private)
    assert res.exit_code in (0, 1), res.output
    assert "verified with key" in res.output  # the baseline's companion, with the team's key
    vsa = tmp_path / "gate" / "gate.vsa.intoto.jsonl"
    res = _run("attest", "verify", vsa, "--key", keys.public, "--spec", spec)
    assert res.exit_code == 0, res.output
    doc = json.loads(base64.b64decode(json.loads(vsa.read_text())["payload"]))
    gate = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert f"AUDITOR_VERDICT_{gate['verdict']}" in doc["predicate"]["verifiedLevels"]
    inputs = {a["uri"]: a["digest"]["sha256"] for a in doc["predicate"]["inputAttestations"]}
    assert inputs["approved/audit.json"] == hashlib.sha256(
        (base / "audit.json").read_bytes()).hexdigest()
    assert inputs["gate.json"] == hashlib.sha256(
        (tmp_path / "gate" / "gate.json").read_bytes()).hexdigest()
    assert (tmp_path / "gate" / "vsa.intoto.jsonl").is_file()  # the new audit's own summary

    # a signed baseline edited after signing is refused before anything runs
    data = json.loads((base / "audit.json").read_text())
    data["reasons"].append("approved by hand")
    (base / "audit.json").write_text(json.dumps(data, indent=2))
    res = _run("gate", spec, "--baseline", base / "audit.json", "--out", tmp_path / "gate2")
    assert res.exit_code == 2 and "changed after signing" in res.output
    assert not (tmp_path / "gate2").exists()
