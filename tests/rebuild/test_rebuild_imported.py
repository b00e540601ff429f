"""The build on the CUDA host, the rest of the audit on a standard runner (issue 33 item 15).

``auditor build SPEC --out DIR`` writes the build folder on one "host"; ``auditor audit SPEC
--build-from DIR`` runs verify/deps/sbom fresh and imports the build after checking it. The demo's
real CUDA module (``tinyllm/_rmsnorm.so``) is compiled with the real nvcc in the real sandbox; the
one-host audit is the reference the imported one is compared with.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from buildcase import NVCC
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import InputError
from auditor.model import StageStatus
from auditor.pipeline import run_pipeline
from auditor.rebuild.imported import RECORD_FILE, plan_recipe
from auditor.results.audit_file import check_before_writing
from auditor.spec import load_spec
from auditor.stage import Options

MODULE = "modules/tinyllm/_rmsnorm.so"
STAGES = ["build", "sbom"]  # with what they need: verify, deps (no scan: it adds nothing here)


def cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    return res.exit_code, res.stderr


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if NVCC is None:
        pytest.skip("nvcc is not installed on this machine")
    from auditor.errors import ToolMissing
    from auditor.rebuild.sandbox import SandboxKind, select_sandbox

    try:
        select_sandbox(SandboxKind.AUTO, tmp_path_factory.mktemp("sandbox-probe"))
    except ToolMissing as exc:
        pytest.skip(f"no network-less sandbox on this machine: {exc.message}")
    from auditor.demo import prepare

    root = tmp_path_factory.mktemp("h4")
    spec_path = prepare(root / "example")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUDITOR_CACHE", str(root / "cache"))
        code, err = cli("build", str(spec_path), "--out", str(root / "cuda-host" / "build-out"))
        assert code == 1, err  # the demo's series brings a prebuilt binary: a blocking finding
        one_host = _run(spec_path, root / "one-host", None)
    return {"spec": spec_path, "root": root, "out": root / "cuda-host" / "build-out",
            "one_host": one_host}


def _run(spec_path: Path, where: Path, build_from: Path | None) -> dict[str, Any]:
    """verify, deps, build and sbom through the real pipeline; the audit and what it wrote."""
    (where / "out").mkdir(parents=True)
    (where / "work").mkdir()
    audit, _ = run_pipeline(load_spec(spec_path),
                            Options(reproducible=True, repro=True, build_from=build_from),
                            STAGES, where / "out", where / "work")
    return {"audit": audit, "build": audit.stages["build"], "files": {
        p.name: p.read_bytes() for p in (where / "out").iterdir() if p.is_file()}}


def _copy(demo: dict[str, Any], tmp_path: Path) -> Path:
    dest = tmp_path / "build-out"
    shutil.copytree(demo["out"], dest)
    return dest


def _record(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / RECORD_FILE).read_text())
    return data


def _write_record(folder: Path, record: dict[str, Any]) -> None:
    (folder / RECORD_FILE).write_text(json.dumps(record))


def test_build_folder_holds_the_record_wheel_and_module(demo: dict[str, Any]) -> None:
    record = _record(demo["out"])
    assert record["schema"] == "auditor/build-record/v1"
    stage = record["stage"]
    assert stage["status"] == "ok" and stage["reproducible"] is True
    assert record["built_modules"] == ["rmsnorm"]
    assert record["bundle"]["kind"] == "file" and len(record["bundle"]["tree"]) == 40
    assert record["recipe"]["path"] == "builds/tinyllm-1.0.0-sm86.toml"
    assert set(record["files"]) == {stage["wheel"]["file"], MODULE}
    built = next(m for m in stage["modules"] if m["action"] == "built")
    assert record["files"][MODULE] == built["sha256"]
    assert stage["toolchain"]["nvcc"] and stage["toolchain"]["programs"]
    assert (demo["out"] / ".auditor-out").is_file()


def test_imported_build_gives_the_one_host_verdict_module_digests_and_provenance(
        demo: dict[str, Any], tmp_path: Path) -> None:
    one = demo["one_host"]
    imp = _run(demo["spec"], tmp_path / "standard-runner", demo["out"])
    assert imp["audit"].verdict is one["audit"].verdict
    a, b = one["build"].to_json(), imp["build"].to_json()
    imported = b.pop("imported")
    for run_fact in ("started", "finished"):  # when each build ran (--reproducible drops them)
        a.pop(run_fact), b.pop(run_fact)
    assert a == b  # modules, digests, origins, findings, reproducibility: all the same
    assert imported["from"].endswith("build-out") and not imported["from"].startswith("/")
    assert len(imported["record_sha256"]) == 64 and imported["record"] == RECORD_FILE
    # the SBOM and the provenance statement cover the same module and wheel digests, byte for byte
    assert imp["files"].keys() == one["files"].keys()
    assert imp["files"] == one["files"]
    provenance = next(v for k, v in imp["files"].items() if "provenance" in k)
    built = next(m for m in imp["build"].to_json()["modules"] if m["action"] == "built")
    assert built["sha256"].encode() in provenance and built["sha256"].encode() in imp["files"][
        "sbom.cdx.json"]
    check_before_writing(imp["audit"].to_json())  # the additive field fits docs/audit.schema.json
    from auditor.report.markdown import MarkdownFormatter

    line = next(x for x in MarkdownFormatter().render(imp["audit"]).splitlines()
                if x.startswith("| build |"))
    assert "imported from" in line and "build.json" in line


def test_a_tampered_module_byte_fails_the_build_naming_the_file(demo: dict[str, Any],
                                                               tmp_path: Path) -> None:
    folder = _copy(demo, tmp_path)
    module = folder / MODULE
    data = bytearray(module.read_bytes())
    data[len(data) // 2] ^= 1
    module.write_bytes(bytes(data))
    imp = _run(demo["spec"], tmp_path / "runner", folder)
    build = imp["build"]
    assert build.status is StageStatus.FAILED
    assert any(MODULE in r and "sha256" in r for r in build.reasons), build.reasons
    assert build.to_json()["wheel"] is None  # no wheel: nothing falls back to the official one
    assert not any(name.endswith(".whl") for name in imp["files"])
    assert not any("provenance" in name for name in imp["files"])


def test_a_module_swapped_with_its_record_entry_is_caught_by_the_wheel(
        demo: dict[str, Any], tmp_path: Path) -> None:
    """Rewriting the module and its digest in the record still leaves the wheel's member."""
    import hashlib

    folder = _copy(demo, tmp_path)
    (folder / MODULE).write_bytes(b"\x7fELF not the module built there")
    record = _record(folder)
    fake = hashlib.sha256((folder / MODULE).read_bytes()).hexdigest()
    record["files"][MODULE] = fake
    for m in record["stage"]["modules"]:
        if m["action"] == "built":
            m["sha256"] = fake
    _write_record(folder, record)
    build = _run(demo["spec"], tmp_path / "runner", folder)["build"]
    assert build.status is StageStatus.FAILED
    assert any("tinyllm/_rmsnorm.so has sha256" in r for r in build.reasons), build.reasons


