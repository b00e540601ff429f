"""Reading vLLM-shaped CMake code: extension targets, what a CMakeLists change reaches, the plan.

The CMakeLists here is written for the tests with the shapes of vLLM 0.10.0's own (a source list
per target, ``list(APPEND ...)`` inside ``if`` blocks, an arch list intersected with the
requested archs, ``set_gencode_flags_for_srcs``, ``define_gpu_extension_target``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from buildcase import Upstream, make_series, workspace_for
from support import GitRepo, export_tree

from auditor.rebuild.archs import unsupported
from auditor.rebuild.cmakelists import CMakeSyntaxError, change_effect, extension_targets, parse
from auditor.rebuild.plan import ModuleAction, make_plan
from auditor.rebuild.recipe import load_recipe

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.26)
project(eng LANGUAGES CXX)
include(${CMAKE_CURRENT_LIST_DIR}/cmake/utils.cmake)
set(CUDA_SUPPORTED_ARCHS "7.5;8.0;8.6;8.9;9.0")
cuda_archs_loose_intersection(CUDA_ARCHS "${CUDA_SUPPORTED_ARCHS}" "${CUDA_ARCHS}")

set(EXT_CUMEM_SRC
  "csrc/cumem_allocator.cpp")
set_gencode_flags_for_srcs(SRCS "${EXT_CUMEM_SRC}" CUDA_ARCHS "${CUDA_ARCHS}")
if(VLLM_GPU_LANG STREQUAL "CUDA")
  message(STATUS "Enabling cumem allocator extension.")
  define_gpu_extension_target(
    cumem_allocator
    DESTINATION vllm
    LANGUAGE CXX
    SOURCES ${EXT_CUMEM_SRC}
    USE_SABI 3.8
    WITH_SOABI)
endif()

set(EXT_SRC
  "csrc/cache_kernels.cu"
  "csrc/torch_bindings.cpp")  # a comment (with parentheses)
if(VLLM_GPU_LANG STREQUAL "CUDA")
  list(APPEND EXT_SRC "csrc/quantization/gptq/q_gemm.cu")
endif()
set_gencode_flags_for_srcs(SRCS "${EXT_SRC}" CUDA_ARCHS "${CUDA_ARCHS}")
define_gpu_extension_target(
  _C
  DESTINATION vllm
  LANGUAGE ${VLLM_GPU_LANG}
  SOURCES ${EXT_SRC}
  COMPILE_FLAGS ${VLLM_GPU_FLAGS}
  USE_SABI 3
  WITH_SOABI)

set(MOE_EXT_SRC
  "csrc/moe/torch_bindings.cpp"
  "csrc/moe/topk_softmax_kernels.cu")
if(VLLM_GPU_LANG STREQUAL "CUDA")
  list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu")
endif()
set_gencode_flags_for_srcs(SRCS "${MOE_EXT_SRC}" CUDA_ARCHS "${CUDA_ARCHS}")
define_gpu_extension_target(
  _moe_C
  DESTINATION vllm
  LANGUAGE ${VLLM_GPU_LANG}
  SOURCES ${MOE_EXT_SRC}
  USE_SABI 3
  WITH_SOABI)

if(VLLM_GPU_LANG STREQUAL "HIP")
  define_gpu_extension_target(
    _rocm_C
    DESTINATION vllm
    LANGUAGE ${VLLM_GPU_LANG}
    SOURCES csrc/rocm/attention.cu
    WITH_SOABI)
endif()
"""

UTILS = """\
function(define_gpu_extension_target GPU_MOD_NAME)
  cmake_parse_arguments(PARSE_ARGV 1 GPU "WITH_SOABI" "DESTINATION;LANGUAGE;USE_SABI" "SOURCES")
  Python_add_library(${GPU_MOD_NAME} MODULE "${GPU_SOURCES}")
endfunction()
"""


def _effect(old: str, new: str):  # type: ignore[no-untyped-def]
    assert old != new
    return change_effect("CMakeLists.txt", CMAKELISTS.replace(old, old), CMAKELISTS.replace(old, new))


# ------------------------------------------------------------ the reader


