"""The CycloneDX SBOM: schema-valid, pedigree = the series in order, reproducible bytes, golden."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from cyclonedx.output import OutputFormat
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation import make_schemabased_validator
from sbom_case import context, git, new_case
from support import GitRepo, export_tree
from typed_results import decl

from auditor import __version__
from auditor.errors import InputError, ToolError
from auditor.gitio import Git
from auditor.model import StageResult, StageStatus
from auditor.provenance.treehash import manifest_digest
from auditor.results import Crashed
from auditor.results.deps import DepsData, FetchRecord, Kind
from auditor.results.sbom import SbomData
from auditor.sbom import cyclonedx_doc
from auditor.sbom.cyclonedx_doc import validate_cyclonedx
from auditor.sbom.diffs import commit_diff
from auditor.sbom.stage import SbomStage, export_sbom

GOLDEN = Path(__file__).parent / "golden"
VALIDATOR = make_schemabased_validator(OutputFormat.JSON, SchemaVersion.V1_6)


def assert_valid(text: str) -> dict:
    """Every SBOM a test sees is checked against the 1.6 schema by the library's own validator."""
    error = VALIDATOR.validate_str(text)
    assert error is None, str(error)[:2000]
    return json.loads(text)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sbomcase")
    c = new_case(tmp)
    c["tmp"] = tmp
    return c


@pytest.fixture(scope="module")
def full(case):
    """One full run (verify + deps + build), reproducible: shared by the read-only tests."""
    ctx = context(case["tmp"], case, name="full")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SOURCE_DATE_EPOCH", raising=False)
        result = SbomStage().run(ctx)
    text = (ctx.out_dir / "sbom.cdx.json").read_text()
    return {"ctx": ctx, "result": result, "text": text, "doc": assert_valid(text)}


def test_stage_result_and_files(full):
    r = full["result"]
    assert r.status is StageStatus.OK, r.not_checked
    data = r.data_as(SbomData)
    assert data is not None and data.built is True and data.sbom is not None
    assert data.sbom.valid is True
    assert data.sbom.file == "sbom.cdx.json"
    assert data.sbom.serial == full["doc"]["serialNumber"]
    assert data.sbom.commits == 2
    assert data.sbom.components == len(full["doc"]["components"])
    assert (full["ctx"].out_dir / "provenance.intoto.json").is_file()
    json.dumps(r.to_json())  # the --json object serialises


def test_pedigree_lists_exactly_the_series_commits_in_order(full, case):
    pedigree = full["doc"]["metadata"]["component"]["pedigree"]
    assert [c["uid"] for c in pedigree["commits"]] == case["commits"]
    # the library sorts commits by sha; this series is not in sha order, so order was restored
    assert case["commits"] != sorted(case["commits"])
    first = pedigree["commits"][0]
    assert first["author"]["name"] == "Fork Author"
    assert first["author"]["email"] == "fork@community.example"
    assert first["committer"]["timestamp"].startswith("2023-11-14T22:15:20")
    assert first["message"].startswith("refactor server")
    patches = pedigree["patches"]
    assert len(patches) == 2 and all(p["type"] == "unofficial" for p in patches)
    for sha, p in zip(case["commits"], patches, strict=True):
        text = p["diff"]["text"]["content"]
        assert text.startswith(f"From {sha} ")
        full_diff = git(case["repo"].path, "show", "--format=", "--patch", sha)
        assert full_diff.decode() in text
        digest = hashlib.sha256(full_diff).hexdigest()
        assert f"\nX-Diff-SHA256: {digest}\nX-Diff-Size: {len(full_diff)}\n\ndiff --git" in text
    props = {(p["name"], p["value"]) for p in full["doc"]["metadata"]["component"]["properties"]}
    for sha in case["commits"]:
        full_diff = git(case["repo"].path, "show", "--format=", "--patch", sha)
        digest = hashlib.sha256(full_diff).hexdigest()
        assert ("auditor:patch:diff-sha256", f"{sha} {digest} {len(full_diff)}") in props


