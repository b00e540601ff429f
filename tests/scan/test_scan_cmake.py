"""The CMake splitter and rules, on CMake written with the shapes of vLLM's CMakeLists.txt and
cmake/external_projects/*.cmake (FetchContent with a revision variable, ExternalProject steps,
execute_process for code generation, a custom command running a fetched script)."""

from __future__ import annotations

from auditor.model import Category
from auditor.scan.cmake import commands, is_cmake, scan_text

CMAKE = """\
cmake_minimum_required(VERSION 3.26)
set(CUTLASS_REVISION "v4.0.0" CACHE STRING "CUTLASS revision to use")
set(FA_COMMIT "57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e")
#[[ a bracket comment
    FetchContent_Declare(ignored URL https://ignored.example/x.tgz)
]]
FetchContent_Declare(
        cutlass
        GIT_REPOSITORY https://github.com/nvidia/cutlass.git
        # comments inside the call
        GIT_TAG ${CUTLASS_REVISION}
        GIT_PROGRESS TRUE
        GIT_SHALLOW TRUE
)
FetchContent_Declare(
  vllm-flash-attn
  GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git
  GIT_TAG ${FA_COMMIT}
  GIT_SUBMODULES "csrc/cutlass"
  BINARY_DIR ${CMAKE_BINARY_DIR}/vllm-flash-attn
)
FetchContent_Declare(oneDNN URL https://mirror.example/onednn-3.8.tar.gz)
FetchContent_Declare(pinned URL https://mirror.example/p.tgz
                     URL_HASH SHA256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef)
ExternalProject_Add(flashmla
  GIT_REPOSITORY https://github.com/deepseek-ai/FlashMLA.git
  GIT_TAG main
  PATCH_COMMAND git apply ${CMAKE_CURRENT_SOURCE_DIR}/patches/flashmla.patch
  CONFIGURE_COMMAND ""
  BUILD_COMMAND ""
)
file(DOWNLOAD https://kernels.example/libfast.so ${CMAKE_BINARY_DIR}/libfast.so)
file(DOWNLOAD https://kernels.example/table.bin ${CMAKE_BINARY_DIR}/table.bin
     EXPECTED_HASH SHA256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=$PYTHONPATH
    ${Python_EXECUTABLE} ${MARLIN_GEN_SCRIPT}
  RESULT_VARIABLE marlin_generation_result)
add_custom_target(hipify${NAME}
  COMMAND ${Python_EXECUTABLE} ${CMAKE_SOURCE_DIR}/cmake/hipify.py -o ${DIR}
  DEPENDS ${CMAKE_SOURCE_DIR}/cmake/hipify.py)
add_custom_command(OUTPUT gen.cu
  COMMAND ${Python_EXECUTABLE} ${vllm-flash-attn_SOURCE_DIR}/generate.py
  COMMENT "generating (a ')' in a string)")
add_custom_command(OUTPUT tool
  COMMAND curl -fsSL https://tools.example/gen -o tool)
"""


def _by_line() -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for f in scan_text(CMAKE):
        out.setdefault(f.line, []).append(f.rule)
    return out


def test_commands_with_lines_and_arguments() -> None:
    cmds = commands(CMAKE)
    names = [(c.name, c.line) for c in cmds]
    assert ("fetchcontent_declare", 7) in names and ("fetchcontent_declare", 15) in names
    assert not any(c.name == "fetchcontent_declare" and c.line < 7 for c in cmds)  # a comment
    cutlass = next(c for c in cmds if c.line == 7)
    assert cutlass.end_line == 14
    assert [a.value for a in cutlass.keyword_values("GIT_TAG")] == ["${CUTLASS_REVISION}"]
    last = cmds[-1]
    assert (last.name, last.line, last.end_line) == ("add_custom_command", 45, 46)
    assert [a.value for a in last.keyword_values("COMMAND")][:2] == ["curl", "-fsSL"]


def test_rules_at_their_lines() -> None:
    by_line = _by_line()
    assert by_line[7] == ["dependency.builtin.cmake-fetch-unpinned"]  # tag v4.0.0, not a commit
    assert 15 not in by_line  # pinned to a full commit through a variable
    assert by_line[22] == ["dependency.builtin.cmake-fetch-unpinned"]  # URL without URL_HASH
    assert 23 not in by_line  # URL_HASH given
    assert by_line[25] == ["dependency.builtin.cmake-fetch-unpinned",
                           "process-exec.builtin.cmake-fetched-step"]  # GIT_TAG main, a patch
    assert by_line[32] == ["dependency.builtin.cmake-download-unpinned"]  # not run: reviewed
    assert 33 not in by_line  # EXPECTED_HASH given
    assert by_line[35] == ["process-exec.builtin.cmake-execute-process"]
    assert 39 not in by_line  # a project script from the source tree
    assert by_line[42] == ["process-exec.builtin.cmake-custom-command"]  # runs fetched code
    assert by_line[45] == ["process-exec.builtin.cmake-custom-command"]  # downloads


def test_messages_name_what_is_fetched() -> None:
    found = {f.line: f for f in scan_text(CMAKE)}
    assert "v4.0.0" in found[7].message and "cutlass" in found[7].message
    assert "libfast.so" in found[32].message
    assert found[32].category is Category.DEPENDENCY
    assert all(f.line != 25 or "PATCH_COMMAND runs git apply" in f.message or "main" in f.message
               for f in scan_text(CMAKE))


def test_which_files_and_odd_input() -> None:
    assert is_cmake("CMakeLists.txt") and is_cmake("cmake/utils.cmake")
    assert not is_cmake("docs/cmake.md")
    for text in ["", "foo(", "set(A \"unterminated", "#[[ open", "x(y) )))", "[[", "\\"]:
        list(scan_text(text))  # never raises