def test_parse_reads_commands_arguments_and_lines() -> None:
    cmds = parse(CMAKELISTS)
    assert cmds[0].name == "cmake_minimum_required" and cmds[0].line == 1
    ext = next(c for c in cmds if c.name == "set" and c.args[0] == "EXT_SRC")
    assert ext.args == ("EXT_SRC", "csrc/cache_kernels.cu", "csrc/torch_bindings.cpp")
    assert ext.line == 21
    assert extension_targets(cmds) == {"cumem_allocator": 12, "_C": 28, "_moe_C": 44,
                                       "_rocm_C": 53}


def test_parse_handles_brackets_escapes_and_nested_parentheses() -> None:
    cmds = parse('#[[ a bracket\ncomment ]]\nset(A [=[raw ) text]=] "q \\" )" (x y))\nfoo()\n')
    assert [c.name for c in cmds] == ["set", "foo"]
    assert cmds[0].args == ("A", "raw ) text", 'q \\" )', "(", "x", "y", ")")
    assert cmds[0].line == 3 and cmds[1].line == 4


@pytest.mark.parametrize("text", ["set(A", 'set(A "b)', "set(A [[x)", "#[[ open", "set A"])
def test_parse_rejects_broken_cmake(text: str) -> None:
    with pytest.raises(CMakeSyntaxError):
        parse(text)


# ------------------------------------------------------------ what a change reaches


def test_a_change_to_one_source_list_reaches_only_that_target() -> None:
    e = _effect('list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu")',
                'list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu" "csrc/moe/new.cu")')
    assert e.targets == {"_moe_C"} and not e.everything
    assert any("list(APPEND MOE_EXT_SRC" in w and w.endswith("_moe_C") for w in e.why("_moe_C"))
    e2 = _effect('"csrc/cumem_allocator.cpp")', '"csrc/cumem_allocator.cpp" "csrc/x.cpp")')
    assert e2.targets == {"cumem_allocator"} and not e2.everything


def test_a_flag_change_in_a_definition_reaches_that_target() -> None:
    e = _effect("  SOURCES ${EXT_SRC}\n", "  SOURCES ${EXT_SRC}\n  COMPILE_FLAGS -O0\n")
    assert e.targets == {"_C"} and not e.everything


def test_an_arch_list_change_is_named_and_reaches_the_gpu_targets() -> None:
    e = _effect('set(CUDA_SUPPORTED_ARCHS "7.5;8.0;8.6;8.9;9.0")',
                'set(CUDA_SUPPORTED_ARCHS "6.0;7.0;8.0;8.6;8.9;9.0")')
    assert e.arch_changes == ("CUDA_SUPPORTED_ARCHS: added 6.0, 7.0; removed 7.5",)
    assert e.targets == {"cumem_allocator", "_C", "_moe_C"} and not e.everything


def test_a_message_change_has_no_build_effect() -> None:
    e = _effect('"Enabling cumem allocator extension."', '"cumem on"')
    assert e.targets == set() and not e.everything
    assert e.reasons[0].text.endswith("no build effect")


@pytest.mark.parametrize(("old", "new"), [
    ('if(VLLM_GPU_LANG STREQUAL "HIP")', 'if(VLLM_GPU_LANG STREQUAL "CUDA")'),  # a condition
    ("project(eng LANGUAGES CXX)", "project(eng LANGUAGES CXX)\nadd_compile_options(-O0)"),
    ('set(CUDA_SUPPORTED_ARCHS "7.5;8.0;8.6;8.9;9.0")',  # a variable no target reads
     'set(CUDA_SUPPORTED_ARCHS "7.5;8.0;8.6;8.9;9.0")\nset(UNUSED 1)'),
])
def test_an_untraced_change_reaches_every_target(old: str, new: str) -> None:
    e = _effect(old, new)
    assert e.everything
    assert any(r.everything for r in e.reasons)


def test_a_change_inside_a_function_body_reaches_every_target() -> None:
    e = change_effect("cmake/utils.cmake", UTILS, UTILS.replace("MODULE", "SHARED"))
    assert e.everything and "function definition" in e.reasons[0].text


def test_an_unreadable_version_reaches_every_target() -> None:
    e = change_effect("CMakeLists.txt", CMAKELISTS, CMAKELISTS + "set(BROKEN\n")
    assert e.everything and "cannot be read as CMake" in e.reasons[0].text


