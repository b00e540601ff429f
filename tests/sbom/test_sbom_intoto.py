"""The in-toto Statement v1 / SLSA Provenance v1 document for the built wheel."""

from __future__ import annotations

import hashlib
import json
import os

import jsonschema
import pytest
from sbom_case import context, new_case

from auditor.errors import InputError, ToolError
from auditor.provenance.treehash import manifest_digest
from auditor.sbom.intoto import (
    BUILD_TYPE,
    BUILDER_ID,
    BUILDER_ID_ENV,
    PREDICATE_TYPE,
    STATEMENT_SCHEMA,
    STATEMENT_TYPE,
    configured_builder_id,
    validate_statement,
)
from auditor.sbom.stage import SbomStage


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("intoto")
    case = new_case(tmp)
    ctx = context(tmp, case, reproducible=False)
    result = SbomStage().run(ctx)
    doc = json.loads((ctx.out_dir / "provenance.intoto.json").read_text())
    return {"case": case, "ctx": ctx, "result": result, "doc": doc}


def test_statement_matches_the_schema(run):
    jsonschema.Draft202012Validator(
        STATEMENT_SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(run["doc"])
    assert run["doc"]["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert run["doc"]["predicateType"] == PREDICATE_TYPE == "https://slsa.dev/provenance/v1"


def test_subject_digest_is_the_wheel_sha256(run):
    wheel = run["ctx"].out_dir / "engine-1.0.0+audited.sm86-py3-none-any.whl"
    (subject,) = run["doc"]["subject"]
    assert subject == {"name": wheel.name,
                       "digest": {"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}}
    assert run["result"].to_json()["provenance"] == {
        "file": "provenance.intoto.json", "subject": wheel.name,
        "digest": subject["digest"]["sha256"]}


def test_build_definition(run):
    ctx, case = run["ctx"], run["case"]
    bd = run["doc"]["predicate"]["buildDefinition"]
    assert bd["buildType"] == BUILD_TYPE
    ext = bd["externalParameters"]
    assert ext["spec"] == {"path": "audit.toml", "digest": {
        "sha256": hashlib.sha256(ctx.spec.path.read_bytes()).hexdigest()}}
    assert ext["recipe"]["path"] == "recipe.toml"
    deps = bd["resolvedDependencies"]
    assert deps[0]["name"] == "upstream"
    assert deps[0]["digest"] == {"gitCommit": ctx.workspace.upstream_commit}
    series = [d for d in deps if d["name"].startswith("series:")]
    assert [d["digest"]["gitCommit"] for d in series] == case["commits"]
    assert [d["annotations"]["position"] for d in series] == [1, 2]
    official = [d for d in deps if d.get("uri") == "pkg:pypi/engine@1.0.0"]
    assert official and official[0]["digest"] == {"sha256": "cd" * 32}
    bundle = next(d for d in deps if d["name"] == "bundle")
    assert bundle["digest"]["sha256"] == manifest_digest(ctx.workspace.manifest)
    tools = {d["name"]: d for d in deps if d["name"].startswith("toolchain:")}
    assert tools["toolchain:nvcc"]["annotations"] == {"version": "13.0.48"}


def test_run_details(run):
    rd = run["doc"]["predicate"]["runDetails"]
    assert rd["builder"]["id"].startswith("https://")
    meta = rd["metadata"]
    assert meta["invocationId"].startswith("urn:uuid:")
    assert (meta["startedOn"], meta["finishedOn"]) == ("2026-11-29T10:00:00Z",
                                                       "2026-11-29T10:02:30Z")
    assert [b["name"] for b in rd["byproducts"]] == ["engine/_C.so"]  # built, not official


def test_malformed_statements_are_refused(run):
    bad = json.loads(json.dumps(run["doc"]))
    bad["subject"][0]["digest"]["sha256"] = "not-hex"
    with pytest.raises(ToolError, match="subject/0/digest"):
        validate_statement(bad)
    bad = json.loads(json.dumps(run["doc"]))
    del bad["predicate"]["buildDefinition"]["buildType"]
    with pytest.raises(ToolError, match="buildType"):
        validate_statement(bad)
    bad = json.loads(json.dumps(run["doc"]))
    bad["predicate"]["buildDefinition"]["resolvedDependencies"].append({"name": "nothing"})
    with pytest.raises(ToolError):
        validate_statement(bad)


# ---------------------------------------------------------------- who built it


def test_default_builder_and_build_type_claim_no_domain(run):
    """Under .invalid (RFC 6761): a name nobody can register, so the default claims no one's."""
    if BUILDER_ID_ENV in os.environ:
        pytest.skip(f"${BUILDER_ID_ENV} is set in this environment")
    assert run["doc"]["predicate"]["runDetails"]["builder"]["id"] == BUILDER_ID
    for uri in (BUILDER_ID, BUILD_TYPE):
        assert uri.startswith("https://auditor.invalid/"), uri


def test_builder_id_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(BUILDER_ID_ENV, "https://ci.example.org/builders/gpu-runner/v1")
    case = new_case(tmp_path)
    ctx = context(tmp_path, case, reproducible=True)
    SbomStage().check_inputs(ctx.spec)
    SbomStage().run(ctx)
    doc = json.loads((ctx.out_dir / "provenance.intoto.json").read_text())
    assert doc["predicate"]["runDetails"]["builder"]["id"] == \
        "https://ci.example.org/builders/gpu-runner/v1"
    assert doc["predicate"]["buildDefinition"]["buildType"] == BUILD_TYPE


@pytest.mark.parametrize("value", ["not a uri", "relative/path", "https://x/\x1b[31mred",
                                   "://nothing"])
def test_a_bad_builder_id_is_an_input_error(value):
    with pytest.raises(InputError, match=BUILDER_ID_ENV) as info:
        configured_builder_id({BUILDER_ID_ENV: value})
    assert info.value.exit_code == 2


def test_an_unset_builder_id_is_the_default():
    assert configured_builder_id({}) == BUILDER_ID
