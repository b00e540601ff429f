"""builds/vllm-0.30.0-sm86.toml: the pinned-toolchain recipe for vLLM 0.30.0, checked offline.

vLLM 0.30.0 declares its extension modules with ``define_extension_target`` (0.10.0:
``define_gpu_extension_target``), its CUDA ops moved to ``_C_stable_libtorch`` and
``_moe_C_stable_libtorch`` (``_C`` is ROCm/CPU only), and several FetchContent projects define
targets in ``cmake/external_projects/*.cmake``. The CMake code here is written for the test in
those shapes (no sdist is read); the recipe must build or excuse every target it defines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.errors import SpecError
from auditor.rebuild.cmakelists import change_effect, targets_of_files
from auditor.rebuild.globs import is_native, match_any
from auditor.rebuild.prepare import make_placeholders, pip_requirement
from auditor.rebuild.recipe import BuilderKind, ToolchainPackage, load_recipe

RECIPE = Path(__file__).resolve().parents[2] / "builds" / "vllm-0.30.0-sm86.toml"

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.26)
project(vllm_extensions LANGUAGES CXX)
include(${CMAKE_CURRENT_LIST_DIR}/cmake/utils.cmake)
set(TORCH_SUPPORTED_VERSION_CUDA "2.13.0")
if(Python_VERSION VERSION_GREATER_EQUAL "3.11")
  set(VLLM_SPINLOOP_EXT_SRC "csrc/spinloop.cpp")
  define_extension_target(
    spinloop
    DESTINATION vllm
    LANGUAGE CXX
    SOURCES ${VLLM_SPINLOOP_EXT_SRC}
    USE_SABI 3.11
    WITH_SOABI)
endif()
if(Python_VERSION VERSION_GREATER_EQUAL "3.11")
  define_extension_target(fs_io_C DESTINATION vllm LANGUAGE CXX SOURCES csrc/fs_io.cpp
    USE_SABI 3.11 WITH_SOABI)
endif()
if (NOT VLLM_TARGET_DEVICE STREQUAL "cuda" AND NOT VLLM_TARGET_DEVICE STREQUAL "rocm")
  include(${CMAKE_CURRENT_LIST_DIR}/cmake/cpu_extension.cmake)
  return()
endif()
set(VLLM_CUMEM_EXT_SRC
  "csrc/cumem_allocator.cpp")
if(VLLM_GPU_LANG STREQUAL "CUDA" OR VLLM_GPU_LANG STREQUAL "HIP")
  list(APPEND CUMEM_LIBS CUDA::cuda_driver)
  define_extension_target(cumem_allocator DESTINATION vllm LANGUAGE CXX
    SOURCES ${VLLM_CUMEM_EXT_SRC} LIBRARIES ${CUMEM_LIBS} USE_SABI 3.8 WITH_SOABI)
endif()
if(VLLM_GPU_LANG STREQUAL "HIP")
  set(VLLM_EXT_SRC "csrc/torch_bindings.cpp" "csrc/custom_quickreduce.cu")
  define_extension_target(_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
    SOURCES ${VLLM_EXT_SRC} USE_SABI 3 WITH_SOABI)
endif()
set(VLLM_STABLE_EXT_SRC
  "csrc/libtorch_stable/torch_bindings.cpp"
  "csrc/libtorch_stable/activation_kernels.cu")
set(CUTLASS_REVISION "v4.7.1")
define_extension_target(_C_stable_libtorch DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
  SOURCES ${VLLM_STABLE_EXT_SRC} COMPILE_FLAGS ${VLLM_GPU_FLAGS} USE_SABI 3 WITH_SOABI)
set(VLLM_MOE_EXT_SRC
  "csrc/libtorch_stable/moe/torch_bindings.cpp"
  "csrc/libtorch_stable/moe/topk_softmax_kernels.cu")
define_extension_target(
  _moe_C_stable_libtorch
  DESTINATION vllm
  LANGUAGE ${VLLM_GPU_LANG}
  SOURCES ${VLLM_MOE_EXT_SRC}
  USE_SABI 3
  WITH_SOABI)
if(VLLM_GPU_LANG STREQUAL "HIP")
  define_extension_target(_rocm_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
    SOURCES csrc/rocm/torch_bindings.cpp USE_SABI 3 WITH_SOABI)
endif()
if (VLLM_GPU_LANG STREQUAL "CUDA")
  include(cmake/external_projects/flashmla.cmake)
  include(cmake/external_projects/vllm_flash_attn.cmake)
endif()
"""

