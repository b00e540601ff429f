"""Fixtures for the build tests (helpers live in buildcase.py)."""

from __future__ import annotations

import pytest
from buildcase import NVCC, Upstream, build_upstream


@pytest.fixture(scope="session")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    """The tiny engine's upstream repository and official wheel, built once per session."""
    if NVCC is None:
        pytest.skip("nvcc is not installed on this machine")
    from auditor.errors import ToolMissing
    from auditor.rebuild.sandbox import SandboxKind, select_sandbox

    try:
        select_sandbox(SandboxKind.AUTO, tmp_path_factory.mktemp("sandbox-probe"))
    except ToolMissing as exc:
        pytest.skip(f"no network-less sandbox on this machine: {exc.message}")
    return build_upstream(tmp_path_factory.mktemp("upstream"))