def test_metadata_component_is_the_built_wheel(full):
    comp = full["doc"]["metadata"]["component"]
    wheel = full["ctx"].out_dir / "engine-1.0.0+audited.sm86-py3-none-any.whl"
    assert comp["purl"] == "pkg:pypi/engine@1.0.0%2Baudited.sm86"
    assert comp["version"] == "1.0.0+audited.sm86"
    assert comp["hashes"] == [{"alg": "SHA-256",
                               "content": hashlib.sha256(wheel.read_bytes()).hexdigest()}]
    tools = full["doc"]["metadata"]["tools"]["components"]
    assert [(t["name"], t["version"]) for t in tools] == [("auditor", __version__)]
    ancestors = {a["bom-ref"]: a for a in comp["pedigree"]["ancestors"]}
    assert ancestors["auditor:official-wheel"]["purl"] == "pkg:pypi/engine@1.0.0"
    assert ancestors["auditor:official-wheel"]["hashes"][0]["content"] == "cd" * 32
    upstream = ancestors["auditor:upstream"]
    upstream_sha = full["ctx"].workspace.upstream_commit
    assert {"name": "auditor:git:commit", "value": upstream_sha} in upstream["properties"]
    assert upstream["externalReferences"][0]["type"] == "vcs"
    notes = comp["pedigree"]["notes"]
    assert "not the final" in notes and "provisional verdict PASS" in notes
    assert "build ok" in notes and "deps ok" in notes


def test_components_modules_dependencies_cmake_and_vulnerabilities(full):
    comps = {c["bom-ref"]: c for c in full["doc"]["components"]}
    built = comps["auditor:module:engine/_C.so"]
    assert built["type"] == "file" and built["hashes"][0]["alg"] == "SHA-256"
    props = {(p["name"], p["value"]) for p in built["properties"]}
    assert ("auditor:module:action", "built") in props
    assert ("auditor:module:command", "nvcc -O3 -shared -o _C.so csrc/kernel.cu") in props
    by_name = {c["name"]: c for c in comps.values()}
    # FastAPI declared twice (two spellings, two files) is one component with both places
    fastapi = by_name["fastapi"]
    assert fastapi["purl"] == "pkg:pypi/fastapi@0.110.0" and "FastAPI" not in by_name
    declared = [p["value"] for p in fastapi["properties"]
                if p["name"] == "auditor:dependency:declared-in"]
    assert sorted(declared) == ["requirements-cuda.txt:3", "requirements.txt:1"]
    assert by_name["uvicorn"]["purl"] == "pkg:pypi/uvicorn" and "version" not in by_name["uvicorn"]
    assert {"name": "auditor:dependency:pinned", "value": "false"} in by_name["uvicorn"]["properties"]
    assert by_name["helper"]["externalReferences"][0]["type"] == "vcs"
    cutlass = by_name["cutlass"]
    assert cutlass["externalReferences"][0]["url"] == "https://github.com/NVIDIA/cutlass.git"
    assert {"name": "auditor:cmake:commit",
            "value": "f9ece1b42c32ef5ffd1b7f39b62a2a4b3c8d1e2f"} in cutlass["properties"]
    assert by_name["vllm-flash-attn"]["hashes"] == [{"alg": "SHA-256", "content": "ab" * 32}]
    vulns = {v["id"]: v for v in full["doc"]["vulnerabilities"]}
    # VEX: a deployed, affected version; fixed versions known: update
    assert vulns["GHSA-aaaa-bbbb-cccc"]["analysis"] == {
        "state": "exploitable", "response": ["update"],
        "detail": "fastapi 0.110.0 is deployed and affected; upgrade fastapi to 0.115.0 or later"}
    assert vulns["GHSA-aaaa-bbbb-cccc"]["affects"][0]["ref"] == fastapi["bom-ref"]
    assert vulns["GHSA-aaaa-bbbb-cccc"]["references"][0]["id"] == "CVE-2024-0001"
    # a waiver that states no VEX state accepts the risk: still affected, the waiver carried
    waived = vulns["PYSEC-2024-7"]["analysis"]
    assert waived["state"] == "exploitable" and "reloader" in waived["detail"]
    assert "waived" in waived["detail"] and "justification" not in waived
    assert vulns["PYSEC-2024-7"]["description"] == "reloader path traversal"
    assert vulns["PYSEC-2024-7"]["source"] == {"name": "OSV (offline snapshot)"}
    assert vulns["OSV-2024-99"]["analysis"]["detail"].endswith("waived: not shipped")
    props = full["doc"]["metadata"]["component"]["properties"]
    index = sorted(p["value"] for p in props if p["name"] == "auditor:deps:package-index")
    assert index == ["extra-index-url https://mirror.example.invalid/simple",
                     "index-url https://pypi.example.invalid/simple"]
    assert {"name": "auditor:deps:vulnerability-source:digest", "value": "12" * 32} in props
    assert {"name": "auditor:cmake:declared-in", "value": "CMakeLists.txt:12"} \
        in cutlass["properties"]


