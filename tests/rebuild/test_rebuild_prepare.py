"""`auditor build prepare RECIPE`: pinned toolchain packages fetched once (hash-checked), then offline.

The network is the only thing mocked: the fetcher copies wheels this test writes (with the
project's own wheel writer) instead of asking the registry. Hashing, unpacking, the state file
and the CLI run for real.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import InputError, SpecError, ToolMissing
from auditor.rebuild.prepare import check_prepared, prepare, render
from auditor.rebuild.recipe import ToolchainPackage, load_recipe
from auditor.rebuild.wheel import write_wheel


def _wheels(tmp: Path) -> dict[str, tuple[Path, str]]:
    src = tmp / "registry"
    out = {}
    for name, files in (("tinycuda", {"tinycuda/include/tiny.h": b"#define TINY 1\n"}),
                        ("tinytool", {"tinytool/data/bin/tool": (b"#!/bin/sh\necho tool\n", 0o755)})):
        w = write_wheel(src, name, "1.0", files)  # type: ignore[arg-type]
        out[name] = (w, hashlib.sha256(w.read_bytes()).hexdigest())
    return out


def _recipe(tmp: Path, wheels: dict[str, tuple[Path, str]], *, sha: str | None = None) -> Path:
    pkgs = "".join(f"""
[[toolchain.packages]]
name = "{name}"
version = "1.0"
file = "{w.name}"
sha256 = "{sha if sha and name == 'tinycuda' else h}"
role = "cuda"
""" for name, (w, h) in sorted(wheels.items()))
    (tmp / "official.whl").write_bytes(b"")
    text = f"""engine = "eng"
