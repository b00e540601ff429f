"""The SBOM pedigree of a merge-based fork: the fork's own commits and merges in the artifact's
pedigree; upstream's commits that arrived through the fork (an ``[upstream] also`` release line it
merged, a cherry-pick of an upstream commit) listed apart, on the upstream ancestor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cyclonedx.output import OutputFormat
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation import make_schemabased_validator
from support import GitRepo, write_spec

FORK = "Fork Author <fork@community.example>"


def _sbom(tmp: Path, spec: dict[str, Any]) -> dict[str, Any]:
    path = write_spec(tmp / "audit.toml", spec)
    target = tmp / "out.cdx.json"
    res = subprocess.run([sys.executable, "-m", "auditor", "sbom", str(path), "-o", str(target)],
                         capture_output=True, text=True, timeout=600)
    assert target.is_file(), res.stderr[-3000:]
    text = target.read_text()
    error = make_schemabased_validator(OutputFormat.JSON, SchemaVersion.V1_6).validate_str(text)
    assert error is None, str(error)[:2000]
    return json.loads(text)


def _pedigrees(doc: dict[str, Any]) -> tuple[list[str], list[str], dict[str, Any]]:
    comp = doc["metadata"]["component"]
    own = [c["uid"] for c in comp["pedigree"]["commits"]]
    upstream = next(a for a in comp["pedigree"]["ancestors"] if a["bom-ref"] == "auditor:upstream")
    arrived = [c["uid"] for c in upstream.get("pedigree", {}).get("commits", [])]
    return own, arrived, upstream


def test_a_merged_upstream_release_line_is_upstreams_not_the_forks(tmp_path):
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n"})
    repo.tag("v1.0")
    repo.commit("upstream 1.1", files={"engine/__init__.py": "VERSION = '1.1'\n"})
    repo.tag("v1.1")
    repo.checkout("release-1.0", new=True, start="v1.0")
    backport = repo.commit("backport: a fix", files={"engine/fix.py": "FIXED = True\n"})
    repo.tag("v1.0.1")
    repo.checkout("fork", new=True, start="v1.0")
    own = repo.commit("fork: option", files={"engine/opt.py": "FAST = True\n"}, author=FORK)
    merges = []
    for tag in ("v1.0.1", "v1.1"):
        repo.git("merge", "--no-ff", "-q", "-m", f"Merge tag '{tag}' into fork", tag)
        merges.append(repo.head())
    archive = repo.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    spec: dict[str, Any] = {
        "engine": {"profile": "generic", "version": "1.1"},
        "upstream": {"repo": str(repo.path), "ref": "v1.1", "also": ["v1.0.1"]},
        "patches": {"ref": "fork", "model": "merge", "commits": "range"},
        "bundle": {"path": str(archive), "strip_components": 1},
    }
    own_commits, arrived, upstream = _pedigrees(_sbom(tmp_path, spec))
    assert own in own_commits and set(merges) <= set(own_commits)
    assert backport not in own_commits
    assert arrived == [backport]
    assert {"name": "auditor:arrived:also", "value": backport} in upstream["properties"]
    assert "arrived through the fork" in upstream["pedigree"]["notes"]
    # without `also`, the backport is one of the fork's commits, and nothing arrived
    spec["upstream"] = {"repo": str(repo.path), "ref": "v1.1"}
    own_commits, arrived, upstream = _pedigrees(_sbom(tmp_path, spec))
    assert backport in own_commits and arrived == [] and "pedigree" not in upstream


def test_a_cherry_picked_upstream_commit_is_listed_apart_from_the_forks(tmp_path):
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0'\n"})
    repo.tag("v1.0")
    fix = repo.commit("a fix", files={"engine/fix.py": "FIXED = True\n"})
    mirror = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(mirror)], check=True)
    repo.checkout("fork", new=True, start="v1.0")
    own = repo.commit("fork: option", files={"engine/opt.py": "FAST = True\n"}, author=FORK)
    repo.clock += 3600
    repo.git("cherry-pick", fix, env={"GIT_COMMITTER_DATE": f"@{repo.clock} +0000"})
    picked = repo.head()
    archive = repo.archive(tmp_path / "fork.tar", "fork", prefix="f/")
    spec: dict[str, Any] = {
        "engine": {"profile": "generic", "version": "1.0"},
        "upstream": {"repo": str(mirror), "ref": "v1.0"},
        "patches": {"repo": str(repo.path), "ref": "fork", "commits": [own, picked]},
        "bundle": {"path": str(archive), "strip_components": 1},
    }
    doc = _sbom(tmp_path, spec)
    own_commits, arrived, upstream = _pedigrees(doc)
    assert own_commits == [own] and arrived == [picked]
    assert {"name": "auditor:arrived:pick", "value": f"{picked} = upstream {fix}"} \
        in upstream["properties"]
    patches = doc["metadata"]["component"]["pedigree"]["patches"]
    assert [p["diff"]["text"]["content"].split()[1] for p in patches] == [own]