def test_reproducible_gives_identical_bytes_twice(case, full, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    again = context(case["tmp"], case, name="full-again")
    SbomStage().run(again)
    assert (again.out_dir / "sbom.cdx.json").read_bytes() == full["text"].encode()
    assert ((again.out_dir / "provenance.intoto.json").read_bytes()
            == (full["ctx"].out_dir / "provenance.intoto.json").read_bytes())
    # the time comes from the build's SOURCE_DATE_EPOCH here (1700000180)
    assert full["doc"]["metadata"]["timestamp"].startswith("2023-11-14T22:16:20")


def test_series_diffs_read_while_the_scan_waits_give_the_same_sbom(case, full, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    # prepared once verify has run; read when the scan waits on semgrep
    early = context(case["tmp"], case, name="early")
    stage = SbomStage()
    stage.prepare(early)
    early.background.waiting()
    stage.run(early)
    assert stage._diffs is not None and len(stage._diffs) == len(early.workspace.commits)
    assert (early.out_dir / "sbom.cdx.json").read_bytes() == full["text"].encode()
    # prepared, but nothing waited: run reads them itself, and the work never starts after
    late = context(case["tmp"], case, name="late")
    stage = SbomStage()
    stage.prepare(late)
    stage.run(late)
    late.background.waiting()
    assert stage._diffs is None
    assert (late.out_dir / "sbom.cdx.json").read_bytes() == full["text"].encode()


def test_source_date_epoch_sets_the_time_and_changes_the_serial(case, full, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1234567890")
    ctx = context(case["tmp"], case, name="sde")
    SbomStage().run(ctx)
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    assert doc["metadata"]["timestamp"].startswith("2009-02-13T23:31:30")
    assert doc["serialNumber"] != full["doc"]["serialNumber"]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(InputError, match="SOURCE_DATE_EPOCH"):
        SbomStage().run(context(case["tmp"], case, name="sde-bad"))


def test_without_reproducible_serials_are_random(case):
    serials = set()
    for name in ("plain-1", "plain-2"):
        ctx = context(case["tmp"], case, reproducible=False, name=name)
        result = SbomStage().run(ctx)
        doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
        serials.add(doc["serialNumber"])
        assert result.to_json()["sbom"]["serial"] == doc["serialNumber"]
        prov = json.loads((ctx.out_dir / "provenance.intoto.json").read_text())
        assert prov["predicate"]["runDetails"]["metadata"]["startedOn"] == "2026-11-29T10:00:00Z"
    assert len(serials) == 2


def test_sbom_of_a_bundle_with_no_build(case, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    ctx = context(case["tmp"], case, build=False, name="nobuild")
    result = SbomStage().run(ctx)
    assert result.status is StageStatus.OK, result.not_checked
    assert result.to_json()["built"] is False and result.to_json()["provenance"] is None
    assert not (ctx.out_dir / "provenance.intoto.json").exists()
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    comp = doc["metadata"]["component"]
    assert (comp["name"], comp["version"]) == ("engine", "1.0.0") and "purl" not in comp
    assert comp["hashes"] == [{"alg": "SHA-256", "content": manifest_digest(ctx.workspace.manifest)}]
    props = {p["name"]: p["value"] for p in comp["properties"]}
    assert props["auditor:built"] == "false" and "no artifact was built" in props["auditor:note"]
    assert props["auditor:build:status"] == "not-requested"
    assert [c["uid"] for c in comp["pedigree"]["commits"]] == case["commits"]
    assert sorted(a["bom-ref"] for a in comp["pedigree"]["ancestors"]) == [
        "auditor:fork-source", "auditor:upstream"]
    assert "build not-requested" in comp["pedigree"]["notes"]
    # dependencies still described; the time is the last series commit's
    assert any(c["name"] == "fastapi" for c in doc["components"])
    assert doc["metadata"]["timestamp"].startswith("2023-11-14T22:16:20")


def test_incomplete_inputs_are_said_in_not_checked(case):
    ctx = context(case["tmp"], case, name="gaps")
    ctx.results["build"] = StageResult("build", StageStatus.INCOMPLETE,
                                       not_checked=("nvcc is not installed",))
    ctx.results["deps"] = StageResult("deps", StageStatus.INCOMPLETE, Crashed("OSError: x"),
                                      not_checked=("stage crashed: OSError: x",))
    result = SbomStage().run(ctx)
    assert result.status is StageStatus.INCOMPLETE
    text = " | ".join(result.not_checked)
    assert "build was incomplete and produced no wheel" in text
    assert "deps was incomplete" in text and "deps: the stage gave no result" in text
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    props = {p["name"]: p["value"] for p in doc["metadata"]["component"]["properties"]}
    assert props["auditor:built"] == "false" and props["auditor:build:status"] == "incomplete"
    assert props["auditor:deps:status"] == "incomplete"
    # a deps stage that gave no result judged nothing: no VEX document that reads as "none found"
    assert not (ctx.out_dir / "vex.openvex.json").exists()
    assert result.data_as(SbomData).vex is None


def test_a_wheel_that_is_not_what_the_build_reported_fails_and_writes_nothing(case):
    ctx = context(case["tmp"], case, name="tampered")
    (ctx.out_dir / "engine-1.0.0+audited.sm86-py3-none-any.whl").write_bytes(b"other bytes")
    result = SbomStage().run(ctx)
    assert result.status is StageStatus.FAILED
    assert "reported" in result.reasons[0]
    assert not (ctx.out_dir / "sbom.cdx.json").exists()
    assert not (ctx.out_dir / "provenance.intoto.json").exists()


def test_an_invalid_document_is_an_error_and_never_a_file(case, monkeypatch):
    original = cyclonedx_doc._in_series_order

    def corrupt(doc, own, arrived=()):  # a fault injected after the library, before validation
        doc = original(doc, own, arrived)
        doc["metadata"]["component"]["type"] = "not-a-component-type"
        return doc

    monkeypatch.setattr(cyclonedx_doc, "_in_series_order", corrupt)
    ctx = context(case["tmp"], case, name="invalid")
    with pytest.raises(ToolError, match="does not validate against the CycloneDX 1.6 schema"):
        SbomStage().run(ctx)
    assert not (ctx.out_dir / "sbom.cdx.json").exists()
    with pytest.raises(ToolError):
        validate_cyclonedx('{"bomFormat": "CycloneDX", "specVersion": "1.6", "version": "x"}')


def test_diffs_are_capped_hashed_and_redacted(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("base", files={"a.py": "x = 1\n"})
    big = "".join(f"line_{i} = {i}  # padding padding padding\n" for i in range(4000))
    c1 = repo.commit("big", files={"big.py": big})
    c2 = repo.commit("key", files={"cfg.py": 'api_key = "sk-abcdefghijklmnopqrstuvwx"\n'})
    git_ = Git(repo.path)
    d = commit_diff(git_, c1, cap=4096)
    raw = git(repo.path, "show", "--format=", "--patch", c1)
    assert len(raw) > 4096 and d.truncated and d.size == len(raw)
    assert d.sha256 == hashlib.sha256(raw).hexdigest()
    assert d.text.startswith(f"From {c1} ") and d.sha256 in d.text.splitlines()[-1]
    assert len(d.text.encode()) < 4096 + 400  # the cap, plus headers and the trailer
    k = commit_diff(git_, c2)
    assert k.redacted and "sk-abcdefghijklmnopqrstuvwx" not in k.text and "[REDACTED]" in k.text
    assert k.sha256 == hashlib.sha256(git(repo.path, "show", "--format=", "--patch", c2)).hexdigest()
    assert base


def test_diffs_are_cached_by_commit_and_git_settings(tmp_path):
    """A warm run shows no diff again; other git settings, another cap or a damaged entry miss."""
    from auditor.provenance.gitstate import git_settings
    from auditor.sbom.diffs import DiffCache

    repo = GitRepo(tmp_path / "r")
    repo.commit("base", files={"a.py": "x = 1\n"})
    c1 = repo.commit("key", files={"cfg.py": 'api_key = "sk-abcdefghijklmnopqrstuvwx"\n'})
    git_ = Git(repo.path)
    settings = git_settings(git_)
    cache = DiffCache(tmp_path / "cache", settings)
    first = cache.diff(git_, c1)
    assert first == commit_diff(git_, c1)
    entries = list((tmp_path / "cache" / "diffs").rglob("*.json"))
    assert len(entries) == 1 and "sk-abcdefghijklmnopqrstuvwx" not in entries[0].read_text()
    (tmp_path / "not-a-repo").mkdir()
    gone = Git(tmp_path / "not-a-repo")  # a hit asks git nothing (here git would fail)
    assert cache.diff(gone, c1) == first
    assert DiffCache(tmp_path / "cache", settings + "x").get(c1) is None
    assert DiffCache(tmp_path / "cache", settings, cap=100).get(c1) is None
    (repo.path / ".git" / "config").write_text(
        (repo.path / ".git" / "config").read_text() + "[diff]\n\tnoprefix = true\n")
    assert git_settings(git_) != settings  # the repository's configuration is in the key
    entries[0].write_text("{not json")
    assert cache.get(c1) is None and cache.diff(git_, c1).sha == c1


def test_odd_commit_metadata_still_gives_a_valid_sbom(tmp_path):
    """git accepts any author 'email'; the schema does not: the SBOM stays valid and keeps it."""
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"engine/__init__.py": "X = 1\n"})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("odd\x1b[31m author \u202e", files={"engine/a.py": "A = 1\n"},
                     author="Eve <not an email>")
    c2 = repo.commit("empty", author="Eve <eve@example.org>")
    case = {"repo": repo, "commits": [c1, c2], "bundle": export_tree(repo, "series",
                                                                      tmp_path / "bundle"),
            "spec": {"engine": {"profile": "generic", "version": "1.0.0"},
                     "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
                     "patches": {"ref": "series", "commits": [c1, c2]},
                     "bundle": {"path": str(tmp_path / "bundle")}}}
    ctx = context(tmp_path, case, build=False, deps=False)
    result = SbomStage().run(ctx)
    assert result.status is StageStatus.OK
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    commits = doc["metadata"]["component"]["pedigree"]["commits"]
    assert [c["uid"] for c in commits] == [c1, c2]
    assert commits[0]["author"]["name"] == "Eve <not an email>" and "email" not in commits[0]["author"]
    assert len(doc["metadata"]["component"]["pedigree"]["patches"]) == 2  # the empty one too
    assert "components" not in doc or doc["components"] == []


# ---------------------------------------------------------------- golden file


def masked(text: str, ctx) -> str:
    """Volatile fields out: temporary paths (and the spec's digest), the tool's version."""
    doc = json.loads(text)
    out = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    root = str(ctx.spec.root)
    out = out.replace(Path(root).resolve().as_uri(), "file://<TMP>").replace(root, "<TMP>")
    spec_digest = hashlib.sha256(ctx.spec.path.read_bytes()).hexdigest()  # holds the paths
    out = out.replace(spec_digest, "<SPEC-SHA256>")
    out = out.replace(f'"version": "{__version__}"', '"version": "<VERSION>"')
    out = out.replace(f'"auditor": "{__version__}"', '"auditor": "<VERSION>"')
    return out


@pytest.mark.parametrize("name", ["sbom.cdx.json", "provenance.intoto.json"])
def test_golden(full, name):
    ctx = full["ctx"]
    got = masked((ctx.out_dir / name).read_text(), ctx)
    # masked content still carries a serial/invocation derived from the unmasked content
    got = _mask_ids(got)
    golden = GOLDEN / f"full.{name}"
    if os.environ.get("AUDITOR_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got)
    assert golden.is_file(), "no golden file: run with AUDITOR_UPDATE_GOLDEN=1"
    assert got == golden.read_text(), f"{name} differs from {golden} (AUDITOR_UPDATE_GOLDEN=1)"


def _mask_ids(text: str) -> str:
    import re

    return re.sub(r'("(?:serialNumber|invocationId)": )"urn:uuid:[0-9a-f-]+"', r'\1"<UUID>"', text)


# ---------------------------------------------------------------- export (auditor sbom -o FILE)


def test_export_writes_the_default_path_a_given_file_and_stdout(full, tmp_path, monkeypatch,
                                                                capsys):
    ctx, result = full["ctx"], full["result"]
    monkeypatch.chdir(tmp_path)
    default = export_sbom(result, ctx, None)
    assert default == Path("sboms/engine-1.0.0+audited.sm86.cdx.json")
    assert (tmp_path / default).read_text() == full["text"]
    assert (tmp_path / "sboms/engine-1.0.0+audited.sm86.intoto.json").is_file()
    target = tmp_path / "out" / "x.cdx.json"
    assert export_sbom(result, ctx, target) == target
    assert_valid(target.read_text())
    # the OpenVEX document travels beside it, as the audit directory holds it
    assert (tmp_path / "out" / "x.openvex.json").read_text() == \
        (ctx.out_dir / "vex.openvex.json").read_text()
    into_dir = tmp_path / "dir"
    into_dir.mkdir()
    with pytest.raises(InputError, match="is a directory"):  # only regular files (issue 30, 14)
        export_sbom(result, ctx, into_dir)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    with pytest.raises(InputError, match="cannot write the SBOM"):
        export_sbom(result, ctx, blocked / "x.cdx.json")
    capsys.readouterr()
    export_sbom(result, ctx, Path("-"))
    assert capsys.readouterr().out == full["text"]
    # a stage that wrote nothing exports nothing
    empty = StageResult("sbom", StageStatus.INCOMPLETE, not_checked=("x",))
    assert export_sbom(empty, ctx, tmp_path / "none.json") is None
    assert not (tmp_path / "none.json").exists()


def test_cli_sbom_when_verify_exists(case, tmp_path):
    """End to end through the real pipeline."""
    from support import write_spec

    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    out = tmp_path / "s.cdx.json"
    exe = Path(os.environ.get("VIRTUAL_ENV", Path(__file__).parents[2] / ".venv")) / "bin/auditor"
    res = subprocess.run([str(exe), "sbom", str(spec), "-o", str(out), "--reproducible",
                          "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode in (0, 3), res.stderr
    stage = json.loads(res.stdout)
    assert stage["sbom"]["valid"] is True and stage["built"] is False
    if res.returncode == 3:  # only while a wanted stage (deps, build) is still a placeholder
        assert stage["not_checked"] and all(
            line.startswith(("build was", "deps was")) for line in stage["not_checked"])
    doc = assert_valid(out.read_text())
    assert [c["uid"] for c in doc["metadata"]["component"]["pedigree"]["commits"]] \
        == case["commits"]


def test_a_commit_listed_twice_is_refused_and_an_empty_series_is_fine(case):
    from dataclasses import replace

    ctx = context(case["tmp"], case, build=False, name="twice")
    ws = ctx.workspace
    ctx.workspace = replace(ws, commits=ws.commits + ws.commits[:1])
    with pytest.raises(ToolError, match="exactly once each, in order"):
        SbomStage().run(ctx)
    assert not (ctx.out_dir / "sbom.cdx.json").exists()
    ctx = context(case["tmp"], case, build=False, name="empty-series")
    ctx.workspace = replace(ws, commits=())
    assert SbomStage().run(ctx).status is StageStatus.OK
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    assert "commits" not in doc["metadata"]["component"]["pedigree"]


def test_odd_urls_from_the_bundle_cannot_make_the_sbom_invalid(case):
    ctx = context(case["tmp"], case, name="odd-urls")
    deps = ctx.results["deps"].data_as(DepsData)
    assert deps is not None
    ctx.results["deps"] = StageResult("deps", StageStatus.OK, replace(
        deps,
        bundle=(decl("scp-style", kind="vcs", file="r.txt", line=1,
                     url="git+ssh://git@github.com:org/repo.git@v1"),
                decl("ctrl", kind="url", file="r.txt", line=2,
                     url="https://x.example/\x1b[31m a b#c#d")),
        cmake_fetches=(FetchRecord(name="bad", kind=Kind.CMAKE_GIT, repository="http://[::1",
                                   tag="main", url=None, hash="not-a-hash", pinned=False,
                                   file="CMakeLists.txt", line=1),)))
    assert SbomStage().run(ctx).status is StageStatus.OK
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    comps = {c["name"]: c for c in doc["components"]}
    assert "externalReferences" not in comps["scp-style"]
    assert {"name": "auditor:dependency:url", "value": "git+ssh://git@github.com:org/repo.git@v1"} \
        in comps["scp-style"]["properties"]
    assert comps["ctrl"]["externalReferences"][0]["url"].startswith("https://x.example/%1B")
    assert "hashes" not in comps["bad"]
    assert {"name": "auditor:cmake:pinned", "value": "false"} in comps["bad"]["properties"]


def test_one_name_fetched_twice_gives_two_components_with_their_own_refs(case):
    """vLLM's cpu_extension.cmake fetches oneDNN at two tags: each fetch is a component with a
    deterministic bom-ref of its own (a repeated ref was replaced by a random one, so the same
    audit gave other bytes)."""
    ctx = context(case["tmp"], case, name="onednn-twice")
    deps = ctx.results["deps"].data_as(DepsData)
    assert deps is not None
    fetches = tuple(FetchRecord(name="onednn", kind=Kind.CMAKE_GIT,
                                repository="https://github.com/oneapi-src/oneDNN.git",
                                tag=tag, url=None, hash=None, pinned=False,
                                file="cmake/cpu_extension.cmake", line=line)
                    for tag, line in (("v3.7.2", 170), ("v3.8.1", 177)))
    ctx.results["deps"] = StageResult("deps", StageStatus.OK, replace(deps,
                                                                      cmake_fetches=fetches))
    assert SbomStage().run(ctx).status is StageStatus.OK
    doc = assert_valid((ctx.out_dir / "sbom.cdx.json").read_text())
    refs = sorted(c["bom-ref"] for c in doc["components"] if c["name"] == "onednn")
    assert refs == ["auditor:cmake:onednn", "auditor:cmake:onednn@v3.8.1"]
