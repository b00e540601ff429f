"""Branches a Linux build never takes: a Windows fork's ``if(WIN32)`` blocks reach no module.

The shapes are those of a real vLLM Windows fork's CMakeLists.txt (SystemPanic/vllm-windows at
v0.10.0): ``if (WIN32)`` blocks that set MSVC flags or extra sources, a new ``if(WIN32) … else()
<upstream lines> endif()`` around unchanged lines, and ``if(MSVC)`` inside a function body.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from buildcase import Upstream
from test_rebuild_cmakelists import CMAKELISTS, UTILS, _plan, vllm_shaped_engine

from auditor.rebuild.cmakelists import change_effect, host_writes, parse
from auditor.rebuild.hostbranches import dead_indices, host_value, linux_view

MOE_LINE = 'list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu")'


@pytest.mark.parametrize(("condition", "value"), [
    ("WIN32", False), ("MSVC", False), ("APPLE", False), ("CMAKE_HOST_WIN32", False),
    ("NOT WIN32", True), ("UNIX", True), ("NOT UNIX", False), ("NOT NOT MSVC", False),
    ("WIN32 AND FOO", False), ("FOO AND APPLE", False), ("UNIX AND NOT APPLE", True),
    ("UNIX AND FOO", None), ("WIN32 OR FOO", None), ("FOO", None), ("${WIN32}", None),
    ("(WIN32)", None), ('CMAKE_SYSTEM_NAME STREQUAL "Windows"', None), ("NOT FOO", None),
])
def test_host_value_decides_only_conditions_on_host_variables(condition: str,
                                                              value: bool | None) -> None:
    (c,) = parse(f"if({condition})\n")
    assert host_value(c.args) is value


def _names(text: str) -> list[str]:
    return [f"{c.name}({' '.join(c.args)})" for c in linux_view(parse(text))]


def test_linux_view_drops_what_linux_never_runs_and_keeps_what_it_cannot_decide() -> None:
    text = ("if(WIN32)\n  set(A win)\nelseif(APPLE)\n  set(A mac)\nelse()\n  set(A linux)\n"
            "endif()\n"
            "if(UNIX)\n  set(B unix)\nelse()\n  set(B other)\nendif()\n"
            "if(FOO)\n  set(C foo)\nelseif(WIN32)\n  set(C win)\nelse()\n  set(C rest)\nendif()\n"
            "if(MSVC)\n  if(FOO)\n    set(D x)\n  endif()\nendif()\n"
            "if(NOT WIN32 AND BAR)\n  set(E bar)\nendif()\n")
    assert _names(text) == [
        "set(A linux)", "set(B unix)",
        # undecided chain: its commands stay, the dead elseif body goes
        "if(FOO)", "set(C foo)", "elseif(WIN32)", "else()", "set(C rest)", "endif()",
        "if(NOT WIN32 AND BAR)", "set(E bar)", "endif()"]
    # an unclosed if is never decided
    assert dead_indices(parse("if(WIN32)\n  set(X 1)\n")) == set()


def test_a_change_inside_if_win32_reaches_no_target_and_is_noted() -> None:
    new = CMAKELISTS.replace(MOE_LINE, MOE_LINE + "\nif (WIN32)\n  list(APPEND MOE_EXT_SRC "
                             '"csrc/moe/win_only.cu")\n  set(VLLM_GPU_FLAGS "${VLLM_GPU_FLAGS}" '
                             '"-Xcompiler=/Zc:preprocessor")\nendif()')
    plain = change_effect("CMakeLists.txt", CMAKELISTS, new)
    assert plain.everything  # read as taken: the new if() is an untraced control command
    e = change_effect("CMakeLists.txt", CMAKELISTS, new, linux_only=True)
    assert not e.everything and e.targets == set()
    assert [r.text for r in e.reasons] == [
        "CMakeLists.txt: 4 changed command(s) in branches a Linux build never takes (if(WIN32), "
        "if(MSVC), if(APPLE), … from line 42): no build effect"]


def test_an_if_win32_else_around_unchanged_lines_changes_nothing_on_linux() -> None:
    wrapped = CMAKELISTS.replace(MOE_LINE, 'if(WIN32)\n  list(APPEND MOE_EXT_SRC "csrc/moe/w.cu")'
                                 f"\nelse()\n  {MOE_LINE}\nendif()")
    e = change_effect("CMakeLists.txt", CMAKELISTS, wrapped, linux_only=True)
    assert e.targets == set() and not e.everything
    # the other way round, the upstream line is what Windows gets: Linux loses it
    inverted = CMAKELISTS.replace(MOE_LINE, f"if(WIN32)\n  {MOE_LINE}\nendif()")
    e2 = change_effect("CMakeLists.txt", CMAKELISTS, inverted, linux_only=True)
    assert e2.targets == {"_moe_C"} and not e2.everything


def test_a_live_change_beside_a_dead_block_is_still_traced() -> None:
    new = CMAKELISTS.replace(MOE_LINE, 'if(MSVC)\n  set(X 1)\nendif()\n'
                             'list(APPEND MOE_EXT_SRC "csrc/moe/moe_wna16.cu" "csrc/moe/n.cu")')
    e = change_effect("CMakeLists.txt", CMAKELISTS, new, linux_only=True)
    assert e.targets == {"_moe_C"} and not e.everything
    # an unconditional cache variable of the fork: untraceable, every target (as before)
    e2 = change_effect("CMakeLists.txt", CMAKELISTS,
                       CMAKELISTS + 'set(CUTLASS_ENABLE_CUBLAS ON CACHE BOOL "" FORCE)\n',
                       linux_only=True)
    assert e2.everything


def test_an_msvc_branch_inside_a_function_body_is_dead_too() -> None:
    new = UTILS.replace("  Python_add_library", "  if(MSVC)\n    set(GPU_FLAGS /W0)\n  endif()\n"
                        "  Python_add_library")
    assert change_effect("cmake/utils.cmake", UTILS, new).everything
    e = change_effect("cmake/utils.cmake", UTILS, new, linux_only=True)
    assert not e.everything and e.targets == set()


def test_host_writes_names_code_and_arguments_that_could_set_the_host_variables() -> None:
    files = [("CMakeLists.txt", parse("set(WIN32 ON)\nset(OTHER 1)\n")),
             ("cmake/x.cmake", parse('set(CMAKE_SYSTEM_NAME "Windows")\n')),
             ("cmake/y.cmake", parse("list(APPEND MSVC x)\n"))]
    assert host_writes(files) == ["CMakeLists.txt:1: set(WIN32 ON)",
                                  "cmake/x.cmake:1: set(CMAKE_SYSTEM_NAME Windows)",
                                  "cmake/y.cmake:1: list(APPEND MSVC x)"]
    assert host_writes([], ["-DVLLM_TARGET_DEVICE=cuda", "-DWIN32:BOOL=ON", "-Cinit.cmake"]) == [
        "configure argument -DWIN32:BOOL=ON", "configure argument -Cinit.cmake"]
    assert host_writes([("CMakeLists.txt", parse(CMAKELISTS))], ["-DNVCC_THREADS=1"]) == []
    # reading them is not writing them (vLLM's cpu_extension.cmake tests the system name)
    assert host_writes([("cmake/cpu_extension.cmake", parse(
        'if(${CMAKE_SYSTEM_NAME} MATCHES "Darwin")\n  message(STATUS ${WIN32})\nendif()\n'
        "while(MSVC)\nendwhile()\n"))]) == []
    assert host_writes([("x.cmake", parse("foreach(APPLE IN LISTS L)\nendforeach()\n"))]) == [
        "x.cmake:1: foreach(APPLE IN LISTS L)"]
    # an output variable named bare, code this reader does not see, an include of another file
    sneaky = parse('math(EXPR WIN32 "1")\ncmake_language(EVAL CODE "${C}")\n'
                   "include(cmake/extra.txt)\ninclude(${X}/y.cmake)\n"
                   "include(/etc/z.cmake)\ninclude(${CMAKE_CURRENT_LIST_DIR}/../w.cmake)\n"
                   "include(FetchContent)\ninclude(cmake/utils.cmake)\n"
                   "include(${CMAKE_CURRENT_LIST_DIR}/cmake/utils.cmake)\n")
    assert [w.split(": ", 1)[1] for w in host_writes([("CMakeLists.txt", sneaky)])] == [
        "math(EXPR WIN32 1)", "cmake_language(EVAL CODE ${C})", "include(cmake/extra.txt)",
        "include(${X}/y.cmake)", "include(/etc/z.cmake)",
        "include(${CMAKE_CURRENT_LIST_DIR}/../w.cmake)"]


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    return vllm_shaped_engine(tmp_path_factory)


WIN_BLOCK = MOE_LINE + '\nif (WIN32)\n  list(APPEND MOE_EXT_SRC "csrc/moe/win_only.cu")\nendif()'


def test_plan_a_windows_only_cmake_change_rebuilds_nothing(eng: Upstream, tmp_path: Path) -> None:
    plan, _ = _plan(eng, tmp_path, {"CMakeLists.txt": CMAKELISTS.replace(MOE_LINE, WIN_BLOCK)})
    assert plan.to_build == () and not plan.unclaimed_native
    assert any("never takes" in n for n in plan.cmake_notes)


def test_plan_reads_host_branches_as_taken_when_the_bundle_can_set_win32(
        eng: Upstream, tmp_path: Path) -> None:
    new = CMAKELISTS.replace(MOE_LINE, WIN_BLOCK).replace(
        "project(eng LANGUAGES CXX)", "project(eng LANGUAGES CXX)\nset(WIN32 1)")
    plan, _ = _plan(eng, tmp_path, {"CMakeLists.txt": new})
    assert {x.module.name for x in plan.to_build} == {"cumem_allocator", "_C", "_moe_C"}
    assert plan.cmake_notes[0] == ("CMakeLists.txt:3: set(WIN32 1) can set what if(WIN32), "
                                   "if(MSVC), if(APPLE), … test: those branches are read as taken")
    # set in another file of the bundle (one the series did not change the build of) counts too
    (tmp_path / "2").mkdir()
    plan2, _ = _plan(eng, tmp_path / "2", {
        "CMakeLists.txt": CMAKELISTS.replace(MOE_LINE, WIN_BLOCK),
        "cmake/utils.cmake": UTILS + 'set(CMAKE_SYSTEM_NAME "Windows")\n'})
    assert {x.module.name for x in plan2.to_build} == {"cumem_allocator", "_C", "_moe_C"}
