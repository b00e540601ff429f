"""Origins, read without a scanner run: CMake variables followed before a command is judged,
files from outside the tree, tools installed from elsewhere and then run, images not pinned
by a digest, and the command lines a Python file really runs (issue 29, items 1-3)."""

from __future__ import annotations

import pytest

from auditor.scan import cmake, cmdlines, fetchrun
from auditor.scan.dockerfile import shell_reading

OUTSIDE = "process-exec.builtin.cmake-outside-tree"


def _cmake(text: str, path: str = "cmake/external_projects/x.cmake") -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in cmake.scan_text(text, path)]


def test_cmake_variables_lists_and_cache_entries_are_followed() -> None:
    cmds = cmake.commands("set(A /opt/p)\nset(B ${A}/x.patch)\nlist(APPEND C git apply ${B})\n"
                          "set(A /other CACHE PATH \"doc\")\noption(USE_X \"x\" ON)\n")
    values = cmake.variables(cmds)
    assert values["C"] == "git;apply;/opt/p/x.patch"
    assert values["A"] == "/opt/p"  # a cache entry does not override a set variable
    assert values["USE_X"] == "ON"


@pytest.mark.parametrize("text", [
    # the real shape: the patch path reaches PATCH_COMMAND through variables
    "set(P $ENV{HOME}/patches)\nset(p ${P}/fa.patch)\nlist(APPEND cmd git apply ${p})\n"
    "FetchContent_Declare(fa GIT_REPOSITORY https://x/fa.git\n"
    "  GIT_TAG 57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e\n  PATCH_COMMAND ${cmd})\n",
    "ExternalProject_Add(x URL https://a/b.tgz URL_HASH SHA256=00\n"
    "  PATCH_COMMAND patch -p1 -i /tmp/fix.patch)\n",
    "ExternalProject_Add(y GIT_REPOSITORY https://a/y.git\n"
    "  GIT_TAG 57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e\n"
    "  PATCH_COMMAND git apply ${CMAKE_SOURCE_DIR}/../../outside.patch)\n",
    "include($ENV{CMAKE_HOOKS}/hooks.cmake)\n",
    "file(COPY /opt/kernels/fast.cu DESTINATION ${CMAKE_BINARY_DIR})\n",
    "set(FETCHCONTENT_SOURCE_DIR_CUTLASS /home/me/cutlass)\n",
    "execute_process(COMMAND ${CMAKE_COMMAND} -P ~/hook.cmake)\n",
])
def test_files_from_outside_the_tree(text: str) -> None:
    assert any(rule == OUTSIDE for _l, rule in _cmake(text)), _cmake(text)


@pytest.mark.parametrize("text", [
    "execute_process(COMMAND cat /proc/cpuinfo OUTPUT_VARIABLE x)\n",
    "set(p ${CMAKE_CURRENT_LIST_DIR}/patches)\n"
    "ExternalProject_Add(y GIT_REPOSITORY https://a/y.git\n"
    "  GIT_TAG 57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e\n  PATCH_COMMAND git apply ${p}/y.patch)\n",
    "include(${CMAKE_CURRENT_LIST_DIR}/utils.cmake)\ninclude(FetchContent)\n",
    "ExternalProject_Add(z URL https://a/z.tgz URL_HASH SHA256=00\n"
    "  CONFIGURE_COMMAND ./configure --prefix /opt/z)\n",
    "configure_file(${CMAKE_SOURCE_DIR}/version.h.in ${CMAKE_BINARY_DIR}/version.h)\n",
])
def test_in_tree_and_system_paths_are_not_outside(text: str) -> None:
    assert all(rule != OUTSIDE for _l, rule in _cmake(text)), _cmake(text)


def test_git_tag_through_a_variable_is_still_judged() -> None:
    text = ("set(REV \"v4.0.0\" CACHE STRING \"rev\")\n"
            "FetchContent_Declare(c GIT_REPOSITORY https://x/c.git GIT_TAG ${REV})\n")
    found = list(cmake.scan_text(text))
    assert any(f.rule == "dependency.builtin.cmake-fetch-unpinned" and "v4.0.0" in f.message
               for f in found)


RUN_FETCHED = [
    ("pip install --extra-index-url https://wheels.acme.example/simple acme-fix\n"
     "acme-fix --cuda 12.8 torch\n", 2, True),
    ("pip install git+https://github.com/x/swapper.git@v1 && swapper torch\n", 1, False),
    ("pip install \"fixer @ https://x.example/fixer-1.0-py3-none-any.whl\"\nfixer go\n", 2, False),
    ("uv pip install --index-url https://idx.example/simple Tool_X\npython3 -m tool_x run\n",
     2, True),
]


