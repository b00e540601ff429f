"""The gate end to end on two versions of a small engine made with real git repositories.

Upstream v1.0.0 with a three-commit series (one commit spawns a subprocess: a `review` finding in
the baseline); upstream v2.0.0 with the series rebased (cherry-picked) onto it:
- unchanged rebase: every patch keeps its patch-id, the finding is carried, the gate passes (exit 0);
- changed: the subprocess commit now also unpickles data (a new `block` finding), the helper commit
  is dropped and a new commit appears: the gate fails (exit 1) and lists each.
Runs the real verify and scan stages (git, semgrep, bandit); one baseline audit is shared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, export_tree, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.model import AuditResult, StageStatus
from auditor.pipeline import audit as run_audit
from auditor.spec import load_spec
from auditor.stage import Options

AUTHOR = "Fork Author <fork@community.example>"
WORKER = "import subprocess\n\n\ndef start():\n    return subprocess.run(['nproc'], check=False)\n"
WORKER_PICKLE = ("import pickle\nimport subprocess\n\n\ndef start():\n"
                 "    return subprocess.run(['nproc'], check=False)\n\n\n"
                 "def load(blob):\n    return pickle.loads(blob)\n")
POLICY = ('[actions]\nprocess-exec = "review"\nunsafe-deserialization = "block"\n'
          'network = "block"\n')


def _pick(repo: GitRepo, sha: str) -> str:
    repo.clock += 60
    stamp = {"GIT_COMMITTER_DATE": f"@{repo.clock} +0000"}
    repo.git("cherry-pick", "--allow-empty", sha, env=stamp)
    return repo.head()


def _spec(tmp: Path, name: str, repo: GitRepo, ref: str, branch: str, commits: list[str],
          version: str) -> Path:
    bundle = export_tree(repo, branch, tmp / f"bundle-{name}")
    return write_spec(tmp / f"{name}.toml", {
        "engine": {"profile": "generic", "version": version},
        "upstream": {"repo": str(repo.path), "ref": ref},
        "patches": {"ref": branch, "commits": commits},
        "bundle": {"path": str(bundle)},
        "scan": {"policy": str(tmp / "policy.toml")},
    })


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gate-e2e")
    (tmp / "policy.toml").write_text(POLICY)
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0.0'\n",
                                  "engine/server.py": "def serve(host='127.0.0.1'):\n"
                                                      "    return host\n"})
    repo.tag("v1.0.0")
    repo.checkout("series-v1", new=True)
    c1 = repo.commit("refactor server", author=AUTHOR, files={
        "engine/server.py": "def serve(host='127.0.0.1', port=8000):\n    return host, port\n"})
    c2 = repo.commit("spawn worker", author=AUTHOR, files={"engine/worker.py": WORKER})
    c3 = repo.commit("add helper", author=AUTHOR, files={"engine/util.py": "def helper():\n"
                                                                          "    return 1\n"})
    repo.checkout("main")
    repo.commit("release 2.0.0", files={"engine/__init__.py": "VERSION = '2.0.0'\n",
                                        "engine/metrics.py": "COUNT = 0\n"})
    repo.tag("v2.0.0")
    # the same series, rebased
    repo.checkout("series-v2", new=True)
    same = [_pick(repo, c) for c in (c1, c2, c3)]
    # the series rebased, with the worker patch changed, the helper dropped, a commit added
    repo.checkout("series-v2x", new=True, start="v2.0.0")
    x1 = _pick(repo, c1)
    x2 = repo.commit("spawn worker", author=AUTHOR, files={"engine/worker.py": WORKER_PICKLE})
    x4 = repo.commit("document the server", author=AUTHOR, files={"docs/server.md": "# Server\n"})
    specs = {
        "v1": _spec(tmp, "v1", repo, "v1.0.0", "series-v1", [c1, c2, c3], "1.0.0"),
        "v2": _spec(tmp, "v2", repo, "v2.0.0", "series-v2", same, "2.0.0"),
        "v2x": _spec(tmp, "v2x", repo, "v2.0.0", "series-v2x", [x1, x2, x4], "2.0.0"),
    }
    baseline_dir = tmp / "audit-v1"
    with pytest.MonkeyPatch.context() as mp:  # the session's private cache, as conftest sets it
        mp.setenv("AUDITOR_CACHE", str(tmp_path_factory.getbasetemp() / "auditor-cache"))
        mp.setenv("SEMGREP_ENABLE_VERSION_CHECK", "0")
        baseline = run_audit(load_spec(specs["v1"]), Options(), baseline_dir)
    return {"tmp": tmp, "specs": specs, "baseline": baseline_dir / "audit.json",
            "audit": baseline, "old": [c1, c2, c3], "same": same, "changed": [x1, x2, x4]}


def gate(engine: dict[str, Any], name: str, *extra: str) -> tuple[int, str, dict[str, Any], Path]:
    out = engine["tmp"] / f"gate-{name}"
    res = CliRunner().invoke(app, ["gate", str(engine["specs"][name]), "--baseline",
                                   str(engine["baseline"]), "--out", str(out), "--json", *extra])
    stderr = res.stderr if hasattr(res, "stderr") else ""
    data = json.loads(res.stdout)
    return res.exit_code, stderr, data, out


def test_gate_e2e_baseline_is_a_review(engine: dict[str, Any]) -> None:
    audit: AuditResult = engine["audit"]
    assert audit.stages["verify"].status is StageStatus.OK
    assert audit.stages["scan"].status is StageStatus.OK, audit.stages["scan"].not_checked
    finds = [f for f in audit.findings if f.counts]
    assert [(f.category.value, f.action.value, f.commit) for f in finds] == [
        ("process-exec", "review", engine["old"][1])]


def test_gate_e2e_unchanged_rebase_passes_with_reviews_kept(engine: dict[str, Any]) -> None:
    code, stderr, data, out = gate(engine, "v2")
    assert data["verdict"] == "PASS", data["reasons"]
    assert code == 0
    assert data["audit"]["verdict"] == "REVIEW"  # alone it would need a review again
    kinds = [(c["kind"], c["old"]["sha"], c["new"]["sha"]) for c in data["series"]["commits"]]
    assert kinds == [("unchanged", o, n) for o, n in zip(engine["old"], engine["same"],
                                                         strict=True)]
    assert data["findings"]["new"] == []
    carried = data["findings"]["carried"]
    assert [(f["category"], f["commit"]) for f in carried] == [("process-exec",
                                                                engine["same"][1])]
    assert data["series"]["commits"][1]["findings"] == {"new": 0, "carried": 1}
    for name in ("gate.json", "gate.md", "audit.json", "report.md", "report.html",
                 "findings.sarif"):
        assert (out / name).is_file(), name
    assert " = " in stderr and "gate verdict: PASS" in stderr
    assert "kept: reviewed in the baseline" in (out / "gate.md").read_text()


def test_gate_e2e_changed_patch_new_finding_fails_and_lists_changes(
        engine: dict[str, Any]) -> None:
    code, stderr, data, out = gate(engine, "v2x")
    assert data["verdict"] == "FAIL", data["reasons"]
    assert code == 1
    old, new = engine["old"], engine["changed"]
    kinds = [(c["kind"], c["old"]["sha"] if c["old"] else None,
              c["new"]["sha"] if c["new"] else None) for c in data["series"]["commits"]]
    assert kinds == [("unchanged", old[0], new[0]), ("changed", old[1], new[1]),
                     ("added", None, new[2]), ("dropped", old[2], None)]
    news = [(f["category"], f["action"], f["commit"]) for f in data["findings"]["new"]]
    assert ("unsafe-deserialization", "block", new[1]) in news
    assert all(f["commit"] == new[1] for f in data["findings"]["new"])
    # the subprocess line is unchanged inside the changed patch: still carried by fingerprint
    assert [(f["category"], f["commit"]) for f in data["findings"]["carried"]] == [
        ("process-exec", new[1])]
    assert any("blocking finding" in r for r in data["reasons"])
    md = (out / "gate.md").read_text()
    assert "**review again**: the patch changed" in md and "**review**: new commit" in md
    assert "| dropped |" in md
    assert " ! " in stderr and " < " in stderr and " > " in stderr


def test_gate_e2e_fail_on_block_still_fails_on_block(engine: dict[str, Any]) -> None:
    code, _, data, _ = gate(engine, "v2x", "--fail-on", "block")
    assert data["verdict"] == "FAIL" and code == 1
