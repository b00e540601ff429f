"""Issue 33 item 8: a hunk id per hunk (two identical hunks in one file are two hunks), ``review
plan --json`` writes only stdout unless ``--out`` is given, and signing leaves no lock file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, export_tree, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.gitio import Git
from auditor.review.hunks import series_hunks

FORK = "Fork Author <fork@community.example>"
# the same four lines twice, far apart: a change to the middle line of each block gives two hunks
# with the same lines and the same context
BLOCK = "    x = 0\n    y = 1\n    z = 2\n    b = 2\n    x = 0\n    y = 1\n    z = 2\n"
BASE = "def f():\n" + BLOCK + "".join(f"    # filler {i}\n" for i in range(20)) + BLOCK


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def twins(tmp_path: Path) -> dict[str, Any]:
    repo = GitRepo(tmp_path / "vllm")
    repo.commit("upstream", files={"vllm/twins.py": BASE})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("twice the same edit", author=FORK, files={
        "vllm/twins.py": BASE.replace("    b = 2\n", "    b = 20\n")})
    spec = write_spec(tmp_path / "audit.toml", {
        "engine": {"profile": "vllm", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c1]},
        "bundle": {"path": str(export_tree(repo, "series", tmp_path / "bundle"))},
        "review": {"file": "reviews.toml", "required": True}})
    return {"repo": repo, "commit": c1, "spec": spec, "tmp": tmp_path}


def test_two_identical_hunks_in_one_file_have_two_ids(twins: dict[str, Any]) -> None:
    hunks = series_hunks(Git(twins["repo"].path), [twins["commit"]])
    assert len(hunks) == 2 and hunks[0].text == hunks[1].text  # same lines, same context
    assert hunks[0].id != hunks[1].id and hunks[0].digest != hunks[1].digest
    assert [h.occurrence for h in hunks] == [1, 2]
    # the first keeps the content's own digest (ids of series without repeats do not move)
    from auditor.review.hunks import occurrence_digest

    assert hunks[1].digest == occurrence_digest(hunks[0].digest, 2)

    code, out, err = cli("review", "plan", str(twins["spec"]), "--no-scan", "--json",
                         "--reviewers", "1", "--out", str(twins["tmp"] / "packets"))
    assert code == 0, err
    listed = [h["id"] for r in json.loads(out)["reviewers"] for h in r["hunks"]]
    assert len(listed) == 2 and len(set(listed)) == 2
    md = (twins["tmp"] / "packets" / "packet-reviewer-1.md").read_text()
    assert "occurrence 2" in md

    # signing one of them leaves the other unreviewed
    code, _, err = cli("review", "sign", str(twins["spec"]), "--reviewer", "ann",
                       "--hunk", listed[0])
    assert code == 0, err
    code, out, err = cli("review", "status", str(twins["spec"]), "--json")
    assert code == 0, err
    st = json.loads(out)
    assert st["hunks_unreviewed"] == [listed[1]] and st["hunks_unreviewed_total"] == 1


def test_plan_json_without_out_writes_only_stdout(twins: dict[str, Any], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    code, out, err = cli("review", "plan", str(twins["spec"]), "--no-scan", "--json",
                         "--reviewers", "2")
    assert code == 0, err
    assert json.loads(out)["hunks_total"] == 2
    assert os.listdir(cwd) == []  # no review-packets/ here
    assert "no packets written" in err
    # with --out, the packets are written there
    code, out, err = cli("review", "plan", str(twins["spec"]), "--no-scan", "--json",
                         "--reviewers", "2", "--out", "given")
    assert code == 0, err
    assert sorted(p.name for p in (cwd / "given").iterdir()) == [
        "packet-reviewer-1.html", "packet-reviewer-1.md", "packet-reviewer-2.html",
        "packet-reviewer-2.md", "plan.json"]
    # without --json the default folder is still written
    code, out, err = cli("review", "plan", str(twins["spec"]), "--no-scan", "--reviewers", "1")
    assert code == 0 and out == "", err
    assert (cwd / "review-packets" / "plan.json").is_file()


def test_signing_leaves_no_lock_file(twins: dict[str, Any]) -> None:
    hunks = series_hunks(Git(twins["repo"].path), [twins["commit"]])
    for h in hunks:  # twice: the second sign-off takes the lock again after it was removed
        code, _, err = cli("review", "sign", str(twins["spec"]), "--reviewer", "ann",
                           "--hunk", h.id)
        assert code == 0, err
    folder = twins["spec"].parent
    assert (folder / "reviews.toml").is_file()
    assert not (folder / ".reviews.toml.lock").exists()
    assert [p.name for p in folder.iterdir() if p.name.endswith(".lock")] == []


def test_a_lock_file_that_is_a_link_is_refused(twins: dict[str, Any], tmp_path: Path) -> None:
    hunks = series_hunks(Git(twins["repo"].path), [twins["commit"]])
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep\n")
    (twins["spec"].parent / ".reviews.toml.lock").symlink_to(elsewhere)
    code, _, err = cli("review", "sign", str(twins["spec"]), "--reviewer", "ann",
                       "--hunk", hunks[0].id)
    assert code == 2 and "cannot take the lock file" in err
    assert elsewhere.read_text() == "keep\n"
    assert not (twins["spec"].parent / "reviews.toml").exists()
