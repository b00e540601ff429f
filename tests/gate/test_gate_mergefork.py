"""The gate for merge-based forks (issue 28, item 5): what the fork itself changes is compared.

One real repository: upstream v1.0 -> v1.1 -> v1.2, and a backport line v1.1.1 (another release
line). Release A of the fork branches from v1.0, adds a commit, merges v1.1 with a line of its own,
cherry-picks the backport, adds a commit. Release B continues A: it merges v1.2 cleanly and adds a
commit. Release C rebuilds A's history from scratch (every commit re-made: new shas, same changes),
its merge carrying the same own line, or another one.

Moving the fork from A to B must show one new commit: not the backport (upstream's, recorded as an
upstream pick) and not the clean merge (it adds nothing). C against A pairs the re-made merge by the
patch-id of its own lines: unchanged when they are the same, changed when they differ.
Runs the real verify and scan stages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, write_spec

from auditor.gate.match import MatchKind
from auditor.gate.result import decide
from auditor.pipeline import audit as run_audit
from auditor.results.verify import VerifyData
from auditor.spec import load_spec
from auditor.stage import Options

FORK = "Fork Author <fork@community.example>"
FORK_ENV = {"GIT_AUTHOR_NAME": "Fork Author", "GIT_AUTHOR_EMAIL": "fork@community.example"}


def _merge(repo: GitRepo, tag: str, own_line: str | None) -> str:
    repo.git("merge", "--no-ff", "--no-commit", "-q", tag)
    if own_line is not None:
        path = repo.path / "engine" / "util.py"
        path.write_text(path.read_text() + own_line)
    repo.git("add", "-A")
    repo.clock += 60
    repo.git("commit", "-q", "-m", f"Merge tag '{tag}' into fork",
             env={**FORK_ENV, "GIT_COMMITTER_DATE": f"@{repo.clock} +0000",
                  "GIT_AUTHOR_DATE": f"@{repo.clock} +0000"})
    return repo.head()


def _fork_history(repo: GitRepo, branch: str, own_line: str | None, backport: str) -> None:
    repo.checkout(branch, new=True, start="v1.0")
    repo.commit("fork: a kernel option", files={
        "engine/kernels.py": "def fast_path(x):\n    return x * 2\n"}, author=FORK)
    _merge(repo, "v1.1", own_line)
    repo.clock += 60
    repo.git("cherry-pick", backport, env={"GIT_COMMITTER_DATE": f"@{repo.clock} +0000"})
    repo.commit("fork: docs", files={"engine/README.md": "fork notes\n"}, author=FORK)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gate-mergefork")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0'\n",
        "engine/util.py": "def helper():\n    return 1\n",
        "engine/server.py": "def serve(host='127.0.0.1'):\n    return host\n",
    })
    repo.tag("v1.0")
    repo.commit("upstream fix", files={"engine/util.py": "def helper():\n    return 2\n"})
    repo.tag("v1.1")
    repo.checkout("release-1.1", new=True)
    backport = repo.commit("security: bound the host name", files={
        "engine/server.py": "def serve(host='127.0.0.1'):\n    return host[:253]\n"})
    repo.tag("v1.1.1")
    repo.checkout("main")
    repo.commit("upstream feature", files={"engine/__init__.py": "VERSION = '1.2'\n"})
    repo.tag("v1.2")

    _fork_history(repo, "fork-a", "# merged for the fork\n", backport)
    repo.checkout("fork-b", new=True)
    _merge(repo, "v1.2", None)
    repo.commit("fork: a faster path", files={
        "engine/kernels.py": "def fast_path(x):\n    return x << 1\n"}, author=FORK)
    _fork_history(repo, "fork-c", "# merged for the fork\n", backport)
    _fork_history(repo, "fork-d", "# merged for the fork, and more\n", backport)

    def spec(name: str, ref: str, branch: str) -> Path:
        return write_spec(tmp / f"{name}.toml", {
            "engine": {"profile": "generic", "version": ref.lstrip("v")},
            "upstream": {"repo": str(repo.path), "ref": ref, "also": ["v1.1.1"]},
            "patches": {"ref": branch, "model": "merge", "commits": "range"},
            "bundle": {"path": str(repo.archive(tmp / f"{name}.tar.gz", branch,
                                                prefix="engine/")), "strip_components": 1},
            "scan": {"scope": "diff"},
        })

    audits = {}
    for name, ref in (("a", "v1.1"), ("b", "v1.2"), ("c", "v1.1"), ("d", "v1.1")):
        audits[name] = run_audit(load_spec(spec(name, ref, f"fork-{name}")),
                                 Options(reproducible=True), tmp / f"out-{name}")
    return {"audits": audits, "repo": repo}


def _verify(audit: Any) -> VerifyData:
    data = audit.stages["verify"].data_as(VerifyData)
    assert data is not None and data.ok, audit.stages["verify"].reasons
    return data


def test_moving_to_a_new_tag_shows_only_the_forks_own_new_commit(case: dict[str, Any]) -> None:
    a, b = case["audits"]["a"], case["audits"]["b"]
    series_b = _verify(b).proof.series  # type: ignore[union-attr]
    assert len(series_b.upstream_picks) == 1 and len(series_b.merges) == 2
    g = decide(a, b)
    kinds = [(m.kind, (m.new or m.old).subject) for m in g.series]  # type: ignore[union-attr]
    assert kinds == [(MatchKind.UNCHANGED, "fork: a kernel option"),
                     (MatchKind.UNCHANGED, "Merge tag 'v1.1' into fork"),
                     (MatchKind.UNCHANGED, "fork: docs"),
                     (MatchKind.ADDED, "fork: a faster path")]
    line = next(r for r in g.reasons if r.startswith("series:"))
    assert line == ("series: 3 unchanged, 0 changed, 1 new, 0 dropped commit(s) since the "
                    "baseline (the fork's own; 1 upstream commit(s) applied again and "
                    "1 clean merge(s) left out)")


def test_a_remade_merge_pairs_by_its_own_lines(case: dict[str, Any]) -> None:
    a, c, d = (case["audits"][k] for k in "acd")
    merge_a = next(iter(_verify(a).proof.series.merge_patch_ids.items()))  # type: ignore[union-attr]
    merge_c = next(iter(_verify(c).proof.series.merge_patch_ids.items()))  # type: ignore[union-attr]
    assert merge_a[0] != merge_c[0] and merge_a[1] == merge_c[1]  # new sha, same own lines
    same = {(m.new or m.old).subject: m.kind for m in decide(a, c).series}  # type: ignore[union-attr]
    assert same == {"fork: a kernel option": MatchKind.UNCHANGED,
                    "Merge tag 'v1.1' into fork": MatchKind.UNCHANGED,
                    "fork: docs": MatchKind.UNCHANGED}
    other = {(m.new or m.old).subject: m.kind for m in decide(a, d).series}  # type: ignore[union-attr]
    assert other["Merge tag 'v1.1' into fork"] is MatchKind.CHANGED
    assert other["fork: a kernel option"] is MatchKind.UNCHANGED
