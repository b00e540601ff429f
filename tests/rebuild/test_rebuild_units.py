"""The build's pieces on their own: recipe validation, globs, the wheel writer and reader, ELF, sandbox."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from auditor.errors import InputError, SpecError
from auditor.rebuild.globs import is_native, matches
from auditor.rebuild.plan import wheel_path_for
from auditor.rebuild.recipe import BuilderKind, SandboxKind, load_recipe
from auditor.rebuild.wheel import (
    WheelName,
    record_problems,
    unpack_wheel,
    with_local_label,
    write_wheel,
)

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
engine = "tinyeng"
version = "1.0.0"
target = "sm86"
archs = ["86", "8.9+PTX"]

[wheel]
file = "wheels/tinyeng-1.0.0-py3-none-linux_x86_64.whl"
sha256 = "{sha}"

[toolchain]
nvcc = "13.0"

[sandbox]
readable = ["toolchains"]

[env]
MAX_JOBS = "2"

[modules.kern]
wheel_path = "tinyeng/_kern.so"
sources = ["csrc/**"]
builder = "nvcc"
[modules.kern.nvcc]
sources = ["csrc/kern.cu"]
extra_include_dirs = ["include"]

[modules.big]
wheel_path = "tinyeng/_big.so"
sources = ["cmk/**"]
builder = "cmake"
[modules.big.cmake]
source_dir = "cmk"
target = "_big"
output = "**/_big.so"
[modules.big.cmake.fetchcontent]
cutlass = "third_party/cutlass"
"""


@pytest.fixture
def recipe_dir(tmp_path: Path) -> Path:
    for d in ("wheels", "toolchains", "include", "third_party/cutlass"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "wheels/tinyeng-1.0.0-py3-none-linux_x86_64.whl").write_bytes(b"x")
    return tmp_path


def _write(d: Path, text: str) -> Path:
    p = d / "r.toml"
    p.write_text(text.replace("{sha}", "a" * 64))
    return p


def test_recipe_loads_and_resolves_host_paths_against_its_folder(recipe_dir: Path) -> None:
    r = load_recipe(_write(recipe_dir, GOOD))
    assert r.wheel.file == recipe_dir / "wheels/tinyeng-1.0.0-py3-none-linux_x86_64.whl"
    assert r.sandbox.readable == (recipe_dir / "toolchains",) and r.sandbox.kind is SandboxKind.AUTO
    kern, big = r.modules
    assert kern.builder is BuilderKind.NVCC and kern.nvcc is not None
    assert kern.nvcc.extra_include_dirs == (recipe_dir / "include",)
    assert big.cmake is not None and big.cmake.fetchcontent == {
        "cutlass": recipe_dir / "third_party/cutlass"}
    assert big.cmake.source_dir == "cmk" and r.env == {"MAX_JOBS": "2"}
    assert r.archs == ("86", "8.9+PTX")


@pytest.mark.parametrize("edit, key", [
    (("[toolchain]", "[toolchain]\ncolour = 1"), "toolchain.colour"),
    (('target = "sm86"', 'target = "sm86"\nflavour = "x"'), "flavour"),
    (('nvcc = "13.0"', "nvcc = 13"), "toolchain.nvcc"),
    (('archs = ["86", "8.9+PTX"]', 'archs = "86"'), "archs"),
    (('archs = ["86", "8.9+PTX"]', 'archs = ["sm_86"]'), "archs[0]"),
    (('builder = "nvcc"', 'builder = "bazel"'), "modules.kern.builder"),
    (('target = "_big"', 'target = "_big"\nurl = "https://x"'), "modules.big.cmake.url"),
    (('sources = ["csrc/kern.cu"]', 'sources = ["../etc/passwd"]'), "modules.kern.nvcc.sources"),
    (('cutlass = "third_party/cutlass"', 'cutlass = "nowhere"'),
     "modules.big.cmake.fetchcontent.cutlass"),
    (('sha256 = "{sha}"', 'sha256 = "abc"'), "wheel.sha256"),
    (('[modules.kern.nvcc]', '[modules.kern.cmake]\ntarget = "x"\noutput = "y"\n[modules.kern.nvcc]'),
     "modules.kern.cmake"),
    (('kind = "auto"' if False else '[sandbox]', '[sandbox]\nkind = "docker"'), "sandbox.kind"),
    (('MAX_JOBS = "2"', "MAX_JOBS = 2"), "env.MAX_JOBS"),
])
def test_recipe_errors_name_file_and_key(recipe_dir: Path, edit: tuple[str, str], key: str) -> None:
    old, new = edit
    assert old in GOOD
    path = _write(recipe_dir, GOOD.replace(old, new, 1))
    with pytest.raises(SpecError) as info:
        load_recipe(path)
    assert info.value.key == key and info.value.file == str(path)


