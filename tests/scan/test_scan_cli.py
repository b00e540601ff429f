"""`auditor scan` end to end: the real CLI, the verify stage, the project's own rule set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scancase import FORK
from support import export_tree, simple_case, write_spec

from auditor.policy import load_waivers
from auditor.scan.rules import load_rule_meta
from auditor.spec import POLICIES_DIR

STATS = "import requests\n\n\ndef send(x):\n    requests.post('https://stats.example', json=x)\n"
NET_CU = ("#include <sys/socket.h>\n__global__ void k(float* x) { x[0] = 1.0f; }\n"
          "void r(int fd, const struct sockaddr* a, unsigned l) {\n  connect(fd, a, l);\n}\n")


def _scan(spec: Path, cache: Path, *args: str) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "AUDITOR_CACHE": str(cache), "SEMGREP_ENABLE_VERSION_CHECK": "0"}
    res = subprocess.run([sys.executable, "-m", "auditor", "scan", str(spec), "--json", *args],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.stdout, res.stderr
    return res.returncode, json.loads(res.stdout)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("scan-cli")
    case = simple_case(tmp)
    repo = case["repo"]
    c3 = repo.commit("usage stats", files={"engine/stats.py": STATS, "csrc/net.cu": NET_CU},
                     author=FORK)
    bundle = export_tree(repo, "series", tmp / "bundle-3")
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], c3]
    spec["bundle"] = {"path": str(bundle)}
    spec["scan"] = {}
    spec_path = write_spec(tmp / "audit.toml", spec)
    sarif = tmp / "scan.sarif"
    first = _scan(spec_path, tmp / "cache", "--sarif", str(sarif))
    second = _scan(spec_path, tmp / "cache")
    reference = _scan(spec_path, tmp / "cache", "--reference", "--explain")
    return {"c3": c3, "first": first, "second": second, "sarif": sarif, "reference": reference}


def test_cli_scan_finds_and_attributes_with_project_rules(cli: dict[str, Any]):
    code, out = cli["first"]
    assert code == 1  # a blocking network finding: policy says no
    rules = load_rule_meta()
    (net,) = [f for f in out["findings"] if f["path"] == "engine/stats.py"
              and f["category"] == "network" and f["scanner"] == "semgrep"]
    assert net["rule"] in rules and net["line"] == 5 and net["commit"] == cli["c3"]
    assert net["action"] == "block" and not net["inherited"]
    assert out["scope"] == "diff" and "engine/stats.py" in out["checked_files"]
    assert set(out["scanners"]) == {"semgrep", "bandit", "builtin", "coding", "cmake", "docs",
                                 "python-syntax"}
    sarif = json.loads(cli["sarif"].read_text())
    assert sarif["runs"][0]["results"]


def test_cli_scan_finds_cuda_network_call(cli: dict[str, Any]):
    _code, out = cli["first"]
    assert out["status"] == "ok", out["not_checked"]
    (f,) = [f for f in out["findings"] if f["path"] == "csrc/net.cu"]
    assert (f["category"], f["line"], f["commit"]) == ("network", 4, cli["c3"])


def test_cli_second_run_scans_nothing(cli: dict[str, Any]):
    code, out = cli["second"]
    if out["ruleset"] != cli["first"][1]["ruleset"]:
        pytest.skip("the rule files changed between the two runs (edited while testing)")
    assert out["cache"]["misses"] == 0 and out["cache"]["scanned"] == {}
    assert code == cli["first"][0]
    assert out["findings"] == cli["first"][1]["findings"]


def test_waivers_example_loads():
    assert load_waivers(POLICIES_DIR / "waivers.example.toml")


def test_cli_reference_runner_gives_the_same_answer_and_explains(cli: dict[str, Any]):
    """``auditor scan --reference --explain``: the plain runner (no cache read or written), the
    same exit code, findings and not-checked reasons as the staged run, and per file the
    readings that ran."""
    code, out = cli["reference"]
    first_code, first = cli["first"]
    if out["ruleset"] != first["ruleset"]:
        pytest.skip("the shipped rules changed between the runs (another engineer's edit)")
    assert code == first_code
    key = [(f["rule"], f["path"], f["line"], f["commit"], f["fingerprint"]) for f in out["findings"]]
    assert key == [(f["rule"], f["path"], f["line"], f["commit"], f["fingerprint"])
                   for f in first["findings"]]
    assert out["not_checked"] == first["not_checked"]
    assert out["cache"]["hits"] == 0  # the cache is not read
    assert "readings" not in first
    rows = out["readings"]["engine/stats.py"]
    assert {r["reading"] for r in rows} <= {"whole", "skipped"}
    assert any(r["scanner"] == "semgrep" and r["reading"] == "whole" for r in rows)