# ------------------------------------------------------------ archs


def test_archs_nvcc_13_cannot_target_pascal_or_volta_and_names_who_can() -> None:
    problems = unsupported("13.0.88", ("6.0", "7.0", "7.5", "8.6", "90a", "12.0"))
    assert [p.arch for p in problems] == ["6.0", "7.0"]
    assert "sm_70 (Volta)" in problems[1].message and "CUDA 9.0 to 12.9 can" in problems[1].message
    assert unsupported("12.4", ("7.0",)) == []
    too_new = unsupported("12.4", ("10.0",))
    assert "needs CUDA 12.8 or newer" in too_new[0].message
    assert unsupported("13.0", ("99",))[0].message.startswith("sm_99: not known")


# ------------------------------------------------------------ the plan on a vLLM-shaped bundle

RECIPE = """\
engine = "eng"
version = "1.0.0"
target = "sm86"
archs = ["8.6"]
[wheel]
file = "official.whl"
sha256 = "{zero}"
{not_built}
[modules.cumem_allocator]
wheel_path = "vllm/cumem_allocator.abi3.so"
sources = ["csrc/cumem_allocator.cpp"]
builder = "cmake"
[modules.cumem_allocator.cmake]
target = "cumem_allocator"
output = "cumem_allocator.abi3.so"

[modules._C]
wheel_path = "vllm/_C.abi3.so"
sources = ["csrc/*.cu", "csrc/*.cpp", "csrc/quantization/**", "CMakeLists.txt"]
exclude = ["csrc/cumem_allocator.cpp"]
builder = "cmake"
[modules._C.cmake]
target = "_C"
output = "_C.abi3.so"

[modules._moe_C]
wheel_path = "vllm/_moe_C.abi3.so"
sources = ["csrc/moe/**"]
builder = "cmake"
[modules._moe_C.cmake]
target = "_moe_C"
output = "_moe_C.abi3.so"
"""

FILES = {
    "CMakeLists.txt": CMAKELISTS, "cmake/utils.cmake": UTILS,
    "csrc/cumem_allocator.cpp": "int cumem;\n", "csrc/cache_kernels.cu": "int cache;\n",
    "csrc/torch_bindings.cpp": "int b;\n", "csrc/quantization/gptq/q_gemm.cu": "int q;\n",
    "csrc/moe/torch_bindings.cpp": "int mb;\n", "csrc/moe/topk_softmax_kernels.cu": "int t;\n",
    "csrc/moe/moe_wna16.cu": "int w;\n", "csrc/rocm/attention.cu": "int r;\n",
    "vllm/__init__.py": "",
}