def test_a_missing_file_fails_the_build_naming_it(demo: dict[str, Any], tmp_path: Path) -> None:
    folder = _copy(demo, tmp_path)
    wheel = _record(folder)["stage"]["wheel"]["file"]
    (folder / wheel).unlink()
    build = _run(demo["spec"], tmp_path / "runner", folder)["build"]
    assert build.status is StageStatus.FAILED
    assert any(wheel in r and "missing" in r for r in build.reasons), build.reasons


def test_another_recipe_fails_the_build_naming_the_field(demo: dict[str, Any],
                                                         tmp_path: Path) -> None:
    example = tmp_path / "example"
    shutil.copytree(demo["spec"].parent, example, symlinks=True)
    recipe = example / "builds" / "tinyllm-1.0.0-sm86.toml"
    recipe.write_text(recipe.read_text() + "# edited after the build\n")
    build = _run(example / "audit.toml", tmp_path / "runner", demo["out"])["build"]
    assert build.status is StageStatus.FAILED
    assert any("recipe.sha256" in r for r in build.reasons), build.reasons


def test_the_importing_audits_policy_rules_the_imported_findings(demo: dict[str, Any],
                                                                  tmp_path: Path) -> None:
    """The build was judged by the building audit's policy (the demo's prebuilt binary blocks);
    an audit whose policy rules that finding otherwise gets its own action, not the record's."""
    from auditor.spec import POLICIES_DIR

    rule = "build.bundle-binary"
    [blocked] = [f for f in demo["one_host"]["build"].findings if f.rule == rule]
    assert blocked.action.value == "block"
    example = tmp_path / "example"
    shutil.copytree(demo["spec"].parent, example, symlinks=True)
    default = (POLICIES_DIR / "default.toml").read_text()
    first = default.index("[[override]]")
    (example / "own-policy.toml").write_text(
        default[:first] + f'[[override]]\nrule = "{rule}"\naction = "info"\n' + default[first:])
    spec = example / "audit.toml"
    text = spec.read_text()
    assert 'scope = "diff"' in text
    spec.write_text(text.replace('scope = "diff"', 'scope = "diff"\npolicy = "own-policy.toml"', 1))
    build = _run(spec, tmp_path / "runner", demo["out"])["build"]
    assert not build.reasons, build.reasons  # the same build, imported
    [ruled] = [f for f in build.findings if f.rule == rule]
    assert ruled.action.value == "info" and ruled.fingerprint == blocked.fingerprint


def test_a_record_that_built_other_modules_than_the_plan_fails(demo: dict[str, Any],
                                                               tmp_path: Path) -> None:
    """A record (consistent in itself) that compiled nothing, where this audit's plan rebuilds
    rmsnorm: the plan derived here decides."""
    folder = _copy(demo, tmp_path)
    record = _record(folder)
    for m in record["stage"]["modules"]:
        if m["action"] == "built":
            m.update(action="official", sha256=m["official_sha256"], changed_sources=[],
                     commands=[])
    record["built_modules"] = []
    record["files"].pop(MODULE)
    (folder / MODULE).unlink()
    _write_record(folder, record)
    build = _run(demo["spec"], tmp_path / "runner", folder)["build"]
    assert build.status is StageStatus.FAILED
    assert any("this audit's plan rebuilds ['rmsnorm']" in r for r in build.reasons), \
        build.reasons