EXTERNAL = {
    "cmake/external_projects/flashmla.cmake": """\
FetchContent_MakeAvailable(flashmla)
file(READ "${flashmla_SOURCE_DIR}/flash_mla/flash_mla_interface.py" FLASHMLA_INTERFACE_CONTENT)
cuda_archs_loose_intersection(FLASH_MLA_ARCHS "9.0a;10.0f" "${CUDA_ARCHS}")
if(FLASH_MLA_ARCHS)
    define_extension_target(_flashmla_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
        SOURCES ${FlashMLA_SOURCES} USE_SABI 3 WITH_SOABI)
    define_extension_target(_flashmla_extension_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
        SOURCES ${FlashMLA_Extension_SOURCES} USE_SABI 3 WITH_SOABI)
else()
    add_custom_target(_flashmla_C)
    add_custom_target(_flashmla_extension_C)
endif()
""",
    "cmake/external_projects/deepselect.cmake": """\
if(DEEPSELECT_ARCHS)
    define_extension_target(_deepselect_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
        SOURCES ${DeepSelect_SOURCES} USE_SABI 3 WITH_SOABI)
endif()
""",
    "cmake/external_projects/qutlass.cmake": """\
if(QUTLASS_ARCHS)
  define_extension_target(_qutlass_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
    SOURCES ${QUTLASS_SOURCES} USE_SABI 3 WITH_SOABI)
endif()
""",
    "cmake/external_projects/flashkda.cmake": """\
if(FLASH_KDA_ARCHS)
  define_extension_target(_flashkda_C DESTINATION vllm LANGUAGE ${VLLM_GPU_LANG}
    SOURCES ${FLASH_KDA_SOURCES} USE_SABI 3 WITH_SOABI)
endif()
""",
    # flash-attention's targets are defined by its own CMake (not in the bundle)
    "cmake/external_projects/vllm_flash_attn.cmake": "FetchContent_MakeAvailable(vllm-flash-attn)\n",
    "cmake/cpu_extension.cmake": """\
if(ENABLE_AVX512)
    define_extension_target(_C_AVX512 DESTINATION vllm LANGUAGE CXX SOURCES ${VLLM_EXT_SRC}
        USE_SABI 3 WITH_SOABI)
    define_extension_target(_C_AVX2 DESTINATION vllm LANGUAGE CXX SOURCES ${VLLM_EXT_SRC}
        USE_SABI 3 WITH_SOABI)
else()
    define_extension_target(_C DESTINATION vllm LANGUAGE CXX SOURCES ${VLLM_EXT_SRC}
        USE_SABI 3 WITH_SOABI)
endif()
""",
    "cmake/utils.cmake": """\
function (define_extension_target MOD_NAME)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "WITH_SOABI" "DESTINATION;LANGUAGE;USE_SABI" "SOURCES")
endfunction()
""",
}


def test_define_extension_target_is_read_as_an_extension_target() -> None:
    defined = targets_of_files({"CMakeLists.txt": CMAKELISTS, **EXTERNAL})
    assert defined["spinloop"] == "CMakeLists.txt:7"
    assert defined["_moe_C_stable_libtorch"].startswith("CMakeLists.txt:")
    assert defined["_flashmla_extension_C"].startswith("cmake/external_projects/flashmla.cmake:")
    assert set(defined) == {
        "spinloop", "fs_io_C", "cumem_allocator", "_C", "_C_stable_libtorch",
        "_moe_C_stable_libtorch", "_rocm_C", "_flashmla_C", "_flashmla_extension_C",
        "_deepselect_C", "_qutlass_C", "_flashkda_C", "_C_AVX512", "_C_AVX2"}


def test_a_0_30_source_list_change_reaches_only_its_target() -> None:
    new = CMAKELISTS.replace('"csrc/cumem_allocator.cpp")',
                             '"csrc/cumem_allocator.cpp" "csrc/cumem_extra.cpp")')
    effect = change_effect("CMakeLists.txt", CMAKELISTS, new)
    assert not effect.everything and effect.targets == {"cumem_allocator"}
    moe = CMAKELISTS.replace('"csrc/libtorch_stable/moe/topk_softmax_kernels.cu")',
                             '"csrc/libtorch_stable/moe/topk_softmax_kernels.cu"\n  "x.cu")')
    assert change_effect("CMakeLists.txt", CMAKELISTS, moe).targets == {"_moe_C_stable_libtorch"}


def test_the_recipe_builds_or_excuses_every_target_of_the_0_30_shape() -> None:
    recipe = load_recipe(RECIPE)
    built = {m.cmake.target for m in recipe.modules if m.cmake is not None}
    defined = set(targets_of_files({"CMakeLists.txt": CMAKELISTS, **EXTERNAL}))
    assert defined - built - set(recipe.targets_not_built) == set()
    # every module but flash-attention's (its own CMake defines those) is a target of vLLM's CMake
    assert built - defined == {"_vllm_fa2_C", "_vllm_fa3_C"}
    # what is excused is not in the CUDA wheel at all
    assert set(recipe.targets_not_built) == {"_C", "_rocm_C", "_C_AVX512", "_C_AVX2"}
    assert all(m.builder is BuilderKind.CMAKE for m in recipe.modules)


