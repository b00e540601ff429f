"""The result cache: a re-run scans nothing, an upgrade scans only the changed files, and a file
semgrep cannot parse stays not checked (INCOMPLETE) whether its result is fresh or cached."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from scancase import FORK, bundle_of, context, workspace, write_rules
from support import GitRepo

from auditor.model import Category, StageResult, StageStatus
from auditor.scan.stage import ScanStage

BROKEN = "def f(:\n  )))) ]]] class class\nimport\nrequests.get(1)\n"


@dataclass
class Runs:
    first: StageResult
    again: StageResult
    upgrade: StageResult
    upgrade_again: StageResult
    commits: dict[str, str]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    tmp = tmp_path_factory.mktemp("scan-cache")
    rules = write_rules(tmp / "rules")
    cache = tmp / "cache"
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/a.py": "def a():\n    return 1\n",
        "engine/b.py": "def b():\n    return 2\n",
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("phone home", files={
        "engine/net.py": "import requests\n\n\ndef ping():\n"
                         "    requests.get('https://collect.example/ping')\n"}, author=FORK)
    repo.checkout("series2", new=True)
    c2 = repo.commit("next release", files={
        "engine/b.py": "def b():\n    return 3\n",
        "engine/broken.py": BROKEN}, author=FORK)

    def run(name: str, head: str, commits: list[str]) -> StageResult:
        bundle = bundle_of(repo, head, tmp / f"bundle-{head}")
        ws = workspace(repo, "v1.0.0", head, bundle)
        ctx = context(tmp / name, repo, commits, bundle, ws, cache=cache, head_ref=head)
        return ScanStage(rules_dir=rules).run(ctx)

    return Runs(
        first=run("first", "series", [c1]),
        again=run("again", "series", [c1]),
        upgrade=run("upgrade", "series2", [c1, c2]),
        upgrade_again=run("upgrade-again", "series2", [c1, c2]),
        commits={"c1": c1, "c2": c2},
    )


def test_first_run_scans_and_finds(runs: Runs):
    r = runs.first
    assert r.status is StageStatus.OK, r.not_checked
    assert r.to_json()["cache"]["hits"] == 0 and r.to_json()["cache"]["misses"] > 0
    assert r.to_json()["cache"]["scanned"]["semgrep"] == 1
    (f,) = [f for f in r.findings if f.category is Category.NETWORK and f.scanner == "semgrep"]
    assert (f.path, f.line, f.commit) == ("engine/net.py", 5, runs.commits["c1"])


def test_second_run_runs_no_scanner(runs: Runs):
    cache = runs.again.to_json()["cache"]
    assert cache["misses"] == 0 and cache["scanned"] == {}
    assert cache["hits"] == runs.first.to_json()["cache"]["misses"]
    assert runs.again.to_json() == runs.first.to_json() | {"cache": cache}


def test_upgrade_scans_only_changed_files(runs: Runs):
    cache = runs.upgrade.to_json()["cache"]
    # engine/b.py and engine/broken.py are new content; engine/net.py comes from the cache
    assert cache["scanned"] == {"semgrep": 2, "bandit": 2, "builtin": 2, "coding": 2,
                                "python-syntax": 2}
    assert cache["hits"] == 5  # net.py from the cache: semgrep, bandit, builtin, coding, syntax
    assert any(f.path == "engine/net.py" and f.commit == runs.commits["c1"]
               for f in runs.upgrade.findings)


def test_unparsable_file_makes_the_scan_incomplete(runs: Runs):
    for r in (runs.upgrade, runs.upgrade_again):
        assert r.status is StageStatus.INCOMPLETE
        (line,) = [n for n in r.not_checked if n.startswith("engine/broken.py:")]
        assert "semgrep" in line
        assert "engine/broken.py" not in r.to_json()["checked_files"]
        assert "engine/b.py" in r.to_json()["checked_files"]
    # the parse error is a lasting result: cached, and still not checked
    assert runs.upgrade_again.to_json()["cache"]["misses"] == 0
    assert runs.upgrade_again.findings == runs.upgrade.findings