def test_a_record_for_another_bundle_is_exit_2_naming_both_trees(demo: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    folder = _copy(demo, tmp_path)
    record = _record(folder)
    theirs = "0" * 40
    ours = record["bundle"]["tree"]
    record["bundle"]["tree"] = theirs
    _write_record(folder, record)
    with pytest.raises(InputError) as exc:
        _run(demo["spec"], tmp_path / "runner", folder)
    assert theirs in exc.value.message and ours in exc.value.message
    code, err = cli("audit", str(demo["spec"]), "--out", str(tmp_path / "audit-out"),
                    "--build-from", str(folder))
    assert code == 2 and theirs in err.replace("\n", "") and "--build-from" in err
    assert not (tmp_path / "audit-out").exists()


def test_a_missing_record_is_exit_2_before_any_stage(demo: dict[str, Any],
                                                     tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = cli("audit", str(demo["spec"]), "--out", str(tmp_path / "audit-out"),
                    "--build-from", str(empty))
    assert code == 2 and RECORD_FILE in err, err
    assert "verify …" not in err  # nothing ran
    code, err = cli("audit", str(demo["spec"]), "--out", str(tmp_path / "audit-out"),
                    "--build-from", str(tmp_path / "nowhere"))
    assert code == 2 and "not a folder" in err, err
    (empty / RECORD_FILE).write_text("{not json")
    code, err = cli("audit", str(demo["spec"]), "--out", str(tmp_path / "audit-out"),
                    "--build-from", str(empty))
    assert code == 2 and "not JSON" in err, err


def test_build_out_into_a_foreign_folder_is_exit_2_before_the_build(demo: dict[str, Any],
                                                                    tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine\n")
    code, err = cli("build", str(demo["spec"]), "--out", str(foreign))
    assert code == 2 and "marker" in err, err
    assert "build …" not in err
    assert (foreign / "keep.txt").read_text() == "mine\n"


RECIPE = """\
engine = "tinyeng"
version = "1.0.0"
target = "sm86"
archs = ["86"]

[wheel]
file = "/nonexistent/build-host/official.whl"
sha256 = "{sha}"

[sandbox]
readable = ["/nonexistent/build-host/venv"]

[modules.kern]
wheel_path = "tinyeng/_kern.so"
sources = ["csrc/kern.cu", "csrc/*.cuh"]
builder = "nvcc"
[modules.kern.nvcc]
sources = ["csrc/kern.cu"]
extra_include_dirs = ["/nonexistent/build-host/include"]

[modules.cm]
wheel_path = "tinyeng/_cm.so"
sources = ["cmk/**"]
builder = "cmake"
[modules.cm.cmake]
source_dir = "cmk"
target = "_cm"
output = "_cm.so"
[modules.cm.cmake.fetchcontent]
tinydep = "/nonexistent/build-host/tinydep"
"""


def test_the_plan_reads_a_recipe_whose_build_host_folders_are_not_here(tmp_path: Path) -> None:
    """A standard runner has none of the build machine's folders; the real loader refuses them,
    the plan's view of the recipe keeps every module as written."""
    from auditor.errors import SpecError
    from auditor.rebuild.recipe import load_recipe

    recipe = tmp_path / "r.toml"
    recipe.write_text(RECIPE.format(sha="a" * 64))
    with pytest.raises(SpecError):
        load_recipe(recipe)
    (tmp_path / "plan").mkdir()
    got = plan_recipe(recipe, tmp_path / "plan")
    assert [(m.name, m.wheel_path, m.sources) for m in got.modules] == [
        ("kern", "tinyeng/_kern.so", ("csrc/kern.cu", "csrc/*.cuh")),
        ("cm", "tinyeng/_cm.so", ("cmk/**",))]
    cm = got.modules[1].cmake
    assert cm is not None and (cm.source_dir, cm.target) == ("cmk", "_cm")
    assert got.path.name == "r.toml" and got.wheel.sha256 == "a" * 64


def test_a_spec_without_build_is_exit_2_for_both_commands(demo: dict[str, Any],
                                                          tmp_path: Path) -> None:
    example = tmp_path / "example"
    shutil.copytree(demo["spec"].parent, example, symlinks=True)
    spec = example / "audit.toml"
    text = spec.read_text()
    start = text.index("[build]")
    spec.write_text(text[:start] + text[text.index("[service]"):])
    code, err = cli("build", str(spec), "--out", str(tmp_path / "build-out"))
    assert code == 2 and "no section for build" in err, err
    assert not (tmp_path / "build-out").exists()
    code, err = cli("audit", str(spec), "--out", str(tmp_path / "audit-out"),
                    "--build-from", str(demo["out"]))
    assert code == 2 and "has no [build]" in err, err
