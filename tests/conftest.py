"""Test configuration: `online` tests are skipped unless AUDITOR_ONLINE=1; a private cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("AUDITOR_ONLINE") == "1":
        return
    skip = pytest.mark.skip(reason="needs the network; set AUDITOR_ONLINE=1 to run")
    for item in items:
        if "online" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUDITOR_CACHE", str(tmp_path_factory.getbasetemp() / "auditor-cache"))
    monkeypatch.setenv("SEMGREP_ENABLE_VERSION_CHECK", "0")
