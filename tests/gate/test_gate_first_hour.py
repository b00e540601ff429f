"""Issue 33 item 9: the gate's review sentence counts what it says (a hunk unsigned in the baseline
too is not "changed or new since then"), and a finding without a line prints without ``:0``.

Real git repositories, the real audit (verify + review stages) and the real ``auditor gate``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, export_tree, write_spec
from typer.testing import CliRunner

from auditor.cli import app

FORK = "Fork Author <fork@community.example>"
BASE = "".join(f"x{i} = {i}\n" for i in range(1, 41))
ELF = b"\x7fELF\x02\x01\x01" + bytes(57)


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    return res.exit_code, res.stdout, res.stderr


def _spec(tmp: Path, name: str, repo: GitRepo, branch: str, commits: list[str]) -> Path:
    return write_spec(tmp / f"{name}.toml", {
        "engine": {"profile": "vllm", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": branch, "commits": commits},
        "bundle": {"path": str(export_tree(repo, branch, tmp / f"bundle-{name}"))},
        "review": {"file": "reviews.toml", "required": True}})


@pytest.fixture(scope="module")
def upgrade(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gate-first-hour")
    repo = GitRepo(tmp / "vllm")
    repo.commit("upstream", files={"vllm/config.py": BASE})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("two edits", author=FORK, files={
        "vllm/config.py": BASE.replace("x5 = 5\n", "x5 = 50\n").replace("x30 = 30\n",
                                                                         "x30 = 300\n")})
    repo.checkout("series-bin", new=True)
    c2 = repo.commit("prebuilt kernel", author=FORK, files={"vllm/_C.so": ELF})
    old = _spec(tmp, "old", repo, "series", [c1])
    new = _spec(tmp, "new", repo, "series-bin", [c1, c2])
    code, out, err = cli("review", "plan", str(old), "--no-scan", "--json", "--reviewers", "1")
    assert code == 0, err
    hunks = json.loads(out)["reviewers"][0]["hunks"]
    assert len(hunks) == 2
    code, _, err = cli("review", "sign", str(old), "--reviewer", "ann", "--hunk", hunks[0]["id"])
    assert code == 0, err
    base = tmp / "base"
    code, _, err = cli("audit", str(old), "--out", str(base))
    assert code == 1, err  # one hunk unsigned: REVIEW
    return {"tmp": tmp, "old": old, "new": new, "baseline": base / "audit.json"}


def test_unchanged_series_does_not_say_changed_hunks_need_a_signoff(
        upgrade: dict[str, Any]) -> None:
    code, out, err = cli("gate", str(upgrade["old"]), "--baseline", str(upgrade["baseline"]),
                         "--out", str(upgrade["tmp"] / "gate-same"), "--json")
    g = json.loads(out)
    assert "1 unchanged, 0 changed, 0 new" in " ".join(g["reasons"])
    review = next(r for r in g["reasons"] if "carried from the baseline (hunk" in r)
    assert "1 hunk(s) still need a sign-off: 0 changed or new since the baseline, 1 unsigned " \
           "in the baseline too" in review
    assert "changed or new since then" not in review
    assert g["review"]["asked_new"] == [] and len(g["review"]["unsigned_before"]) == 1
    assert "0 changed or new since the baseline" in err


def test_gate_prints_a_binary_finding_without_line_zero(upgrade: dict[str, Any]) -> None:
    code, out, err = cli("gate", str(upgrade["new"]), "--baseline", str(upgrade["baseline"]),
                         "--out", str(upgrade["tmp"] / "gate-bin"), "--json")
    g = json.loads(out)
    binary = [f for f in g["findings"]["new"] if f["path"] == "vllm/_C.so"]
    assert binary and all(f["line"] == 0 for f in binary), g["findings"]["new"]
    shown = [line for line in err.splitlines() if "vllm/_C.so" in line and "new" in line]
    assert shown, err
    assert all("vllm/_C.so:0" not in line for line in shown)
    review = next(r for r in g["reasons"] if "carried from the baseline (hunk" in r)
    assert "1 changed or new since the baseline, 1 unsigned in the baseline too" in review
