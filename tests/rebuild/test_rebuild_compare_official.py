"""A rebuilt module against the official one, statically: ops, symbols, needed libraries, archs;
and where two builds differ, the first differing section and its likely cause.

Real compilers throughout: gcc for hand-built ELF files with known schema strings, the real nvcc
for the GPU code a ``.nv_fatbin`` section holds. Nothing built here is loaded or run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from buildcase import needs_nvcc

from auditor.errors import InputError
from auditor.fsutil import sha256_file
from auditor.rebuild.compare_official import (
    compare,
    compare_files,
    fatbin_archs,
    main,
    module_facts,
    registered_ops,
)
from auditor.rebuild.elf import first_difference

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

OPS_C = """\
/* the shape of TORCH_LIBRARY(_moe_C, m) { m.def("..."); }: schema strings kept in .rodata */
__attribute__((used)) static const char *schemas[] = {
  "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor gating_output) -> ()",
  "moe_sum(Tensor input, Tensor! output) -> ()",
  "moe_align_block_size(Tensor topk_ids, int num_experts,\\n"
  "                     int block_size) -> Tensor",
  SCHEMA_EXTRA
};
__attribute__((visibility("default"))) int moe_entry(void) { return 1; }
"""


def _so(tmp: Path, name: str, *, extra: str = '"not a schema -> at all"', flags: tuple[str, ...] = (),
        libs: tuple[str, ...] = ()) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(OPS_C.replace("SCHEMA_EXTRA", extra))
    out = tmp / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", *flags, "-o", str(out), str(src), *libs],
                   check=True)
    return out


@needs_gcc
def test_registered_ops_are_read_from_rodata_of_a_hand_built_elf(tmp_path: Path) -> None:
    facts = module_facts(_so(tmp_path, "a"))
    assert set(facts.ops) == {"topk_softmax", "moe_sum", "moe_align_block_size"}
    # whitespace inside a schema (vLLM's multi-line literals) is folded
    assert facts.ops["moe_align_block_size"] == ("moe_align_block_size(Tensor topk_ids, int "
                                                 "num_experts, int block_size) -> Tensor")
    assert "moe_entry" in facts.symbols and facts.fatbin is False


def test_registered_ops_ignore_strings_that_only_look_alike() -> None:
    data = b"\0".join([b"f(x) -> y", b"printf(\"%d\") -> \x01", b"no arrow(here)", b"(x) -> y",
                       b"ns::op.overload(Tensor a) -> Tensor", b""])
    assert registered_ops(data) == {"f": "f(x) -> y",
                                    "ns::op.overload": "ns::op.overload(Tensor a) -> Tensor"}


@needs_gcc
@pytest.mark.skipif(shutil.which("objcopy") is None, reason="objcopy is not installed")
def test_another_host_compiler_in_comment_is_a_difference(tmp_path: Path) -> None:
    """The official module's .comment names the compiler that built it (vLLM 0.10.0's wheel:
    "GCC: (Ubuntu 10.5.0-1ubuntu1~20.04) 10.5.0"); a rebuild by another one is a difference."""
    here = _so(tmp_path, "here")
    facts = module_facts(here)
    assert facts.compilers and all(c.startswith("GCC: ") for c in facts.compilers)
    official = tmp_path / "official.so"
    note = tmp_path / "comment.bin"
    note.write_bytes(b"\0GCC: (Ubuntu 10.5.0-1ubuntu1~20.04) 10.5.0\0")
    subprocess.run(["objcopy", "--remove-section=.comment", f"--add-section=.comment={note}",
                    str(here), str(official)], check=True)
    assert module_facts(official).compilers == ("GCC: (Ubuntu 10.5.0-1ubuntu1~20.04) 10.5.0",)
    [diff] = compare_files(official, here).differences
    assert diff == (f"was built by {', '.join(facts.compilers)}, the official module by GCC: "
                    "(Ubuntu 10.5.0-1ubuntu1~20.04) 10.5.0 (another host compiler)")
    assert compare_files(here, here).differences == ()
    assert compare_files(official, here).to_json()["official"]["compilers"] == [
        "GCC: (Ubuntu 10.5.0-1ubuntu1~20.04) 10.5.0"]


@needs_gcc
def test_comparison_names_added_missing_and_changed_ops_symbols_and_needed(tmp_path: Path) -> None:
    official = _so(tmp_path, "official")
    rebuilt = _so(tmp_path, "rebuilt", extra='"moe_sum(Tensor input, Tensor! output, int k) -> ()"',
                  libs=("-lm",), flags=("-Wl,--no-as-needed",))
    same = compare_files(official, official)
    assert same.differences == ()
    # the rebuilt copy: moe_sum gets a second schema string; the first one seen wins, so rebuild
    # a copy without the original moe_sum to see a changed schema
    src = (tmp_path / "rebuilt.c").read_text().replace(
        '  "moe_sum(Tensor input, Tensor! output) -> ()",\n', "")
    src = src.replace("int moe_entry", "int moe_entry2")
    (tmp_path / "rebuilt.c").write_text(src)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wl,--no-as-needed", "-o", str(rebuilt),
                    str(tmp_path / "rebuilt.c"), "-lm"], check=True)
    c = compare_files(official, rebuilt)
    assert c.ops_changed == ("moe_sum",)
    assert c.symbols_missing == ("moe_entry",) and c.symbols_added == ("moe_entry2",)
    assert "libm.so.6" in c.needed_added and not c.needed_missing
    text = "\n".join(c.differences)
    assert "op moe_sum has another schema" in text and "int k" in text
    assert "exports 1 fewer dynamic symbol(s) than the official module: moe_entry" in text
    assert "needs libm.so.6" in text and "(the official module does not)" in text
    assert c.to_json()["ops"]["changed"] == ["moe_sum"]


@needs_gcc
def test_a_missing_op_and_another_cuda_runtime_are_differences(tmp_path: Path) -> None:
    official = module_facts(_so(tmp_path, "o", extra='"extra_op(Tensor x) -> Tensor"'))
    rebuilt = module_facts(_so(tmp_path, "r"))
    c = compare(official, rebuilt.__class__(**{**rebuilt.__dict__,
                                              "needed": (*rebuilt.needed, "libcudart.so.13")}))
    assert c.ops_missing == ("extra_op",)
    assert any(d.startswith("registers no op extra_op of the official module's 4")
               for d in c.differences)
    assert any("links the CUDA runtime libcudart.so.13, the official module none" in d
               for d in c.differences)


def test_not_an_elf_file_is_an_input_error_naming_it(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "_moe_C.abi3.so"
    bad.write_bytes(b"MZ not an ELF")
    with pytest.raises(InputError, match="official module _moe_C.abi3.so is not a readable ELF"):
        module_facts(bad, "official module")
    assert main([str(bad), str(bad)]) == 2
    assert "is not a readable ELF file" in capsys.readouterr().err
    assert main([]) == 2


KERNEL_CU = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n'


def _nvcc(tmp: Path, name: str, gencode: list[str]) -> Path:
    src = tmp / "k.cu"
    src.write_text(KERNEL_CU)
    out = tmp / f"{name}.so"
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", *gencode, "-o", str(out), str(src)],
                   check=True, cwd=tmp)
    return out


@needs_nvcc
def test_fatbin_archs_of_real_nvcc_modules_and_the_arch_difference(tmp_path: Path) -> None:
    sm86 = _nvcc(tmp_path, "sm86", ["-gencode=arch=compute_86,code=sm_86"])
    multi = _nvcc(tmp_path, "multi", ["-gencode=arch=compute_80,code=sm_80",
                                      "-gencode=arch=compute_90,code=[sm_90,compute_90]"])
    a, b = module_facts(sm86), module_facts(multi)
    assert (a.sass, a.ptx) == ((86,), ())
    assert (b.sass, b.ptx) == ((80, 90), (90,))
    assert a.needed == b.needed  # the same toolkit: the same runtime linkage
    c = compare(b, a)
    [diff] = [d for d in c.differences if d.startswith("has GPU code")]
    assert diff == ("has GPU code for sm_86 (PTX none), the official module for sm_80, sm_90 (PTX "
                    "compute_90); sm_86 is not among the official module's cubins")
    assert fatbin_archs(b"\0" * 64) == ((), ())


@needs_gcc
def test_first_difference_names_a_timestamp(tmp_path: Path) -> None:
    src = tmp_path / "t.c"
    src.write_text('__attribute__((used)) static const char when[] = __DATE__ " " __TIME__;\n'
                   "int f(void) { return 1; }\n")
    outs = []
    for i, epoch in enumerate(("1700000000", "1700003723")):
        out = tmp_path / f"t{i}.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wno-builtin-macro-redefined", "-o",
                        str(out), str(src)], check=True,
                       env={**os.environ, "SOURCE_DATE_EPOCH": epoch})
        outs.append(out)
    first = first_difference(*outs)
    assert first["section"] == ".rodata"
    assert first["cause"].startswith("a timestamp")
    assert first_difference(outs[0], outs[0]) == {}


@needs_gcc
def test_first_difference_names_the_build_path(tmp_path: Path) -> None:
    outs = []
    for name in ("build-a", "second-build-elsewhere"):
        d = tmp_path / name
        d.mkdir()
        (d / "p.c").write_text(f'const char *where = "{d}/p.c";\nint g(void) {{ return 2; }}\n')
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "p.so"), str(d / "p.c")],
                       check=True)
        outs.append(d / "p.so")
    first = first_difference(*outs, roots=(str(tmp_path / "build-a"),
                                           str(tmp_path / "second-build-elsewhere")))
    assert first["section"] == ".rodata"
    assert first["cause"].startswith("the build path")


@needs_nvcc
def test_first_difference_of_two_unstripped_nvcc_builds_is_a_temp_name(tmp_path: Path) -> None:
    # TOOLS.md: unstripped, two nvcc builds differ in .strtab by a temp-file name with the PID
    a = _nvcc(tmp_path, "a", ["-gencode=arch=compute_86,code=sm_86"])
    b = _nvcc(tmp_path, "b", ["-gencode=arch=compute_86,code=sm_86"])
    first = first_difference(a, b)
    if not first:
        pytest.skip("this nvcc happened to give identical unstripped builds")
    assert first["section"] in (".strtab", ".symtab", ".nv_fatbin")
    assert first["cause"].startswith(("a temporary file name", "the build id"))


# ---------------------------------------------------------------- the build stage


@needs_nvcc
def test_stage_compares_each_rebuilt_module_with_the_official_one(upstream, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from buildcase import KERN_CU, make_case, make_series, run_build

    from auditor.model import Action

    kern_v2 = KERN_CU + ('extern "C" int tiny_scale_v2(float* x, int n) '
                         '{ return tiny_scale(x, 2.0f, n); }\n')
    branch = make_series(upstream, "cmp", [{"csrc/kern.cu": kern_v2}])
    result = run_build(make_case(upstream, tmp_path, branch, repro=False))
    mods = {m["name"]: m for m in result.to_json()["modules"]}
    comp = mods["kern"]["official_comparison"]
    assert comp["symbols"] == {"missing": [], "added": ["tiny_scale_v2"]}
    assert comp["rebuilt"]["sass"] == ["sm_86"] and comp["official"]["sass"] == ["sm_86"]
    assert comp["differences"] == ["exports 1 dynamic symbol(s) the official module does not: "
                                   "tiny_scale_v2"]
    assert "official_comparison" not in mods["other"]  # taken from the wheel: nothing to compare
    [f] = [f for f in result.findings if f.rule == "build.differs-from-official"]
    assert f.action is Action.REVIEW and f.path == "tinyeng/_kern.so"
    assert f.message == ("module kern: the rebuilt module exports 1 dynamic symbol(s) the "
                         "official module does not: tiny_scale_v2")
    # what the provenance's byproducts annotate the built module with
    from auditor.sbom.inputs import read_build

    [kern] = [m for m in read_build(result).modules if m.name == "kern"]
    assert kern.differs_from_official == tuple(comp["differences"])


CM_WHERE = """\
cmake_minimum_required(VERSION 3.18)
project(cm C)
include(FetchContent)
FetchContent_Declare(tinydep URL http://127.0.0.1:9/tinydep.tar.gz)
FetchContent_MakeAvailable(tinydep)
add_library(_cm SHARED cm.c)
target_include_directories(_cm PRIVATE ${tinydep_SOURCE_DIR})
target_compile_definitions(_cm PRIVATE "BUILT_IN=\\"${CMAKE_BINARY_DIR}\\"")
set_target_properties(_cm PROPERTIES PREFIX "")
"""
CM_WHERE_C = ('#include "tinydep.h"\nconst char *tiny_built_in = BUILT_IN;\n'
              "int tiny_cm(int x) { return x + TINYDEP_ONE; }\n")


def _repro_build(upstream, tmp_path: Path, sandbox: str, name: str,  # type: ignore[no-untyped-def]
                 files: dict[str, str], extra: str = ""):
    """The CMake module ``files`` built twice (repro) in the ``sandbox`` kind; a skip naming
    why where that sandbox is not usable here. (case, result)"""
    from buildcase import make_case, make_series, recipe_text, run_build

    from auditor.rebuild.sandbox import _probe

    problem = _probe(sandbox, str(tmp_path))
    if problem is not None:
        pytest.skip(f"{sandbox} not usable here: {problem}")
    branch = make_series(upstream, name, [files])
    recipe = recipe_text(upstream, extra=f'[sandbox]\nkind = "{sandbox}"\n{extra}')
    case = make_case(upstream, tmp_path, branch, repro=True, recipe=recipe)
    return case, run_build(case)


@needs_nvcc
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_stage_repro_names_the_first_differing_section_and_the_build_path(upstream,  # type: ignore[no-untyped-def]
                                                                          tmp_path: Path) -> None:
    from auditor.model import StageStatus

    # unshare runs the commands at the host paths: the two builds' folders reach the bytes
    case, result = _repro_build(upstream, tmp_path, "unshare", "where",
                                {"cmk/CMakeLists.txt": CM_WHERE, "cmk/cm.c": CM_WHERE_C},
                                extra="accept_host_files = true\n")
    assert result.to_json()["sandbox"]["build_root"] is None
    data = result.to_json()
    assert data["reproducible"] is False and result.status is StageStatus.FAILED
    cm = data["repro"]["modules"]["cm"]
    assert cm["identical"] is False
    assert cm["first_section"] == ".rodata"
    assert cm["likely_cause"].startswith("the build path")
    [reason] = [r for r in result.reasons if r.startswith("not reproducible")]
    assert "the first, .rodata: likely the build path" in reason
    # both builds are kept, outside any wheel, for a byte comparison; each is what was compared
    assert "kept in not-reproducible/ (first/, second/)" in reason
    wp = "tinyeng/_cm.so"
    assert cm["kept"] == {"first": f"not-reproducible/first/{wp}",
                          "second": f"not-reproducible/second/{wp}"}
    out = case.ctx.out_dir
    assert sha256_file(out / cm["kept"]["first"]) == cm["first"]
    assert sha256_file(out / cm["kept"]["second"]) == cm["second"]
    assert not list(out.glob("*.whl"))  # a failed build writes no wheel
    # a build folder (auditor build --out) carries both, listed in its record by sha256
    import json

    from auditor.rebuild.imported import RECORD_FILE, write_build_dir

    folder = write_build_dir(result, case.ctx, tmp_path / "build-out")
    assert folder is not None
    files = json.loads((folder / RECORD_FILE).read_text())["files"]
    assert files == {cm["kept"]["first"]: cm["first"], cm["kept"]["second"]: cm["second"]}
    assert sha256_file(folder / cm["kept"]["second"]) == cm["second"]


@needs_nvcc
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_bwrap_shows_both_builds_one_root_so_a_path_in_the_bytes_is_reproducible(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    """The same module that embeds its build folder, in bwrap: both builds (two host folders)
    are compiled at /auditor-build, so the path in the bytes is the same and the builds agree
    (nvcc hashes the source path into module ids the same way)."""
    from auditor.model import StageStatus

    case, result = _repro_build(upstream, tmp_path, "bwrap", "where-fixed",
                                {"cmk/CMakeLists.txt": CM_WHERE, "cmk/cm.c": CM_WHERE_C})
    data = result.to_json()
    assert data["sandbox"]["build_root"] == "/auditor-build"
    assert data["reproducible"] is True, result.reasons
    assert result.status is not StageStatus.FAILED
    cm = data["repro"]["modules"]["cm"]
    assert cm["identical"] is True and cm["first"] == cm["second"]
    # the compiler really saw the fixed root: the build folder in the bytes is under it
    built = next(case.ctx.workdir.glob("build-a/build/cm/out/_cm*.so"))
    assert b"/auditor-build/build/cm/cmake" in built.read_bytes()
    assert str(case.ctx.workdir).encode() not in built.read_bytes()
    assert not (case.ctx.out_dir / "not-reproducible").exists()


CM_GEN = CM_WHERE.replace(
    'target_compile_definitions(_cm PRIVATE "BUILT_IN=\\"${CMAKE_BINARY_DIR}\\"")\n', "").replace(
    "add_library(_cm SHARED cm.c)",
    '# a source written into the tree while configuring (vLLM generates its Marlin kernels so)\n'
    'file(WRITE "${CMAKE_SOURCE_DIR}/gen.c" "const char *tiny_when = __TIMESTAMP__;\\n")\n'
    "add_library(_cm SHARED cm.c gen.c)")
CM_GEN_C = '#include "tinydep.h"\nint tiny_cm(int x) { return x + TINYDEP_ONE; }\n'


@needs_nvcc
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_a_source_generated_while_configuring_gets_the_epoch_as_its_time(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    """The configure step writes gen.c into the source tree; its mtime (read by GCC's
    __TIMESTAMP__, and by nvcc for the module id of a unit that defines nothing of its own) is
    set to SOURCE_DATE_EPOCH before the build step, so both builds agree."""
    import time

    from auditor.rebuild.builders import clamp_mtimes

    assert CM_GEN != CM_WHERE and "__TIMESTAMP__" in CM_GEN and "BUILT_IN" not in CM_GEN
    case, result = _repro_build(upstream, tmp_path, "bwrap", "generated",
                                {"cmk/CMakeLists.txt": CM_GEN, "cmk/cm.c": CM_GEN_C})
    data = result.to_json()
    assert data["reproducible"] is True, result.reasons
    epoch = data["source_date_epoch"]
    gen = case.ctx.workdir / "build-a" / "src" / "cmk" / "gen.c"
    assert gen.is_file() and int(gen.stat().st_mtime) == epoch
    built = next(case.ctx.workdir.glob("build-a/build/cm/out/_cm*.so"))
    assert time.asctime(time.gmtime(epoch)).encode() in built.read_bytes()
    # the clamp itself: only what is newer than the epoch, links not followed
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "old.c").write_text("x")
    (tree / "new.c").write_text("y")
    os.utime(tree / "old.c", (epoch - 10, epoch - 10))
    (tree / "link.c").symlink_to(tree / "old.c")
    assert clamp_mtimes(tree, epoch) == 2  # new.c and the link
    assert int((tree / "old.c").stat().st_mtime) == epoch - 10
    assert int((tree / "new.c").stat().st_mtime) == epoch
    assert int(os.lstat(tree / "link.c").st_mtime) == epoch


@needs_nvcc
def test_a_module_too_big_for_this_machine_is_not_built_and_the_stage_is_incomplete(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    from buildcase import KERN_CU, make_case, make_series, recipe_text, run_build

    from auditor.model import StageStatus

    recipe = recipe_text(upstream).replace(
        'sources = ["csrc/kern.cu", "csrc/*.cuh"]\nbuilder = "nvcc"',
        'sources = ["csrc/kern.cu", "csrc/*.cuh"]\nbuilder = "nvcc"\nmin_cores = 100000')
    assert "min_cores = 100000" in recipe
    branch = make_series(upstream, "big", [{"csrc/kern.cu": KERN_CU + "// bigger\n"}])
    result = run_build(make_case(upstream, tmp_path, branch, recipe=recipe))
    assert result.status is StageStatus.INCOMPLETE
    cores = len(os.sched_getaffinity(0))
    assert result.not_checked == (
        f"module kern is not built on this machine: the recipe asks for 100000 cores to build "
        f"it, this machine has {cores}; the build is incomplete (the official binary is not "
        "used in its place, and no wheel is made)",)
    data = result.to_json()
    assert data["wheel"] is None
    assert {m["name"]: m["action"] for m in data["modules"]}["kern"] == "not-built"


@needs_nvcc
def test_a_module_the_recipe_cannot_build_is_incomplete_and_the_others_are_still_built(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    """vLLM's flash-attention modules are built from sources outside the bundle: a change that
    reaches them leaves the stage INCOMPLETE for them, while the module the series also changed
    is still compiled and compared with the official one (and no wheel is made)."""
    from buildcase import KERN_CU, OTHER_CU, make_case, make_series, recipe_text, run_build

    from auditor.model import StageStatus

    recipe = recipe_text(upstream).replace(
        'sources = ["csrc/other.cu"]\nbuilder = "nvcc"',
        'sources = ["csrc/other.cu"]\nbuilder = "nvcc"\n'
        'not_buildable = "its sources are a pinned checkout that is not in the bundle"')
    assert "not_buildable" in recipe
    branch = make_series(upstream, "both", [{"csrc/kern.cu": KERN_CU + "// changed\n",
                                             "csrc/other.cu": OTHER_CU + "// changed\n"}])
    result = run_build(make_case(upstream, tmp_path, branch, recipe=recipe))
    assert result.status is StageStatus.INCOMPLETE, result.reasons
    assert result.not_checked == (
        "module other is not built: its sources are a pinned checkout that is not in the bundle; "
        "the build is incomplete (the official binary is not used in its place, and no wheel is "
        "made)",)
    data = result.to_json()
    assert data["wheel"] is None
    modules = {m["name"]: m for m in data["modules"]}
    assert modules["other"]["action"] == "not-built"
    assert modules["kern"]["action"] == "built"
    assert modules["kern"]["commands"]  # compiled here (a comment changes no byte of it)
    assert modules["kern"]["official_comparison"] is not None


def test_an_empty_not_buildable_reason_is_a_recipe_error(tmp_path: Path) -> None:
    from auditor.errors import SpecError
    from auditor.rebuild.recipe import load_recipe

    recipe = tmp_path / "r.toml"
    recipe.write_text('engine = "e"\nversion = "1"\ntarget = "t"\narchs = ["86"]\n'
                      '[wheel]\nfile = "w.whl"\nsha256 = "' + "0" * 64 + '"\n'
                      '[toolchain]\nnvcc = "13.0"\n'
                      '[modules.m]\nwheel_path = "e/m.so"\nsources = ["m.cu"]\n'
                      'not_buildable = " "\nbuilder = "nvcc"\n[modules.m.nvcc]\n'
                      'sources = ["m.cu"]\n')
    with pytest.raises(SpecError) as exc:
        load_recipe(recipe)
    assert "not_buildable" in str(exc.value) and "empty" in str(exc.value)


def test_machine_lacks_names_cores_and_memory() -> None:
    from auditor.rebuild.recipe import BuilderKind, ModuleRecipe
    from auditor.rebuild.stage import machine_lacks

    m = ModuleRecipe(name="_C", wheel_path="vllm/_C.abi3.so", sources=("csrc/**",),
                     builder=BuilderKind.CMAKE, min_cores=16, min_memory_gb=64)
    assert machine_lacks(m, cores=2, memory_gb=23.4) == (
        "the recipe asks for 16 cores to build it, this machine has 2; the recipe asks for 64 GB "
        "of memory, this machine has 23 GB")
    assert machine_lacks(m, cores=16, memory_gb=64) == ""
    assert machine_lacks(ModuleRecipe(name="x", wheel_path="x.so", sources=("x",),
                                      builder=BuilderKind.CMAKE), cores=1, memory_gb=0) == ""


def test_the_vllm_recipe_keeps_c_off_cumem_allocator_and_marks_c_too_big() -> None:
    from auditor.rebuild.globs import match_any
    from auditor.rebuild.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parents[2] / "builds" / "vllm-0.10.0-sm86.toml")
    mods = {m.name: m for m in recipe.modules}
    c = mods["_C"]
    assert match_any("csrc/cumem_allocator.cpp", c.sources)
    assert match_any("csrc/cumem_allocator.cpp", c.exclude)
    assert c.min_cores > 2 and mods["_moe_C"].min_cores == 0
    # the modules built from FetchContent checkouts (not in the bundle) say so; the others can
    assert {m for m in mods if mods[m].not_buildable} == {"_flashmla_C", "_vllm_fa2_C",
                                                          "_vllm_fa3_C"}
    assert recipe.toolchain.placeholders == ("flash-attention", "flashmla")
