"""The package-source judge: values named on a line (variables resolved from the same file), the
sources upstream's tree uses (real git grep over a real repository) and the profile's list."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import GitRepo

from auditor.errors import SpecError
from auditor.gitio import Git
from auditor.scan.sources import FROM_VARIABLE, KNOWN, NEW, SourceJudge, upstream_sources
from auditor.spec import load_profile

DOCKERFILE = """\
ARG PIP_INDEX_URL
ARG PYTORCH_CUDA_INDEX_BASE_URL=https://download.pytorch.org/whl
ARG MIRROR
RUN uv pip install --system dist/*.whl \\
        --extra-index-url ${PYTORCH_CUDA_INDEX_BASE_URL}/cu$(echo $CUDA_VERSION | tr -d '.')
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> frozenset[str]:
    repo = GitRepo(tmp_path_factory.mktemp("sources") / "engine")
    repo.commit("upstream", files={
        "docker/Dockerfile": DOCKERFILE,
        "requirements/tpu.txt": "--find-links https://storage.googleapis.com/libtpu-wheels/"
                                "index.html\njax==0.6.2\n",
        "README.md": "See https://github.com/vllm-project/vllm and https://docs.vllm.ai\n",
        "environment.yml": "channels:\n  - conda-forge\n",
    })
    git = Git(repo.path)
    return upstream_sources(git, git.tree_of("HEAD"))


def test_upstream_sources_are_the_ones_it_installs_from(upstream: frozenset[str]) -> None:
    assert {"download.pytorch.org", "storage.googleapis.com", "conda-forge"} <= upstream
    # hosts that appear only in prose are not package sources
    assert "github.com" not in upstream and "docs.vllm.ai" not in upstream


@pytest.mark.parametrize("code, suffix, named", [
    ("ENV PIP_EXTRA_INDEX_URL=https://wheels.sm86-kernels.example/simple", NEW,
     "wheels.sm86-kernels.example"),
    ("pip install -i https://user:pw@Mirror.Example.ORG:8443/simple vllm", NEW,
     "mirror.example.org"),
    ("pip3 install --find-links /tmp/wheels flash-attn", NEW, "/tmp/wheels"),
    ("conda install -y -c sm86-kernels triton", NEW, "sm86-kernels"),
    ("conda install -y -c conda-forge numpy", KNOWN, "conda-forge"),
    ("pip install --find-links https://storage.googleapis.com/libtpu-wheels/index.html jax",
     KNOWN, "storage.googleapis.com"),
    ("        --extra-index-url ${PYTORCH_CUDA_INDEX_BASE_URL}/cu$(echo $CUDA_VERSION | tr -d '.')",
     KNOWN, "download.pytorch.org"),
    ('sys.executable, "-m", "pip", "install", "--index-url", "https://pypi.org/simple",', KNOWN,
     "pypi.org"),
    ('export UV_INDEX_URL="$MIRROR/simple"', FROM_VARIABLE, ""),
    ("sed -i 's/a/b/' setup.py && pip install --extra-index-url https://download.pytorch.org/whl "
     "torch", KNOWN, "download.pytorch.org"),
    ('bash -c "pip install -i https://download.pytorch.org/whl/cu128 torch"', KNOWN,
     "download.pytorch.org"),
    ("pip install --extra-index-url ${EXTRA:-https://wheels.example.net/simple} x", NEW,
     "wheels.example.net"),
])
def test_judgement(upstream: frozenset[str], code: str, suffix: str, named: str) -> None:
    judge = SourceJudge(upstream)
    verdict = judge.judge(code, DOCKERFILE)
    assert verdict.suffix == suffix
    assert named in verdict.message


def test_the_profile_list_makes_a_host_known() -> None:
    code = "pip install torch --extra-index-url https://download.pytorch.org/whl/cu128"
    assert SourceJudge(()).judge(code, code).suffix == NEW
    indexes = load_profile("vllm").extra["scan"]["package_indexes"]
    assert SourceJudge(indexes).judge(code, code).suffix == KNOWN


def test_a_bad_profile_list_is_a_spec_error(tmp_path: Path) -> None:
    from dataclasses import replace

    from auditor.scan.stage import package_indexes

    class _Spec:
        profile = replace(load_profile("vllm"), extra={"scan": {"package_indexes": "pypi"}})

    with pytest.raises(SpecError, match="package_indexes"):
        package_indexes(_Spec())  # type: ignore[arg-type]
    assert package_indexes(type("S", (), {"profile": load_profile("generic")})()) == ()  # type: ignore[arg-type]


def test_a_python_constant_is_resolved(upstream: frozenset[str]) -> None:
    text = ('_INDEX = "https://wheels.sm86-kernels.example/simple"\n'
            'subprocess.check_call([sys.executable, "-m", "pip", "install", "--extra-index-url", '
            '_INDEX, "sm86"])\n')
    verdict = SourceJudge(upstream).judge(text.split("\n")[1], text)
    assert verdict.suffix == NEW
    assert "wheels.sm86-kernels.example" in verdict.message
