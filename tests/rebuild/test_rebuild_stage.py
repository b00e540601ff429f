"""The build stage end to end with the real nvcc, cmake and sandbox on a tiny CUDA engine."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from buildcase import KERN_CU, Upstream, make_case, make_series, needs_nvcc, run_build

from auditor.model import Action, Category, StageStatus
from auditor.rebuild.wheel import record_problems, unpack_wheel

pytestmark = needs_nvcc

KERN_V2 = KERN_CU + 'extern "C" int tiny_scale_v2(float* x, int n) { return tiny_scale(x, 2.0f, n); }\n'


@pytest.fixture(scope="module")
def main_run(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory):
    """The kernel changed, Python files replaced/added/deleted; built twice (repro)."""
    branch = make_series(upstream, "main", [
        {"csrc/kern.cu": KERN_V2},
        {"tinyeng/server.py": "def serve(host='127.0.0.1', port=8000):\n    return host, port\n",
         "tinyeng/util.py": "def helper():\n    return 1\n",
         "tinyeng/old.py": None,
         "tests/test_util.py": "def test_helper():\n    assert True\n"},
    ])
    case = make_case(upstream, tmp_path_factory.mktemp("main"), branch, repro=True)
    result = run_build(case)
    return case, result


def _out_wheel(case, result) -> Path:
    return case.ctx.out_dir / result.to_json()["wheel"]["file"]


def test_changed_module_is_rebuilt_and_unchanged_ones_come_from_the_wheel(main_run, upstream):
    case, result = main_run
    assert result.status is StageStatus.OK, (result.reasons, result.not_checked)
    mods = {m["name"]: m for m in result.to_json()["modules"]}
    assert mods["kern"]["action"] == "built"
    assert mods["kern"]["changed_sources"] == ["csrc/kern.cu"]
    assert mods["kern"]["sha256"] != mods["kern"]["official_sha256"]
    assert any("nvcc" in c and "-gencode=arch=compute_86,code=sm_86" in c
               for c in mods["kern"]["commands"])
    assert all("$SRC" in c or "$BUILD" in c for c in mods["kern"]["commands"])
    assert mods["kern"]["abi"] == {"missing": [], "added": ["tiny_scale_v2"], "missing_weak": []}
    for name in ("other", "cm"):
        assert mods[name]["action"] == "official"
        assert mods[name]["sha256"] == mods[name]["official_sha256"]
        assert mods[name]["commands"] == []
    # the official copy really is what the output holds
    official = zipfile.ZipFile(upstream.wheel)
    out = zipfile.ZipFile(_out_wheel(case, result))
    assert out.read("tinyeng/_other.so") == official.read("tinyeng/_other.so")
    assert out.read("tinyeng/_kern.so") != official.read("tinyeng/_kern.so")
    tc = result.to_json()["toolchain"]
    assert tc["nvcc"].startswith("13.0") and tc["matches"] is True
    assert result.to_json()["sandbox"]["network"] == "none"


def test_python_overlay_and_version_label(main_run):
    case, result = main_run
    py = result.to_json()["python"]
    assert py["replaced"] == ["tinyeng/server.py"]
    assert py["added"] == ["tinyeng/util.py"]
    assert py["dropped"] == ["tinyeng/old.py"]
    w = result.to_json()["wheel"]
    label = "+audited." + case.ws.bundle_tree[:12]
    assert w["version"] == "1.0.0" + label
    assert w["file"] == f"tinyeng-1.0.0{label}-py3-none-linux_x86_64.whl"
    names = zipfile.ZipFile(_out_wheel(case, result)).namelist()
    assert "tests/test_util.py" not in names and "tinyeng/old.py" not in names
    di = f"tinyeng-1.0.0{label}.dist-info"
    assert {n.split("/")[0] for n in names if "dist-info" in n} == {di}
    meta = zipfile.ZipFile(_out_wheel(case, result)).read(f"{di}/METADATA").decode()
    assert f"Version: 1.0.0{label}" in meta.splitlines()
    assert result.to_json()["official_wheel"]["version"] == "1.0.0"


def test_every_file_of_the_output_has_an_origin(main_run, tmp_path):
    case, result = main_run
    origins = result.to_json()["origins"]
    wheel = _out_wheel(case, result)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert names == set(origins)
    kinds = {p: o["origin"] for p, o in origins.items()}
    assert kinds["tinyeng/_kern.so"] == "built"
    assert kinds["tinyeng/_other.so"] == kinds["tinyeng/__init__.py"] == "official"
    assert kinds["tinyeng/server.py"] == kinds["tinyeng/util.py"] == "audited-source"
    assert origins["tinyeng/util.py"]["commit"] == case.ws.commits[-1].sha
    kern = origins["tinyeng/_kern.so"]
    assert kern["recipe_entry"] == "modules.kern" and kern["toolchain"]["nvcc"].startswith("13")
    assert kern["commands"]
    # each claim holds: hash the output members and compare with their claimed sources
    unpacked = unpack_wheel(wheel, tmp_path / "u")
    shown = result.to_json()["official_wheel"]["path"]  # relative to the spec's folder
    assert not Path(shown).is_absolute()
    official = unpack_wheel(case.root / shown, tmp_path / "o")
    for path, member in unpacked.members.items():
        o = origins[path]
        if o["origin"] == "official":
            assert official.members[o.get("official_path", path)].sha256 == member.sha256
        elif o["origin"] == "audited-source":
            src = case.ws.bundle_root / o["bundle_path"]
            assert hashlib.sha256(src.read_bytes()).hexdigest() == member.sha256
        elif o["origin"] == "built":
            assert o["sha256"] == member.sha256
        else:
            assert path.endswith(("/RECORD", "/METADATA"))


def test_output_wheel_is_deterministic_zip_with_valid_record(main_run, tmp_path):
    case, result = main_run
    wheel = _out_wheel(case, result)
    zf = zipfile.ZipFile(wheel)
    infos = zf.infolist()
    names = [i.filename for i in infos]
    body = [n for n in names if ".dist-info/" not in n]
    assert body == sorted(body) and names[-1].endswith(".dist-info/RECORD")
    epoch = result.to_json()["source_date_epoch"]
    import time

    assert {i.date_time for i in infos} == {time.gmtime(epoch)[:6]}
    modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in infos}
    assert modes["tinyeng/_kern.so"] == 0o755 and modes["tinyeng/server.py"] == 0o644
    assert record_problems(unpack_wheel(wheel, tmp_path / "x")) == []
    assert epoch == int(__import__("datetime").datetime.fromisoformat(
        case.ws.commits[-1].committer_date).timestamp())


def test_two_builds_are_byte_identical(main_run):
    case, result = main_run
    assert result.to_json()["reproducible"] is True
    repro = result.to_json()["repro"]
    assert repro["modules"]["kern"]["identical"] is True
    assert repro["modules"]["kern"]["first"] == result.to_json()["modules"][0]["sha256"]
    assert repro["wheel"]["identical"] is True
    assert repro["wheel"]["first"] == result.to_json()["wheel"]["sha256"]
    assert repro["builds"][0]["umask"] != repro["builds"][1]["umask"]


def test_details_are_json_and_carry_the_contract_fields(main_run):
    case, result = main_run
    data = json.loads(json.dumps(result.to_json()))
    for key in ("wheel", "official_wheel", "modules", "toolchain", "reproducible", "origins",
                "left_out", "source_date_epoch", "started", "finished"):
        assert key in data
    assert set(data["wheel"]) >= {"file", "name", "version", "sha256"}
    assert set(data["official_wheel"]) >= {"file", "name", "version", "sha256"}
    assert set(data["toolchain"]) >= {"nvcc", "cc", "expected", "matches"}
    for m in data["modules"]:
        assert set(m) >= {"name", "wheel_path", "action", "sha256", "builder", "sources",
                          "commands", "abi"}


def test_output_wheel_installs_into_a_fresh_venv_and_imports(main_run, tmp_path):
    case, result = main_run
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    str(_out_wheel(case, result))], check=True, capture_output=True)
    out = subprocess.run([str(py), "-c", "import tinyeng, tinyeng.util, tinyeng.server as s; "
                          "print(tinyeng.kern.tiny_scale_v2 is not None, s.serve(), "
                          "tinyeng.util.helper())"],
                         check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    assert out.strip() == "True ('127.0.0.1', 8000) 1"


def test_export_build_copies_the_wheel(main_run, tmp_path):
    from auditor.rebuild.stage import export_build

    case, result = main_run
    dest = export_build(result, case.ctx, tmp_path / "builds-out")
    assert dest is not None and dest.read_bytes() == _out_wheel(case, result).read_bytes()


# ---------------------------------------------------------------- failures, no compile needed


def test_unclaimed_changed_cu_fails_with_a_finding(upstream, tmp_path):
    branch = make_series(upstream, "unclaimed", [{"extra/evil.cu": "__global__ void e() {}\n"}])
    result = run_build(make_case(upstream, tmp_path, branch))
    assert result.status is StageStatus.FAILED
    assert any("extra/evil.cu" in r and "no module" in r for r in result.reasons)
    [f] = [f for f in result.findings if f.rule == "build.unclaimed-native-source"]
    assert f.path == "extra/evil.cu" and f.action is Action.BLOCK and f.commit is not None
    assert result.to_json()["wheel"] is None


def test_wrong_wheel_sha256_fails(upstream, tmp_path):
    from buildcase import recipe_text

    branch = make_series(upstream, "sha", [{"tinyeng/server.py": "X = 1\n"}])
    result = run_build(make_case(upstream, tmp_path, branch,
                                 recipe=recipe_text(upstream, sha256="0" * 64)))
    assert result.status is StageStatus.FAILED
    assert any("sha256" in r and upstream.sha256 in r for r in result.reasons)
    assert result.to_json()["wheel"] is None


def _lying_wheel(up: Upstream, dest: Path) -> Path:
    """The official wheel, with RECORD claiming another hash for tinyeng/server.py."""
    src = zipfile.ZipFile(up.wheel)
    out = dest / up.wheel.name
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/RECORD"):
                rows = list(csv.reader(io.StringIO(data.decode())))
                for row in rows:
                    if row and row[0] == "tinyeng/server.py":
                        row[1] = "sha256=" + "A" * 43
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerows(rows)
                data = buf.getvalue().encode()
            zf.writestr(info, data)
    return out


def test_a_wheel_whose_record_lies_fails_with_the_path(upstream, tmp_path):
    from buildcase import recipe_text

    wheel = _lying_wheel(upstream, tmp_path / "lying")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    branch = make_series(upstream, "record", [{"tinyeng/server.py": "X = 1\n"}])
    result = run_build(make_case(upstream, tmp_path / "case", branch,
                                 recipe=recipe_text(upstream, wheel=wheel, sha256=sha)))
    assert result.status is StageStatus.FAILED
    assert result.reasons == ("official wheel RECORD lies: tinyeng/server.py: sha256 differs "
                              "from RECORD",)


def test_a_bundle_binary_is_left_out_and_reported(upstream, tmp_path):
    fake_elf = b"\x7fELF\x02\x01\x01" + b"\x00" * 57 + b"payload"
    branch = make_series(upstream, "binary", [
        {"tinyeng/_helper.so": fake_elf, "tinyeng/server.py": "def serve():\n    return 1\n"}])
    case = make_case(upstream, tmp_path, branch)
    result = run_build(case)
    assert result.status is StageStatus.OK, result.reasons
    [left] = result.to_json()["left_out"]
    assert left["path"] == "tinyeng/_helper.so" and left["reason"] == "binary"
    assert left["sha256"] == hashlib.sha256(fake_elf).hexdigest()
    [f] = [f for f in result.findings if f.rule == "build.bundle-binary"]
    assert f.category is Category.BINARY_ARTIFACT and f.action is Action.BLOCK
    assert f.commit == case.ws.commits[-1].sha
    names = zipfile.ZipFile(case.ctx.out_dir / result.to_json()["wheel"]["file"]).namelist()
    assert "tinyeng/_helper.so" not in names and "tinyeng/server.py" in names
    # nothing native changed: every module is the official one, no toolchain was needed
    assert {m["action"] for m in result.to_json()["modules"]} == {"official"}
    assert result.to_json()["reproducible"] is None


def test_missing_nvcc_makes_the_stage_incomplete(upstream, tmp_path):
    from buildcase import recipe_text

    branch = make_series(upstream, "nonvcc", [{"csrc/kern.cu": KERN_V2}])
    result = run_build(make_case(upstream, tmp_path, branch,
                                 recipe=recipe_text(upstream, nvcc_path="/nonexistent/nvcc")))
    assert result.status is StageStatus.INCOMPLETE
    assert any("nvcc" in n and "not installed" in n for n in result.not_checked)


def test_no_sandbox_available_is_incomplete_never_unsandboxed(upstream, tmp_path, monkeypatch):
    import os
    import shutil

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("nvcc", "gcc", "g++", "strip", "git", "sh", "cat"):
        os.symlink(shutil.which(tool), bindir / tool)
    branch = make_series(upstream, "nosandbox", [{"csrc/kern.cu": KERN_V2}])
    case = make_case(upstream, tmp_path / "case", branch)
    monkeypatch.setenv("PATH", str(bindir))
    result = run_build(case)
    assert result.status is StageStatus.INCOMPLETE
    assert any("no network-less build sandbox" in n for n in result.not_checked)
    assert not list((case.ctx.workdir).glob("build-a/build/*/out/*"))


def test_proof_failure_builds_nothing(upstream, tmp_path):
    import dataclasses

    branch = make_series(upstream, "proof", [{"tinyeng/server.py": "X = 2\n"}])
    case = make_case(upstream, tmp_path, branch)
    case.ctx.workspace = dataclasses.replace(case.ws, proof_ok=False)
    result = run_build(case)
    assert result.status is StageStatus.FAILED
    assert "unverified" in result.reasons[0]


def test_a_missing_exported_symbol_fails_the_build(upstream, tmp_path):
    renamed = KERN_CU.replace("int tiny_scale(", "int tiny_scale_renamed(")
    branch = make_series(upstream, "abi", [{"csrc/kern.cu": renamed}])
    result = run_build(make_case(upstream, tmp_path, branch, repro=False))
    assert result.status is StageStatus.FAILED
    [reason] = result.reasons
    assert reason == ("module kern: the rebuilt module no longer exports 1 symbol(s) of the "
                      "official one: tiny_scale")
    kern = next(m for m in result.to_json()["modules"] if m["name"] == "kern")
    assert kern["action"] == "built" and kern["abi"]["missing"] == ["tiny_scale"]
    assert kern["abi"]["added"] == ["tiny_scale_renamed"]
    assert result.to_json()["wheel"] is None
    assert result.to_json()["reproducible"] is None  # repro was off


def test_a_corrupt_official_wheel_is_an_input_error(upstream, tmp_path):
    from buildcase import recipe_text

    from auditor.errors import InputError

    bad = tmp_path / "w" / upstream.wheel.name
    bad.parent.mkdir()
    bad.write_bytes(b"PK\x03\x04 this is not a zip")
    sha = hashlib.sha256(bad.read_bytes()).hexdigest()
    branch = make_series(upstream, "badzip", [{"tinyeng/server.py": "X = 3\n"}])
    case = make_case(upstream, tmp_path / "case", branch,
                     recipe=recipe_text(upstream, wheel=bad, sha256=sha))
    with pytest.raises(InputError, match="not a readable zip"):
        run_build(case)


def test_a_huge_wheel_member_is_an_input_error(upstream, tmp_path):
    from buildcase import recipe_text

    from auditor.errors import InputError

    recipe = recipe_text(upstream).replace('[toolchain]', 'max_member_bytes = 1000\n\n[toolchain]')
    branch = make_series(upstream, "huge", [{"tinyeng/server.py": "X = 4\n"}])
    case = make_case(upstream, tmp_path, branch, recipe=recipe)
    with pytest.raises(InputError, match=r"tinyeng/_\w+\.so' is \d+ bytes, more than the limit 1000"):
        run_build(case)


def test_requirement_without_online_is_incomplete(upstream, tmp_path):
    from buildcase import recipe_text

    recipe = recipe_text(upstream).replace(f'file = "{upstream.wheel}"',
                                           'requirement = "tinyeng==1.0.0"')
    branch = make_series(upstream, "offline", [{"tinyeng/server.py": "X = 5\n"}])
    result = run_build(make_case(upstream, tmp_path, branch, recipe=recipe))
    assert result.status is StageStatus.INCOMPLETE
    assert "--online" in result.not_checked[0]


def test_build_through_the_pipeline_with_the_real_verify_stage(upstream, tmp_path):
    """The same stage behind `auditor build`: verify publishes the workspace, build reads it."""
    import shutil as _shutil

    from auditor.pipeline import run_single
    from auditor.spec import load_spec
    from auditor.stage import Options

    branch = make_series(upstream, "pipeline", [
        {"csrc/kern.cu": KERN_V2, "tinyeng/server.py": "def serve():\n    return 'audited'\n"}])
    case = make_case(upstream, tmp_path, branch)  # writes the spec, bundle and recipe
    result, ctx, base = run_single(load_spec(case.root / "audit.toml"), Options(repro=False),
                                   "build")
    try:
        assert ctx.results["verify"].status is StageStatus.OK, ctx.results["verify"].reasons
        assert result.status is StageStatus.OK, (result.reasons, result.not_checked)
        mods = {m["name"]: m["action"] for m in result.to_json()["modules"]}
        assert mods == {"kern": "built", "other": "official", "cm": "official"}
        assert result.to_json()["reproducible"] is None
        wheel = ctx.out_dir / result.to_json()["wheel"]["file"]
        assert zipfile.ZipFile(wheel).read("tinyeng/server.py") == b"def serve():\n    return 'audited'\n"
    finally:
        _shutil.rmtree(base, ignore_errors=True)


def test_a_wheel_of_another_version_fails(upstream, tmp_path):
    from buildcase import recipe_text

    from auditor.rebuild.wheel import write_wheel

    other = write_wheel(tmp_path / "w", "tinyeng", "0.9.0", {"tinyeng/__init__.py": b""})
    sha = hashlib.sha256(other.read_bytes()).hexdigest()
    branch = make_series(upstream, "version", [{"tinyeng/server.py": "X = 6\n"}])
    result = run_build(make_case(upstream, tmp_path / "case", branch,
                                 recipe=recipe_text(upstream, wheel=other, sha256=sha)))
    assert result.status is StageStatus.FAILED
    assert result.reasons == ("the official wheel is version 0.9.0, the spec audits 1.0.0",)


def test_official_files_are_compared_with_the_upstream_tree(main_run):
    case, result = main_run
    # the tiny engine's official wheel was built from the very upstream tree: nothing differs
    assert result.to_json()["official_differs_from_upstream"] == []


def test_requirement_is_fetched_with_online_and_then_cached(upstream, tmp_path, monkeypatch):
    """`--online` runs the real `pip download`; here pip's index is a local folder (no network)."""
    from buildcase import recipe_text

    from auditor.stage import Options

    links = tmp_path / "index"
    links.mkdir()
    (links / upstream.wheel.name).write_bytes(upstream.wheel.read_bytes())
    # a local build of the same release beside it, which pip prefers for `tinyeng==1.0.0`: the
    # stage asks for the exact version (`===`), so the pinned wheel is the one fetched
    from auditor.rebuild.wheel import write_wheel

    local = write_wheel(links, "tinyeng", "1.0.0+cpu", {"tinyeng/__init__.py": b"LOCAL = 1\n"})
    assert local.name.startswith("tinyeng-1.0.0+cpu-")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.setenv("AUDITOR_CACHE", str(tmp_path / "cache"))
    recipe = recipe_text(upstream).replace(f'file = "{upstream.wheel}"',
                                           'requirement = "tinyeng==1.0.0"')
    branch = make_series(upstream, "online", [{"tinyeng/server.py": "X = 7\n"}])
    case = make_case(upstream, tmp_path / "one", branch, recipe=recipe)
    case.ctx.options = Options(repro=False, online=True)
    result = run_build(case)
    assert result.status is StageStatus.OK, (result.reasons, result.not_checked)
    cached = tmp_path / "cache" / "wheels" / upstream.sha256 / upstream.wheel.name
    assert cached.is_file()
    # offline now: the cached copy (still checked against the pin) is used
    (links / upstream.wheel.name).unlink()
    again = run_build(make_case(upstream, tmp_path / "two", branch, recipe=recipe))
    assert again.status is StageStatus.OK
    shown = again.to_json()["official_wheel"]["path"]  # relative to the spec's folder
    assert (tmp_path / "two" / shown).resolve() == cached.resolve()
