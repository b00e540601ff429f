"""A small vLLM-shaped case for the review tests: real git, a series touching several areas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, export_tree, write_spec

FORK = "Fork Author <fork@community.example>"

KERNEL = "".join(f"// line {i}\n" for i in range(1, 41))
ENVS = "".join(f"VAR_{i} = {i}\n" for i in range(1, 41))
DOCKER = "FROM ubuntu:22.04\nRUN apt-get update\nRUN pip install vllm\n"


def make_case(tmp: Path, *, review: dict[str, Any] | None = None) -> dict[str, Any]:
    """Upstream v1.0.0 and a three-commit series (kernel, envs + Dockerfile, a new script)."""
    repo = GitRepo(tmp / "vllm")
    repo.commit("upstream", files={
        "csrc/kernel.cu": KERNEL, "vllm/envs.py": ENVS, "docker/Dockerfile": DOCKER,
        "vllm/entrypoints/api.py": "def serve():\n    return 1\n"})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("kernel: tune", author=FORK, files={
        "csrc/kernel.cu": KERNEL.replace("// line 5\n", "// line 5 tuned\n")
        .replace("// line 30\n", "// line 30 tuned\n// extra\n")})
    c2 = repo.commit("envs and docker", author=FORK, files={
        "vllm/envs.py": ENVS.replace("VAR_20 = 20\n", "VAR_20 = 21\nVAR_X = 'x'\n"),
        "docker/Dockerfile": DOCKER + "RUN pip install --extra-index-url http://x.example foo\n"})
    c3 = repo.commit("add script", author=FORK, files={
        "tools/run.sh": "#!/bin/sh\necho hi\n"})
    spec: dict[str, Any] = {
        "engine": {"profile": "vllm", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c1, c2, c3]},
        "bundle": {"path": str(export_tree(repo, "series", tmp / "bundle"))},
    }
    if review is not None:
        spec["review"] = review
    path = write_spec(tmp / "audit.toml", spec)
    return {"repo": repo, "commits": [c1, c2, c3], "spec": path, "raw": spec, "tmp": tmp}


@pytest.fixture
def case(tmp_path: Path) -> dict[str, Any]:
    return make_case(tmp_path, review={"file": "reviews.toml", "required": True})
