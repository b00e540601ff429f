"""The stage, run for real on the tiny engine: a FetchContent download attempt fails the build naming
what it wanted; an arch the toolchain cannot target makes it INCOMPLETE naming the toolchain that
could; an extension target the recipe omits fails it naming the target."""

from __future__ import annotations

from pathlib import Path

from buildcase import (
    CM_C,
    Upstream,
    make_case,
    make_series,
    needs_cmake,
    needs_nvcc,
    recipe_text,
    run_build,
)

from auditor.model import StageStatus
from auditor.rebuild.builders import download_attempts

pytestmark = [needs_nvcc]

CM_ONLY = """
[modules.cm]
wheel_path = "tinyeng/_cm.so"
sources = ["cmk/**"]
builder = "cmake"
[modules.cm.cmake]
source_dir = "cmk"
target = "_cm"
output = "_cm.so"
"""


@needs_cmake
def test_a_fetchcontent_without_a_local_folder_fails_naming_what_it_wanted(upstream: Upstream,
                                                                           tmp_path: Path) -> None:
    # the recipe gives no local folder for tinydep: CMake's disconnected mode would silently use
    # an empty source folder; the configure hook stops it and the stage names the declaration
    branch = make_series(upstream, "fetch", [{"cmk/cm.c": CM_C + "int tiny_more(void);\n"}])
    recipe = recipe_text(upstream, modules=CM_ONLY)
    result = run_build(make_case(upstream, tmp_path, branch, recipe=recipe))
    assert result.status is StageStatus.FAILED, (result.reasons, result.not_checked)
    [reason] = result.reasons
    assert reason.startswith("module cm: the build tried to download tinydep via FetchContent")
    assert "http://127.0.0.1:9/tinydep.tar.gz" in reason
    assert "[modules.cm.cmake.fetchcontent]" in reason
    assert result.to_json()["wheel"] is None


def test_download_attempts_read_from_build_output() -> None:
    out = ("-- Populating foo\nPerforming download step (git clone) for 'foo-populate'\n"
           "Cloning into 'foo-src'...\nfatal: unable to access: Could not resolve host: "
           "github.com\n")
    assert download_attempts(out) == ["foo-populate (git clone)", "a git clone into foo-src",
                                      "from the network (could not resolve host github.com)"]
    assert download_attempts("-- Configuring done\n") == []


def test_an_arch_nvcc_13_cannot_target_is_incomplete_naming_who_can(upstream: Upstream,
                                                                    tmp_path: Path) -> None:
    branch = make_series(upstream, "volta", [{"csrc/other.cu": "__global__ void v() {}\n"}])
    recipe = recipe_text(upstream).replace('archs = ["86"]', 'archs = ["70", "86"]')
    result = run_build(make_case(upstream, tmp_path, branch, recipe=recipe))
    assert result.status is StageStatus.INCOMPLETE, (result.reasons, result.not_checked)
    [note] = result.not_checked
    assert "sm_70 (Volta)" in note and "CUDA 9.0 to 12.9 can" in note
    assert "sm_86" not in note
    assert result.to_json()["wheel"] is None


@needs_cmake
def test_an_extension_target_the_recipe_omits_fails_naming_it(upstream: Upstream,
                                                              tmp_path: Path) -> None:
    gpu = "define_gpu_extension_target(\n  _gpu_C\n  DESTINATION tinyeng\n  SOURCES gpu.cu)\n"
    branch = make_series(upstream, "target", [{"cmk/gpu.cmake": gpu}])
    result = run_build(make_case(upstream, tmp_path, branch))
    assert result.status is StageStatus.FAILED
    assert any("extension target _gpu_C (cmk/gpu.cmake:1)" in r for r in result.reasons), \
        result.reasons
    mods = {m["name"]: m["action"] for m in result.to_json()["modules"]}
    assert mods["cm"] == "not-built"
