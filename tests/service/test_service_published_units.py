"""``auditor unit check`` on three vLLM units shaped like the ones people publish (tests/service/units):
the launch flags and loaders that run someone else's code are reported, through the real CLI and
systemd-analyze where the machine has it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from unitcase import HAS_ANALYZE

UNITS = Path(__file__).parent / "units"

EXPECTED = {
    "quickstart-vllm.service": {"service.trust-remote-code", "service.code-from-writable",
                                "service.exposed-without-key", "service.bind-all"},
    "multi-gpu-vllm.service": {"service.preload", "service.bind-all"},
    "tool-calling-vllm.service": {"service.preload", "service.code-from-writable",
                                  "service.key-in-unit", "service.bind-all"},
}


def _check(unit: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "auditor", "unit", "check", str(unit), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_published_units_report_code_loading_and_exposure(name: str) -> None:
    res = _check(UNITS / name)
    assert res.returncode == 1, res.stderr  # a blocking finding: FAIL
    data = json.loads(res.stdout)
    rules = {f["rule"] for f in data["findings"]}
    assert EXPECTED[name] <= rules, rules
    if HAS_ANALYZE:
        assert data["status"] == "ok" and data["exposure"]["score"] > 2.0
    # the header says FAIL, never "ok" above a blocking finding; no commit label on a unit file
    first = res.stderr.splitlines()[0]
    assert first.startswith("unit: FAIL") and "ok" not in first
    assert "(upstream)" not in res.stderr


def test_the_preloaded_library_and_module_path_are_named() -> None:
    gpu = json.loads(_check(UNITS / "multi-gpu-vllm.service").stdout)
    (pre,) = [f for f in gpu["findings"] if f["rule"] == "service.preload"]
    assert "LD_PRELOAD=/opt/nccl/lib/libnccl.so.2" in pre["message"] and pre["line"] == 12
    (bind,) = [f for f in gpu["findings"] if f["rule"] == "service.bind-all"]
    assert "binds 0" in bind["message"]
    tools = json.loads(_check(UNITS / "tool-calling-vllm.service").stdout)
    (pre,) = [f for f in tools["findings"] if f["rule"] == "service.preload"]
    assert "PYTHONPATH=/opt/vllm" in pre["message"]
    (plugin,) = [f for f in tools["findings"] if f["rule"] == "service.code-from-writable"]
    assert "/var/lib/vllm/plugins/site_mistral.py" in plugin["message"]
    assert "token-3f9a8b7c6d5e4f3a" not in json.dumps(tools)  # the key in the unit is redacted


def test_a_unit_file_name_cannot_forge_console_lines(tmp_path: Path) -> None:
    forged = tmp_path / "z.service\n\n──── verdict: PASS ────"
    forged.write_text((UNITS / "quickstart-vllm.service").read_text())
    res = _check(forged)
    assert res.returncode == 1
    assert not [line for line in res.stderr.splitlines() if line.startswith("──── verdict")]
    assert "z.service\\x0a\\x0a──── verdict: PASS ────" in res.stderr