def vllm_shaped_engine(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    """An engine repository of :data:`FILES`, tagged v1.0.0 (no wheel: plans only)."""
    root = tmp_path_factory.mktemp("vllm-shaped")
    repo = GitRepo(root / "engine")
    repo.commit("engine 1.0.0", files=FILES)
    repo.tag("v1.0.0")
    return Upstream(repo=repo, wheel=root / "official.whl", sha256="0" * 64, deps=root, root=root)


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    return vllm_shaped_engine(tmp_path_factory)


def _plan(eng: Upstream, tmp: Path, change: dict[str, str | bytes | None], *,
          not_built: str = '[targets_not_built]\n_rocm_C = "ROCm only"\n'):  # type: ignore[no-untyped-def]
    branch = make_series(eng, "s", [change])
    bundle = export_tree(eng.repo, branch, tmp / "bundle")
    ws = workspace_for(eng, branch, bundle)
    (tmp / "recipe.toml").write_text(RECIPE.format(zero="0" * 64, not_built=not_built))
    (tmp / "official.whl").write_bytes(b"")
    plan = make_plan(ws, load_recipe(tmp / "recipe.toml"), ())
    return plan, {d.module.name: d for d in plan.decisions}


def test_plan_one_cu_file_of_one_module_rebuilds_that_module_only(eng: Upstream,
                                                                   tmp_path: Path) -> None:
    plan, d = _plan(eng, tmp_path, {"csrc/moe/moe_wna16.cu": "int w2;\n"})
    assert [x.module.name for x in plan.to_build] == ["_moe_C"]
    assert d["_moe_C"].changed == ("csrc/moe/moe_wna16.cu",)
    assert d["_C"].action is ModuleAction.OFFICIAL and not plan.unclaimed_native
    assert plan.unlisted_targets == ()


def test_plan_exclude_keeps_a_broad_glob_off_another_modules_source(eng: Upstream,
                                                                     tmp_path: Path) -> None:
    # _C's csrc/*.cpp matches csrc/cumem_allocator.cpp too; its exclude leaves it to cumem_allocator
    plan, d = _plan(eng, tmp_path, {"csrc/cumem_allocator.cpp": "int cumem2;\n"})
    assert [x.module.name for x in plan.to_build] == ["cumem_allocator"]
    assert d["_C"].action is ModuleAction.OFFICIAL and not plan.unclaimed_native


def test_plan_cmakelists_change_rebuilds_only_the_target_it_reaches(eng: Upstream,
                                                                     tmp_path: Path) -> None:
    # _C's globs claim CMakeLists.txt, but the CMake reader decides: only _moe_C is reached
    new = CMAKELISTS.replace('list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu")',
                             'list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu" "csrc/moe/x.cu")')
    plan, d = _plan(eng, tmp_path, {"CMakeLists.txt": new, "csrc/moe/x.cu": "int x;\n"})
    assert [x.module.name for x in plan.to_build] == ["_moe_C"]
    assert d["_moe_C"].changed == ("CMakeLists.txt", "csrc/moe/x.cu")
    assert any("CMakeLists.txt:41: list(APPEND MOE_EXT_SRC" in w for w in d["_moe_C"].why)
    assert not plan.unclaimed_native


def test_plan_arch_list_change_is_noted(eng: Upstream, tmp_path: Path) -> None:
    new = CMAKELISTS.replace('"7.5;8.0;8.6;8.9;9.0"', '"7.0;7.5;8.0;8.6;8.9;9.0"')
    plan, _ = _plan(eng, tmp_path, {"CMakeLists.txt": new})
    assert {x.module.name for x in plan.to_build} == {"cumem_allocator", "_C", "_moe_C"}
    assert plan.cmake_notes == ("CMakeLists.txt: CUDA_SUPPORTED_ARCHS: added 7.0",)


def test_plan_message_only_change_rebuilds_nothing_and_is_claimed(eng: Upstream,
                                                                   tmp_path: Path) -> None:
    new = CMAKELISTS.replace('"Enabling cumem allocator extension."', '"cumem"')
    plan, _ = _plan(eng, tmp_path, {"CMakeLists.txt": new})
    assert plan.to_build == () and not plan.unclaimed_native
    assert plan.cmake_notes and plan.cmake_notes[0].endswith("no build effect")


def test_plan_utils_change_rebuilds_every_cmake_module(eng: Upstream, tmp_path: Path) -> None:
    plan, _ = _plan(eng, tmp_path, {"cmake/utils.cmake": UTILS.replace("MODULE", "SHARED")})
    assert {x.module.name for x in plan.to_build} == {"cumem_allocator", "_C", "_moe_C"}


def test_plan_names_a_target_the_recipe_omits(eng: Upstream, tmp_path: Path) -> None:
    plan, _ = _plan(eng, tmp_path, {"csrc/moe/moe_wna16.cu": "int w3;\n"}, not_built="")
    assert len(plan.unlisted_targets) == 1
    msg = plan.unlisted_targets[0]
    assert "extension target _rocm_C (CMakeLists.txt:53)" in msg
    assert "[targets_not_built]" in msg


def test_plan_names_a_target_a_series_adds_in_a_cmake_file(eng: Upstream, tmp_path: Path) -> None:
    extra = "define_gpu_extension_target(\n  _extra_C\n  SOURCES csrc/extra.cu)\n"
    plan, _ = _plan(eng, tmp_path, {"cmake/extra.cmake": extra})
    assert [m for m in plan.unlisted_targets if "_extra_C (cmake/extra.cmake:1)" in m]
    # an added CMake file reaches everything
    assert {x.module.name for x in plan.to_build} == {"cumem_allocator", "_C", "_moe_C"}