def test_shipped_vllm_recipe_is_valid() -> None:
    """builds/vllm-0.30.0-sm86.toml parses as it is (its toolchain folder need not exist yet)."""
    r = load_recipe(REPO / "builds/vllm-0.30.0-sm86.toml")
    names = {m.name for m in r.modules}
    assert {"_C_stable_libtorch", "_moe_C_stable_libtorch", "cumem_allocator",
            "_vllm_fa2_C"} <= names
    assert all(m.builder is BuilderKind.CMAKE for m in r.modules)
    assert r.wheel.requirement == "vllm==0.30.0" and r.wheel.file is None
    assert r.sandbox.readable == () and r.toolchain.packages


@pytest.mark.parametrize("path, pattern, expected", [
    ("csrc/a/b/x.cu", "*.cu", True),
    ("csrc/a/b/x.cu", "csrc/**", True),
    ("csrc/x.cu", "csrc/**/x.cu", True),
    ("csrc/a/x.cu", "csrc/*.cu", False),
    ("other/csrc/x.cu", "csrc/**", False),
    ("cmake/utils.cmake", "cmake/**", True),
    ("x/CMakeLists.txt", "CMakeLists.txt", True),
    ("tinyeng/server.py", "*.cu", False),
])
def test_globs(path: str, pattern: str, expected: bool) -> None:
    assert matches(path, pattern) is expected


def test_native_by_extension_or_profile() -> None:
    assert is_native("extra/evil.cu") and is_native("a/CMakeLists.txt")
    assert not is_native("tinyeng/server.py")
    assert is_native("kernels/gen.py", ["kernels/**"])


def test_bundle_to_wheel_path_rule() -> None:
    assert wheel_path_for("vllm/x.py", "", ["vllm"]) == "vllm/x.py"
    assert wheel_path_for("python/sglang/x.py", "python", ["sglang"]) == "sglang/x.py"
    assert wheel_path_for("tests/x.py", "", ["vllm"]) is None
    assert wheel_path_for("setup.py", "", ["vllm"]) is None
    assert wheel_path_for("sglang/x.py", "python", ["sglang"]) is None


def test_write_wheel_is_deterministic_and_valid(tmp_path: Path) -> None:
    files = {"pkg/b.py": b"B = 1\n", "pkg/a.py": b"A = 1\n", "pkg/run": (b"#!/bin/sh\n", 0o700)}
    w1 = write_wheel(tmp_path / "one", "My.Pkg", "1.0", files, epoch=1_700_000_000)
    w2 = write_wheel(tmp_path / "two", "My.Pkg", "1.0", dict(reversed(files.items())),
                     epoch=1_700_000_000)
    assert w1.name == "my_pkg-1.0-py3-none-linux_x86_64.whl"
    assert w1.read_bytes() == w2.read_bytes()
    zf = zipfile.ZipFile(w1)
    names = zf.namelist()
    assert names[:3] == ["pkg/a.py", "pkg/b.py", "pkg/run"]
    assert names[-1] == "my_pkg-1.0.dist-info/RECORD"
    modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
    assert modes["pkg/run"] == 0o755 and modes["pkg/a.py"] == 0o644
    assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}
    u = unpack_wheel(w1, tmp_path / "u")
    assert record_problems(u) == []
    assert "Version: 1.0" in (u.root / "my_pkg-1.0.dist-info/METADATA").read_text()


def _rewrite(src: Path, dest: Path, change) -> Path:
    zin = zipfile.ZipFile(src)
    with zipfile.ZipFile(dest, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info, data)
    return dest


def test_record_problems_name_each_path(tmp_path: Path) -> None:
    w = write_wheel(tmp_path, "p", "1", {"p/a.py": b"a", "p/b.py": b"b"})
    dest = tmp_path / "bad" / w.name
    dest.parent.mkdir()

    def change(name: str, data: bytes) -> bytes | None:
        if name == "p/b.py":
            return None  # listed in RECORD, absent from the wheel
        if name == "p/a.py":
            return b"A"  # same size, other bytes
        return data

    _rewrite(w, dest, change)
    with zipfile.ZipFile(dest, "a") as zf:
        zf.writestr("p/extra.py", b"x")
    problems = record_problems(unpack_wheel(dest, tmp_path / "u"))
    assert problems == ["p/a.py: sha256 differs from RECORD", "p/extra.py: not listed in RECORD",
                        "p/b.py: listed in RECORD but not in the wheel"]


@pytest.mark.parametrize("name", ["../evil.py", "/abs.py", "a\\b.py"])
def test_unsafe_member_paths_are_input_errors(tmp_path: Path, name: str) -> None:
    w = tmp_path / "p-1-py3-none-any.whl"
    with zipfile.ZipFile(w, "w") as zf:
        zf.writestr(name, b"x")
    with pytest.raises(InputError, match="unsafe path"):
        unpack_wheel(w, tmp_path / "u")