def test_the_recipe_pins_torch_2_13_and_names_its_stand_ins() -> None:
    recipe = load_recipe(RECIPE)
    assert recipe.wheel.requirement == "vllm==0.30.0"
    assert recipe.wheel.sha256 == "ef52ee58c410ead0b8afb190838fa4cbcb52075596f67862a03859d984966ac4"
    pkgs = {p.name: p for p in recipe.toolchain.packages}
    assert pkgs["torch"].version == "2.13.0"
    assert pkgs["torch"].file == "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert {"nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cusparse",
            "nvidia-cutlass", "cmake", "ninja"} <= set(pkgs)
    assert all(len(p.sha256) == 64 for p in recipe.toolchain.packages)
    stand_ins = {p.name: p.stands_in_for for p in recipe.toolchain.packages if p.stands_in_for}
    assert set(stand_ins) == {"nvidia-cutlass", "nvidia-nccl-cu13"}
    assert "v4.7.1" in stand_ins["nvidia-cutlass"]
    assert str(recipe.toolchain.dir) == "/work/toolchains/vllm-0.30.0-sm86"
    assert recipe.toolchain.cuda_driver_stub and recipe.toolchain.python


def test_every_fetchcontent_project_points_at_a_placeholder() -> None:
    recipe = load_recipe(RECIPE)
    assert set(recipe.toolchain.placeholders) == {
        "flash-attention", "flashmla", "deepgemm", "deepselect", "fmha_sm100", "flashkda",
        "qutlass", "tml_fa4", "triton_kernels"}
    folders = {v.rsplit("/", 1)[-1] for k, v in recipe.env.items()
               if k.endswith("_SRC_DIR") and "/placeholders/" in v}
    assert folders == set(recipe.toolchain.placeholders)
    assert recipe.toolchain.placeholder_files == ("flashmla/flash_mla/flash_mla_interface.py",)


def test_module_globs_keep_each_source_with_its_own_module() -> None:
    mods = {m.name: m for m in load_recipe(RECIPE).modules}

    def feeds(path: str) -> set[str]:
        return {n for n, m in mods.items()
                if match_any(path, m.sources) and not match_any(path, m.exclude)}

    assert feeds("csrc/cumem_allocator.cpp") == {"cumem_allocator"}
    assert feeds("csrc/cumem_allocator_compat.h") == {"cumem_allocator"}
    assert feeds("csrc/spinloop.cpp") == {"spinloop"}
    assert feeds("csrc/fs_io.cpp") == {"fs_io_C"}
    assert feeds("csrc/libtorch_stable/moe/topk_softmax_kernels.cu") == {"_moe_C_stable_libtorch"}
    assert feeds("csrc/libtorch_stable/layernorm_kernels.cu") == {"_C_stable_libtorch"}
    assert feeds("csrc/libtorch_stable/quantization/marlin/marlin.cuh") == {
        "_C_stable_libtorch", "_moe_C_stable_libtorch"}
    assert feeds("cmake/external_projects/flashmla.cmake") == {"_flashmla_C",
                                                               "_flashmla_extension_C"}
    assert mods["_C_stable_libtorch"].min_cores > 2
    assert {m for m in mods if mods[m].not_buildable} == {
        "_flashmla_C", "_flashmla_extension_C", "_deepselect_C", "_qutlass_C", "_flashkda_C",
        "_vllm_fa2_C", "_vllm_fa3_C"}
    assert mods["_vllm_fa2_C"].wheel_path == "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so"


def test_placeholder_files_hold_only_a_comment(tmp_path: Path) -> None:
    recipe = load_recipe(RECIPE)
    make_placeholders(recipe, tmp_path)
    f = tmp_path / "placeholders" / "flashmla" / "flash_mla" / "flash_mla_interface.py"
    lines = f.read_text().splitlines()
    assert lines and all(line.startswith("# ") for line in lines) and "placeholder" in lines[0]
    assert (tmp_path / "placeholders" / "flashmla" / "NOT-BUILT-FROM-HERE").is_file()


@pytest.mark.parametrize("entry", ["nothere/x.py", "flashmla", "../flashmla/x.py",
                                   "/abs/flashmla/x.py"])
def test_a_placeholder_file_outside_a_placeholder_is_a_recipe_error(tmp_path: Path,
                                                                    entry: str) -> None:
    text = RECIPE.read_text().replace(
        'placeholder_files = ["flashmla/flash_mla/flash_mla_interface.py"]',
        f'placeholder_files = ["{entry}"]')
    path = tmp_path / "r.toml"
    path.write_text(text)
    with pytest.raises(SpecError, match="placeholder_files"):
        load_recipe(path)


def test_pip_is_asked_for_the_exact_version_not_a_local_build() -> None:
    pkg = ToolchainPackage(name="torch", version="2.13.0", file="torch-2.13.0-cp311-cp311-"
                           "manylinux_2_28_x86_64.whl", sha256="0" * 64, role="torch")
    # "torch==2.13.0" admits 2.13.0+cpu, which pip prefers when a find-links folder has it
    assert pip_requirement(pkg) == "torch===2.13.0"


def test_rust_sources_are_native() -> None:
    assert is_native("rust/src/tool_parser.rs") and is_native("rust/Cargo.toml")
    assert is_native("rust/Cargo.lock") and not is_native("rust/README.md")
