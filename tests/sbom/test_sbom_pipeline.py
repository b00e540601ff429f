"""End to end through the real pipeline: verify, a real nvcc build, then the SBOM and provenance.

Uses the build tests' tiny CUDA engine (tests/rebuild/buildcase.py); skips when nvcc is missing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import jsonschema
import pytest
from cyclonedx.output import OutputFormat
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation import make_schemabased_validator
from support import write_spec

from auditor.model import StageStatus
from auditor.pipeline import run_pipeline
from auditor.sbom.intoto import STATEMENT_SCHEMA
from auditor.spec import load_spec
from auditor.stage import Options


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed on this machine")
    build_tests = str(Path(__file__).parents[1] / "rebuild")
    if build_tests not in sys.path:
        sys.path.append(build_tests)
    from buildcase import build_upstream, make_series, recipe_text
    root = tmp_path_factory.mktemp("sbom-e2e")
    up = build_upstream(root / "up")
    kern = (up.repo.path / "csrc/kern.cu").read_text()
    branch = make_series(up, "sbom", [
        {"tinyeng/server.py": "def serve(host='127.0.0.1', port=8000):\n    return host, port\n"},
        {"csrc/kern.cu": kern + "// tuned for sm86\n"},
    ])
    commits = up.repo.git("rev-list", "--reverse", f"v1.0.0..{branch}").split()
    from support import export_tree

    bundle = export_tree(up.repo, branch, root / "bundle")
    (root / "recipe.toml").write_text(recipe_text(up))
    spec = load_spec(write_spec(root / "audit.toml", {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": str(up.repo.path), "ref": "v1.0.0"},
        "patches": {"ref": branch, "commits": commits},
        "bundle": {"path": str(bundle)},
        "build": {"recipe": "recipe.toml", "repro": False},
    }))
    out = []
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SOURCE_DATE_EPOCH", raising=False)
        for i in (1, 2):
            (root / f"out{i}").mkdir()
            (root / f"work{i}").mkdir()
            _, ctx = run_pipeline(spec, Options(reproducible=True, jobs=2), ["sbom"],
                                  root / f"out{i}", root / f"work{i}")
            out.append(ctx)
    return {"ctxs": out, "commits": commits}


def test_pipeline_writes_a_valid_sbom_and_statement(runs):
    ctx = runs["ctxs"][0]
    build, sbom = ctx.results["build"], ctx.results["sbom"]
    assert build.status is StageStatus.OK, (build.not_checked, build.reasons)
    assert sbom.status is StageStatus.OK, (sbom.not_checked, sbom.reasons)
    text = (ctx.out_dir / "sbom.cdx.json").read_text()
    error = make_schemabased_validator(OutputFormat.JSON, SchemaVersion.V1_6).validate_str(text)
    assert error is None, str(error)[:2000]
    doc = json.loads(text)
    assert [c["uid"] for c in doc["metadata"]["component"]["pedigree"]["commits"]] \
        == runs["commits"]
    comp = doc["metadata"]["component"]
    assert comp["purl"].startswith("pkg:pypi/tinyeng@1.0.0%2Baudited.")
    built = [c for c in doc["components"]
             if {"name": "auditor:module:action", "value": "built"} in c["properties"]]
    assert [c["name"] for c in built] == ["tinyeng/_kern.so"]
    statement = json.loads((ctx.out_dir / "provenance.intoto.json").read_text())
    jsonschema.Draft202012Validator(STATEMENT_SCHEMA).validate(statement)
    wheel = ctx.out_dir / build.to_json()["wheel"]["file"]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert statement["subject"] == [{"name": wheel.name, "digest": {"sha256": digest}}]
    assert comp["hashes"] == [{"alg": "SHA-256", "content": digest}]


def test_the_same_audit_gives_the_same_bytes(runs):
    a, b = runs["ctxs"]
    for name in ("sbom.cdx.json", "provenance.intoto.json"):
        assert (a.out_dir / name).read_bytes() == (b.out_dir / name).read_bytes(), name


def test_every_stage_result_round_trips_and_fits_the_schema(runs):
    """verify, deps (not requested), build and sbom of a real pipeline run: each typed result
    writes JSON that reads back to an equal result, and the audit as a whole fits its schema."""
    from jsonschema import Draft202012Validator

    from auditor.model import AuditResult, StageResult, compute_verdict
    from auditor.results.audit_file import audit_schema, schema_problem

    ctx = runs["ctxs"][0]
    for name, result in ctx.results.items():
        again = StageResult.from_json(name, json.loads(json.dumps(result.to_json())))
        assert again == result, name
    verdict, reasons = compute_verdict(ctx.results.values())
    data = json.loads(json.dumps(AuditResult(verdict, reasons, ctx.results).to_json()))
    assert schema_problem(data) is None
    assert Draft202012Validator(audit_schema()).is_valid(data)  # jsonschema agrees