def test_bad_zip_and_huge_member_are_input_errors(tmp_path: Path) -> None:
    bad = tmp_path / "p-1-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a readable zip"):
        unpack_wheel(bad, tmp_path / "u1")
    w = write_wheel(tmp_path / "w", "p", "1", {"p/big.bin": b"\0" * 5000})
    with pytest.raises(InputError, match="more than the limit 4096"):
        unpack_wheel(w, tmp_path / "u2", max_member_bytes=4096)
    with pytest.raises(InputError, match="not a wheel file name"):
        unpack_wheel(tmp_path / "nonsense.zip", tmp_path / "u3")


def test_wheel_names_and_local_labels() -> None:
    wn = WheelName.parse("vllm-0.30.0-cp38-abi3-manylinux1_x86_64.whl")
    assert (wn.name, wn.version, wn.tag) == ("vllm", "0.30.0", "cp38-abi3-manylinux1_x86_64")
    assert with_local_label("0.30.0", "audited.abc") == "0.30.0+audited.abc"
    assert with_local_label("0.30.0+cu126", "audited.abc") == "0.30.0+cu126.audited.abc"
    assert WheelName(wn.name, "0.30.0+audited.abc", None, wn.tag).dist_info == \
        "vllm-0.30.0+audited.abc.dist-info"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_elf_symbols_and_section_differences(tmp_path: Path) -> None:
    import subprocess

    from auditor.rebuild.elf import exported_symbols, section_differences

    def so(name: str, code: str) -> Path:
        src = tmp_path / f"{name}.c"
        src.write_text(code)
        out = tmp_path / f"{name}.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(out), str(src)], check=True)
        return out

    a = so("a", "int f(void) { return 1; }\nstatic int hidden(void) { return 2; }\n"
                "int g(void) { return hidden(); }\n")
    b = so("b", 'int f(void) { return 1; }\nconst char* s(void) { return "different"; }\n')
    assert {"f", "g"} <= exported_symbols(a) and "hidden" not in exported_symbols(a)
    assert section_differences(a, a) == []
    diffs = section_differences(a, b)
    assert ".text" in diffs and ".dynsym" in diffs
    not_elf = tmp_path / "x.so"
    not_elf.write_bytes(b"nope")
    with pytest.raises(InputError, match="not a readable ELF"):
        exported_symbols(not_elf)


def test_sandbox_has_no_network_but_loopback(tmp_path: Path) -> None:
    from auditor.errors import ToolMissing
    from auditor.rebuild.sandbox import network_interfaces, select_sandbox

    try:
        sandbox = select_sandbox(SandboxKind.AUTO, tmp_path)
    except ToolMissing as exc:
        pytest.skip(str(exc))
    assert network_interfaces(sandbox, tmp_path) == ["lo"]
    res = sandbox.run(["/usr/bin/env"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "A": "1"},
                      writable=[tmp_path])
    env_lines = sorted(line.split("=", 1)[0] for line in res.stdout.splitlines())
    assert "A" in env_lines and "HOME" not in env_lines


def test_toolchain_differences_are_reported() -> None:
    from auditor.rebuild.recipe import ToolchainRecipe
    from auditor.rebuild.toolchain import Toolchain, compare

    tc = Toolchain(nvcc="/x/nvcc", cc="/x/gcc", cxx="/x/g++", strip="/x/strip",
                   nvcc_version="13.0.88", cc_version="gcc 12.2.0")
    want = ToolchainRecipe(nvcc="13.0", cc_version="12.2", nvcc_path="nvcc", cc="gcc",
                           cxx="g++", strip="strip", cmake="cmake")
    assert compare(want, tc) == []
    other = ToolchainRecipe(nvcc="12.4", cc_version="11", nvcc_path="nvcc", cc="gcc", cxx="g++",
                            strip="strip", cmake="cmake")
    assert compare(other, tc) == ["nvcc 13.0.88 here, the recipe expects 12.4",
                                  "host compiler gcc 12.2.0 here, the recipe expects 11"]
    assert compare(ToolchainRecipe(nvcc="13.0.8", cc_version=None, nvcc_path="", cc="", cxx="",
                                   strip="", cmake=""), tc)  # 13.0.8 is not a prefix of 13.0.88


def test_export_build_returns_none_without_a_wheel(tmp_path: Path) -> None:
    from typed_results import build_data

    from auditor.model import StageResult, StageStatus
    from auditor.rebuild.stage import export_build

    failed = StageResult("build", StageStatus.FAILED, build_data(),
                         reasons=("official wheel sha256 differs",))
    assert export_build(failed, None, tmp_path / "out") is None  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()