@pytest.mark.parametrize("text,line,by_index", RUN_FETCHED)
def test_a_tool_from_elsewhere_then_run(text: str, line: int, by_index: bool) -> None:
    found = [f for f in fetchrun.findings(text) if f.rule.startswith(fetchrun.RULE_TOOL)]
    assert len(found) == 1, found
    f = found[0]
    assert f.end_line == line and f.rule.endswith(".package-source") is by_index
    if by_index:  # the finding spans the install, so the engine judges the index
        assert f.line == 1


@pytest.mark.parametrize("text", [
    "pip install -f ./wheels localtool && localtool --version\n",
    "pip install black && black .\n",
    "pip install -i https://pypi.org/simple black\nblack .\n",
    "pip install torch --index-url https://download.pytorch.org/whl/cu128\n"
    "python -c 'import torch'\n",
])
def test_tools_from_the_default_index_or_the_tree_are_not_fetched(text: str) -> None:
    assert not [f for f in fetchrun.findings(text) if f.rule.startswith(fetchrun.RULE_TOOL)]


def test_images_not_pinned_by_a_digest() -> None:
    text = ("docker pull vllm/vllm-openai:latest\n"
            "docker run --gpus all -p 8000:8000 --ipc=host vllm/vllm-openai:v0.9 --model x\n"
            "docker build -t mine . && docker run --rm mine\n"
            "docker run --rm ubuntu@sha256:0123abcd\n"
            "podman pull docker.io/library/python:3.12\n")
    got = {f.line: f.message for f in fetchrun.findings(text)
           if f.rule == fetchrun.RULE_IMAGE}
    assert sorted(got) == [1, 2, 5]
    assert "vllm/vllm-openai:v0.9" in got[2]


def test_from_is_the_pull_it_amounts_to() -> None:
    text = ("FROM nvidia/cuda:12.8-devel AS build\nRUN make\nFROM build\n"
            "FROM scratch\nFROM python@sha256:0123abcd\n")
    lines = shell_reading(text).text.split("\n")
    assert lines[0] == "docker pull nvidia/cuda:12.8-devel"
    assert lines[2] == "" and lines[3] == ""  # an earlier stage, scratch: no image
    got = [f.line for f in fetchrun.findings(shell_reading(text).text)
           if f.rule == fetchrun.RULE_IMAGE]
    assert got == [1]


PY = '''\
import logging, subprocess, sys
logger = logging.getLogger(__name__)


def check(args):
    raise ValueError("--grpc-port requires VLLM_USE_RUST_FRONTEND=1 vllm serve")


def launch(model):
    logger.info("run: vllm serve %s --host 0.0.0.0", model)
    cmd = ["vllm", "serve", model]
    cmd += ["--host", "0.0.0.0"]
    cmd.append("--port")
    return subprocess.Popen(cmd)


def script_run():
    script = """
vllm serve /srv/m --host 0.0.0.0
"""
    return subprocess.run(["bash", "-c", script], check=True)


subprocess.check_call([sys.executable, "-m", "pip", "install", "x"])
'''


def test_python_reading_has_only_what_runs() -> None:
    r = cmdlines.reading("launch.py", PY, "python")
    assert r is not None
    got = {n: ln for n, ln in enumerate(r.text.split("\n"), 1) if ln.strip()}
    assert got[_n(PY, "Popen(cmd)")] == "vllm serve '${PY_VALUE}' --host 0.0.0.0 --port"
    assert "vllm serve /srv/m --host 0.0.0.0" in got[_n(PY, "bash")]
    assert got[_n(PY, "check_call")] == "python3 -m pip install x"
    assert _n(PY, "raise ValueError") not in got and _n(PY, "logger.info") not in got


def _n(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.split("\n"), 1) if needle in ln)


@pytest.mark.parametrize("code,suffix", [
    ("pip install -f ./wheels mytool", "known-host"),  # the tree's own folder
    ("pip install --find-links ../dist x", "known-host"),
    ("pip3 install --find-links /tmp/wheels flash-attn", "new-host"),  # outside the tree
    ("conda install -c conda-forge numpy", "known-host"),  # conda's default channels
    ("conda install -c defaults numpy", "known-host"),
    ("conda install -c sm86-fan numpy", "new-host"),
    # lxml's manylinux build: the image's own folder, no package host
    ("python -m pip install lxml --no-index -f /io/wheelhouse", "known-host"),
    # pip's and setuptools' own code passing the caller's index on: a variable's value
    ("cmd.extend(('--index-url', index_url))", "from-variable"),
    ("args.extend(['--extra-index-url', self.index_url])", "from-variable"),
    ("args.extend(['--extra-index-url', 'https://wheels.evil.example/simple'])", "new-host"),
])
def test_local_folders_and_default_channels(code: str, suffix: str) -> None:
    from auditor.scan.sources import SourceJudge

    assert SourceJudge(()).judge(code, code).suffix == suffix
