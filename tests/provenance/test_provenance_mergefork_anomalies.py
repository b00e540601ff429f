"""Anomalies of a merge-based fork are tied to the fork's own commits only (issue 28, measured on
ROCm/vllm): a script upstream made executable on its main, which the fork merged, was reported as
"commit 02751a7a42 (not in the listed series)" — an upstream commit credited as the fork's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import GitRepo, write_spec

FORK = "Fork Author <fork@community.example>"


def _verify(tmp_path: Path, spec: dict[str, Any]) -> dict[str, Any]:
    path = write_spec(tmp_path / "audit.toml", spec)
    res = subprocess.run([sys.executable, "-m", "auditor", "verify", str(path), "--json"],
                         capture_output=True, text=True, timeout=300)
    data: dict[str, Any] = json.loads(res.stdout)
    assert data["ok"] is True and res.returncode in (0, 1), (res.stderr, data["reasons"])
    return data


def _fork_spec(up: GitRepo, fork: GitRepo, archive: Path) -> dict[str, Any]:
    """The spec of a merge-based fork branch ``fork`` over upstream's v1.0, its range listed."""
    return {
        "engine": {"profile": "generic", "version": "1.0"},
        "upstream": {"repo": str(up.path), "ref": "v1.0"},
        "patches": {"repo": str(fork.path), "ref": "fork", "model": "merge",
                    "commits": "range"},
        "bundle": {"path": str(archive), "strip_components": 1},
        "scan": {"scope": "diff"},
    }


def test_an_executable_upstream_merged_in_is_upstreams_and_the_forks_own_is_the_forks(tmp_path):
    up = GitRepo(tmp_path / "upstream")
    up.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n",
                                "ci/test.sh": "echo test\n"})
    up.tag("v1.0")
    up.write("ci/ppc.sh", "echo ppc\n", mode=0o755)
    up.write("ci/test.sh", "echo test\n", mode=0o755)
    upstream_fix = up.commit("upstream: fix the ppc64le CI job")
    fork = GitRepo(tmp_path / "fork")
    fork.git("fetch", "-q", str(up.path), "main:refs/remotes/up/main", "tag", "v1.0")
    fork.git("checkout", "-q", "-b", "fork", "v1.0")
    fork.write("tools/launch.sh", "echo launch\n", mode=0o755)
    own = fork.commit("fork: a launcher", author=FORK)
    fork.git("merge", "--no-ff", "-q", "-m", "Merge remote-tracking branch 'up/main' into fork",
             "up/main")
    archive = fork.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    data = _verify(tmp_path, _fork_spec(up, fork, archive))
    assert data["series"]["upstream_merged"] == [upstream_fix]
    by_path = {f["path"]: f for f in data["findings"] if f["rule"] == "provenance.executable-bit"}
    assert set(by_path) == {"ci/ppc.sh", "ci/test.sh", "tools/launch.sh"}
    assert by_path["tools/launch.sh"]["commit"] == own
    assert not by_path["tools/launch.sh"]["inherited"]
    for path in ("ci/ppc.sh", "ci/test.sh"):  # upstream's: never "commit X (not in the series)"
        assert by_path[path]["commit"] is None and by_path[path]["inherited"] is True, path
    anomalies = {a["path"]: a for a in data["anomalies"]}
    assert anomalies["ci/ppc.sh"].get("inherited") is True and anomalies["ci/ppc.sh"]["commit"] is None
    assert "inherited" not in anomalies["tools/launch.sh"]


def test_the_executable_bit_is_tied_to_the_commit_that_set_it_not_a_later_edit(tmp_path):
    """HabanaAI/vllm-fork v1.18.0: sampler.py was made executable by one commit ("Initial
    commit", 2ab316db) and edited by later ones; the anomaly named the last edit (401acbd24b)."""
    up = GitRepo(tmp_path / "upstream")
    up.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n",
                                "engine/sampler.py": "def sample():\n    return 1\n"})
    up.tag("v1.0")
    fork = GitRepo(tmp_path / "fork")
    fork.git("fetch", "-q", str(up.path), "tag", "v1.0")
    fork.git("checkout", "-q", "-b", "fork", "v1.0")
    fork.write("engine/sampler.py", "def sample():\n    return 2\n", mode=0o755)
    fork.write("tools/run.py", "print('run')\n")
    setter = fork.commit("fork: delayed sampling", author=FORK)
    fork.write("tools/run.py", "print('run')\n", mode=0o755)
    chmod = fork.commit("fork: make the runner executable", author=FORK)
    fork.write("engine/sampler.py", "def sample():\n    return 3\n", mode=0o755)
    fork.write("tools/run.py", "print('run fast')\n", mode=0o755)
    later = fork.commit("fork: cherry pick of a sampling fix", author=FORK)
    archive = fork.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    data = _verify(tmp_path, _fork_spec(up, fork, archive))
    by_path = {a["path"]: a for a in data["anomalies"] if a["kind"] == "executable-bit"}
    assert set(by_path) == {"engine/sampler.py", "tools/run.py"}
    assert by_path["engine/sampler.py"]["commit"] == setter != later
    assert by_path["tools/run.py"]["commit"] == chmod
