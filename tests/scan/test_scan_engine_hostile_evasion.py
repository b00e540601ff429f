"""The scan stage against evasions (issue 30, items 5, 18, 20), end to end on a real repository
with real git and semgrep: a symlink that makes a text file a Python module, a file too large or
with a line too long to scan, and a coding declaration naming no text encoding."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import FORK, bundle_of, context, workspace, write_rules
from support import GitRepo

from auditor.model import Scope, StageResult
from auditor.scan.limits import MAX_BYTES, MAX_LINE, longest_line, oversize
from auditor.scan.stage import ScanStage

PAYLOAD_TXT = ("Example plugin configuration.\n"
               "import requests\n"
               "requests.get('https://c2.example/beacon')\n")
HUGE_ONE_LINE = "X = [" + "1," * (29 * 1024 * 1024 // 2) + "]\n"  # 29 MB on one line


@dataclass
class Case:
    repo: GitRepo
    bundle: Path
    rules: Path
    tmp: Path
    commits: list[str]

    def run(self, name: str, scope: Scope | None = None) -> StageResult:
        ws = workspace(self.repo, "v1.0.0", "series", self.bundle)
        ctx = context(self.tmp / name, self.repo, self.commits, self.bundle, ws,
                      cache=self.tmp / f"cache-{name}", scope=scope)
        return ScanStage(rules_dir=self.rules).run(ctx)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    tmp = tmp_path_factory.mktemp("hostile-evasion")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0.0'\n",
        "docs/upstream.txt": "import requests\nrequests.get('https://up.example/')\n",
        "README.md": "# engine\n",
    })
    repo.symlink("engine/readme_link.md", "../README.md")  # upstream's own harmless link
    repo.commit("upstream link")
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    commits = [repo.commit("plugin docs", files={"docs/example.txt": PAYLOAD_TXT}, author=FORK)]
    repo.symlink("engine/plugin.py", "../docs/example.txt")  # a text file imported as code
    repo.symlink("engine/legacy.py", "../docs/upstream.txt")  # upstream's text, newly code
    repo.symlink("engine/alias", "plugin.py")  # a chain: no language by its name
    repo.symlink("scripts/setup.sh", "../docs/example.txt")
    commits.append(repo.commit("plugin entry points", author=FORK))
    commits.append(repo.commit("generated tables and odd codings", files={
        "engine/tables.py": HUGE_ONE_LINE,
        "engine/wide.sh": "echo " + "a" * (MAX_LINE + 10) + "\n",
        "docs/big.md": ("# notes\n" + "word " * 30 + "\n") * (MAX_BYTES // 150 + 10),
        "engine/rot.py": "# -*- coding: rot13 -*-\nvzcbeg bf\nbf.flfgrz('vq')\n",
        "engine/b64.py": "#!/usr/bin/env python\n# coding: base64\naW1wb3J0IG9z\n",
    }, author=FORK))
    bundle = bundle_of(repo, "series", tmp / "bundle")
    return Case(repo, bundle, write_rules(tmp / "rules"), tmp, commits)


@pytest.fixture(scope="module")
def diff_result(case: Case) -> tuple[StageResult, float]:
    started = time.monotonic()
    result = case.run("diff")
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def full_result(case: Case, diff_result: tuple[StageResult, float]) -> StageResult:
    return case.run("full", scope=Scope.FULL)


def _rules_at(result: StageResult, path: str) -> set[str]:
    return {f.rule for f in result.findings if f.path == path}


# ------------------------------------------------------------------ item 5: symlinks


def test_a_symlink_from_a_code_name_to_text_is_a_finding(case: Case,
                                                         diff_result: tuple[StageResult, float]):
    result, _ = diff_result
    for link in ("engine/plugin.py", "engine/legacy.py", "scripts/setup.sh"):
        (f,) = [f for f in result.findings if f.path == link]
        assert f.rule == "obfuscation.builtin.symlink-changes-language"
        assert f.commit == case.commits[1] and not f.inherited
    assert "engine/alias" not in {f.path for f in result.findings}  # no language by its name
    assert "engine/readme_link.md" not in {f.path for f in result.findings}


def test_the_target_is_scanned_as_the_language_of_the_link(case: Case,
                                                           diff_result: tuple[StageResult, float]):
    result, _ = diff_result
    (f,) = [f for f in result.findings if f.path == "docs/example.txt"]
    assert f.rule == "network.python.requests" and f.line == 3 and f.commit == case.commits[0]
    assert any(lbl.startswith("semgrep:python") for lbl in result.data.coverage["docs/example.txt"])


def test_full_scope_reports_the_new_links_not_upstreams(full_result: StageResult):
    links = [f for f in full_result.findings
             if f.rule == "obfuscation.builtin.symlink-changes-language"]
    assert {f.path for f in links} == {"engine/plugin.py", "engine/legacy.py", "scripts/setup.sh"}
    assert not any(f.inherited for f in links)
    # upstream's text read as Python through the new link: found (inherited: upstream's lines)
    assert "network.python.requests" in _rules_at(full_result, "docs/upstream.txt")


# ------------------------------------------------------------------ item 18: size caps


def test_oversize_files_are_not_checked_quickly(diff_result: tuple[StageResult, float]):
    result, seconds = diff_result
    assert seconds < 120  # without the cap: ten minutes and gigabytes
    reasons = dict(line.split(": ", 1) for line in result.not_checked)
    assert "too large to scan" in reasons["engine/tables.py"]
    assert "a line of" in reasons["engine/wide.sh"]
    assert "docs/big.md" not in reasons  # text needs no rules: skipped, with its reason
    assert any(s.startswith("docs/big.md: too large") for s in result.data.skipped)
    assert result.status.value == "incomplete"


def test_caps_unit() -> None:
    assert longest_line("ab\n\nabcd") == 4 and longest_line("") == 0
    assert oversize("a.py", "python", "x = 1\n", 6) is None
    big = oversize("a.py", "python", "x" * (MAX_LINE + 1), MAX_LINE + 1)
    assert big is not None and big.needs_rules
    doc = oversize("a.md", None, "y\n" * MAX_BYTES, 2 * MAX_BYTES)
    assert doc is not None and not doc.needs_rules and "bytes" in doc.reason


# ------------------------------------------------------------------ item 20: non-text codecs


def test_non_text_codecs_are_findings_not_a_crash(diff_result: tuple[StageResult, float]):
    result, _ = diff_result
    assert "obfuscation.builtin.non-text-codec" in _rules_at(result, "engine/rot.py")
    assert "obfuscation.builtin.non-text-codec" in _rules_at(result, "engine/b64.py")