version = "1.0.0"
target = "sm86"
archs = ["86"]
[wheel]
file = "official.whl"
sha256 = "{'0' * 64}"
[toolchain]
dir = "tc"
{pkgs}
[modules.k]
wheel_path = "eng/_k.so"
sources = ["csrc/k.cu"]
builder = "nvcc"
[modules.k.nvcc]
sources = ["csrc/k.cu"]
"""
    path = tmp / "recipe.toml"
    path.write_text(text)
    return path


class FakeRegistry:
    """Serves the wheels written above; counts requests (the network is what is mocked)."""

    def __init__(self, wheels: dict[str, tuple[Path, str]], corrupt: bool = False) -> None:
        self.wheels = wheels
        self.calls: list[str] = []
        self.corrupt = corrupt

    def __call__(self, pkg: ToolchainPackage, dest: Path) -> Path:
        self.calls.append(pkg.requirement)
        src, _ = self.wheels[pkg.name]
        out = dest / src.name
        shutil.copyfile(src, out)
        if self.corrupt:
            with out.open("ab") as f:
                f.write(b"tampered")
        return out


def test_prepare_fetches_once_checks_unpacks_then_runs_offline(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    recipe = load_recipe(_recipe(tmp_path, wheels))
    reg = FakeRegistry(wheels)
    done = prepare(recipe, online=True, fetch=reg)
    assert [p.action for p in done] == ["fetched", "fetched"] and all(p.unpacked for p in done)
    site = tmp_path / "tc" / "site-packages"
    assert (site / "tinycuda/include/tiny.h").read_bytes() == b"#define TINY 1\n"
    assert (site / "tinytool/data/bin/tool").stat().st_mode & 0o111
    assert check_prepared(recipe) == tmp_path / "tc"
    # offline afterwards: nothing fetched, every file re-hashed, nothing unpacked again
    again = prepare(recipe, online=False, fetch=reg)
    assert [p.action for p in again] == ["present", "present"]
    assert not any(p.unpacked for p in again) and len(reg.calls) == 2
    assert "toolchain folder" in render(recipe, again).splitlines()[-1]


def test_prepare_offline_names_every_missing_file(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    recipe = load_recipe(_recipe(tmp_path, wheels))
    with pytest.raises(InputError) as exc:
        prepare(recipe, online=False, fetch=FakeRegistry(wheels))
    assert exc.value.exit_code == 2
    for w, _ in wheels.values():
        assert w.name in exc.value.message
    assert "--online" in (exc.value.hint or "")
    with pytest.raises(ToolMissing, match="is not prepared"):
        check_prepared(recipe)


def test_prepare_a_tampered_file_in_the_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    recipe = load_recipe(_recipe(tmp_path, wheels))
    prepare(recipe, online=True, fetch=FakeRegistry(wheels))
    target = tmp_path / "tc" / "wheels" / wheels["tinytool"][0].name
    target.write_bytes(target.read_bytes() + b"x")
    with pytest.raises(InputError) as exc:
        prepare(recipe, online=False)
    assert str(target) in exc.value.message and "does not match" in exc.value.message


def test_prepare_a_download_with_the_wrong_hash_is_refused(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    recipe = load_recipe(_recipe(tmp_path, wheels))
    with pytest.raises(InputError, match="does not match the recipe"):
        prepare(recipe, online=True, fetch=FakeRegistry(wheels, corrupt=True))
    assert not list((tmp_path / "tc" / "wheels").iterdir())  # nothing unchecked was kept


def test_recipe_packages_are_validated(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    path = _recipe(tmp_path, wheels, sha="abc")
    with pytest.raises(SpecError, match=r"packages\[0\].sha256"):
        load_recipe(path)
    path.write_text(path.read_text().replace('dir = "tc"\n', ""))
    with pytest.raises(SpecError, match=r"toolchain.dir|sha256"):
        load_recipe(path)


def test_cli_build_prepare_offline_exit_2_then_ok(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    path = _recipe(tmp_path, wheels)
    runner = CliRunner()
    res = runner.invoke(app, ["build", "prepare", str(path)])
    assert res.exit_code == 2
    assert wheels["tinycuda"][0].name in res.output
    prepare(load_recipe(path), online=True, fetch=FakeRegistry(wheels))
    res = runner.invoke(app, ["build", "prepare", str(path), "--dir", str(tmp_path / "tc")])
    assert res.exit_code == 0, res.output
    assert res.output.count("present") == 2
    res = runner.invoke(app, ["build", "notprepare", str(path)])
    assert res.exit_code == 2 and "usage" in res.output


def test_the_vllm_0_10_0_recipe_loads_and_pins_its_toolchain() -> None:
    recipe = load_recipe(Path(__file__).resolve().parents[2] / "builds/vllm-0.10.0-sm86.toml")
    names = {p.name: p for p in recipe.toolchain.packages}
    assert names["torch"].version == "2.7.1"
    assert {"nvidia-cutlass", "nvidia-cuda-cccl-cu12", "cmake", "ninja"} <= set(names)
    assert all(len(p.sha256) == 64 for p in recipe.toolchain.packages)
    assert {m.cmake.target for m in recipe.modules if m.cmake} == {
        "_C", "_moe_C", "cumem_allocator", "_flashmla_C", "_vllm_fa2_C", "_vllm_fa3_C"}
    assert set(recipe.targets_not_built) == {"_rocm_C"}


def test_prepare_makes_a_venv_whose_default_path_holds_the_packages(tmp_path: Path) -> None:
    import subprocess
    import sys

    wheels = _wheels(tmp_path)
    path = _recipe(tmp_path, wheels)
    path.write_text(path.read_text().replace('dir = "tc"\n',
                                             f'dir = "tc"\npython = "{sys.executable}"\n'))
    recipe = load_recipe(path)
    prepare(recipe, online=True, fetch=FakeRegistry(wheels))
    python = tmp_path / "tc" / "venv" / "bin" / "python"
    # PYTHONPATH set to something useless (as vLLM's generator scripts do): still found
    res = subprocess.run([str(python), "-c", "import tinycuda, tinytool; print('ok')"],
                         capture_output=True, text=True, env={"PYTHONPATH": "$PYTHONPATH"},
                         check=False)
    assert res.stdout.strip() == "ok", res.stderr


def test_driver_stub_exports_every_driver_function_with_the_driver_soname(tmp_path: Path) -> None:
    import subprocess

    from auditor.rebuild.prepare import make_driver_stub

    if shutil.which("gcc") is None or shutil.which("readelf") is None:
        pytest.skip("gcc/readelf not installed")
    header = tmp_path / "cuda.h"
    header.write_text("CUresult CUDAAPI cuInit(unsigned int Flags);\n"
                      "#define cuMemMap cuMemMap_v2\n"
                      "CUresult CUDAAPI cuMemMap(void* p);\n")
    stub = make_driver_stub(header, tmp_path / "stubs")
    dyn = subprocess.run(["readelf", "-dW", "--dyn-syms", str(stub)], capture_output=True,
                         text=True, check=True).stdout
    assert "Library soname: [libcuda.so.1]" in dyn
    for name in ("cuInit", "cuMemMap_v2", "cuMemMap"):
        assert f" {name}\n" in dyn
    bad = tmp_path / "not-cuda.h"
    bad.write_text("int x;\n")
    with pytest.raises(InputError, match="no driver API functions"):
        make_driver_stub(bad, tmp_path / "s2")


def test_stand_ins_and_a_cuda_major_mismatch_are_named(tmp_path: Path) -> None:
    from auditor.rebuild.prepare import stand_ins

    wheels = _wheels(tmp_path)
    path = _recipe(tmp_path, wheels)
    path.write_text(path.read_text().replace('role = "cuda"\n', 'role = "cuda"\n'
                                             'stands_in_for = "CUTLASS v4.0.0"\n', 1))
    recipe = load_recipe(path)
    torch = tmp_path / "tc" / "site-packages" / "torch"
    torch.mkdir(parents=True)
    (torch / "version.py").write_text("__version__ = '2.7.1+cu126'\ncuda: Optional[str] = '12.6'\n")
    found = stand_ins(recipe, "13.0.88")
    assert found[0] == "tinycuda 1.0 stands in for CUTLASS v4.0.0"
    assert "link CUDA 13's runtime" in found[1] and "built for CUDA 12.6" in found[1]
    assert stand_ins(recipe, "12.8.93") == found[:1]


def test_prepare_makes_the_recipes_placeholder_folders_non_empty(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    path = _recipe(tmp_path, wheels)
    path.write_text(path.read_text().replace('dir = "tc"\n',
                                             'dir = "tc"\nplaceholders = ["flash-attention"]\n'))
    prepare(load_recipe(path), online=True, fetch=FakeRegistry(wheels))
    folder = tmp_path / "tc" / "placeholders" / "flash-attention"
    assert [p.name for p in folder.iterdir()] == ["NOT-BUILT-FROM-HERE"]
    assert "placeholder" in (folder / "NOT-BUILT-FROM-HERE").read_text()


def test_a_placeholder_name_with_a_slash_is_a_recipe_error(tmp_path: Path) -> None:
    path = _recipe(tmp_path, _wheels(tmp_path))
    path.write_text(path.read_text().replace('dir = "tc"\n',
                                             'dir = "tc"\nplaceholders = ["../x"]\n'))
    with pytest.raises(SpecError, match="placeholders"):
        load_recipe(path)


def test_prepare_reports_progress_per_package(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path)
    seen: list[str] = []
    prepare(load_recipe(_recipe(tmp_path, wheels)), online=True, fetch=FakeRegistry(wheels),
            progress=seen.append)
    names = sorted(w.name for w, _ in wheels.values())
    assert [m.split(" ", 2)[:2] for m in seen] == [["[1/2]", "fetching"], ["[1/2]", "unpacking"],
                                                    ["[2/2]", "fetching"], ["[2/2]", "unpacking"]]
    assert names[0] in seen[0] and names[1] in seen[2]
    seen.clear()
    prepare(load_recipe(tmp_path / "recipe.toml"), online=False, progress=seen.append)
    assert seen == []  # present and unpacked: nothing to report
