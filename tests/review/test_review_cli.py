"""``auditor review plan|sign|status`` end to end, the review stage in the audit, and the gate."""

from __future__ import annotations

import json
from typing import Any

from support import write_spec
from typer.testing import CliRunner

from auditor.cli import app

FORK = "Fork Author <fork@community.example>"


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    stderr = res.stderr if hasattr(res, "stderr") else ""
    assert "Traceback" not in stderr + res.stdout, stderr
    return res.exit_code, res.stdout, stderr


def plan(case: dict[str, Any], *extra: str) -> dict[str, Any]:
    code, out, err = cli("review", "plan", str(case["spec"]), "--no-scan", "--json",
                         "--out", str(case["tmp"] / "packets"), *extra)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def status(case: dict[str, Any]) -> dict[str, Any]:
    code, out, err = cli("review", "status", str(case["spec"]), "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_plan_sign_status_end_to_end(case: dict[str, Any]) -> None:
    data = plan(case, "--reviewer", "ann", "--reviewer", "bo")
    assert data["lines_total"] == sum(r["lines"] for r in data["reviewers"])
    assert data["hunks_total"] == sum(len(r["hunks"]) for r in data["reviewers"])
    areas = {a for r in data["reviewers"] for a in r["areas"]}
    assert {"kernels", "telemetry", "install"} <= areas
    packets = case["tmp"] / "packets"
    assert (packets / "packet-ann.md").is_file() and (packets / "packet-bo.html").is_file()
    md = (packets / "packet-ann.md").read_text()
    assert "What to look for" in md and "not scanned" in md

    st = status(case)
    assert st["lines_signed"] == 0 and len(st["hunks_unreviewed"]) == data["hunks_total"]

    ann = data["reviewers"][0]
    code, _, err = cli("review", "sign", str(case["spec"]), "--reviewer", "ann", "--all-of", "ann",
                       "--plan", str(packets / "plan.json"))
    assert code == 0, err
    one = data["reviewers"][1]["hunks"][0]["id"]
    code, _, err = cli("review", "sign", str(case["spec"]), "--reviewer", "bo", "--hunk", one[:10],
                       "--verdict", "concern", "--note", "why \x1b[31m<b>")
    assert code == 0, err
    st = status(case)
    assert st["lines_signed"] == ann["lines"] + data["reviewers"][1]["hunks"][0]["lines"]
    assert st["by_reviewer"]["ann"]["hunks"] == len(ann["hunks"])
    assert st["concerns"][0]["hunk"] == one and st["concerns"][0]["note"] == "why \x1b[31m<b>"
    assert set(st["by_area"]) == areas
    assert one not in st["hunks_unreviewed"]
    code, _, err = cli("review", "status", str(case["spec"]))
    assert code == 0 and "<b>" in err and "\x1b" not in err  # the note is shown, escaped

    code, _, err = cli("review", "sign", str(case["spec"]), "--reviewer", "bo", "--hunk",
                       "deadbeefdeadbeef")
    assert code == 2 and "no hunk of the series" in err
    code, _, err = cli("review", "sign", str(case["spec"]), "--reviewer", "bo", "--hunk", one,
                       "--verdict", "maybe")
    assert code == 2


def test_sign_off_is_void_after_the_hunk_is_edited(case: dict[str, Any]) -> None:
    data = plan(case, "--reviewers", "1")
    hunks = data["reviewers"][0]["hunks"]
    kernel = next(h for h in hunks if h["path"] == "csrc/kernel.cu")
    assert cli("review", "sign", str(case["spec"]), "--reviewer", "ann", "--hunk",
               kernel["id"])[0] == 0
    assert kernel["id"] not in status(case)["hunks_unreviewed"]
    # the author edits the first commit's hunk (same subject, one character) and force-pushes
    repo = case["repo"]
    c1, c2, c3 = case["commits"]
    repo.checkout("edited", new=True, start="v1.0.0")
    text = (repo.path / "csrc/kernel.cu").read_text()
    n1 = repo.commit("kernel: tune", author=FORK, files={
        "csrc/kernel.cu": text.replace("// line 5\n", "// line 5 tuned!\n")
        .replace("// line 30\n", "// line 30 tuned\n// extra\n")})
    repo.git("cherry-pick", "--allow-empty", c2, c3)
    commits = repo.git("rev-list", "--reverse", "v1.0.0..edited").split()
    assert len(commits) == 3 and commits[0] == n1
    raw = dict(case["raw"])
    raw["patches"] = {"ref": "edited", "commits": commits}
    write_spec(case["spec"], raw)
    st = status(case)
    assert kernel["id"] in st["hunks_unreviewed"] or st["void"]
    assert [v["hunk"] for v in st["void"]] == [kernel["id"]]
    assert "edited or dropped" in st["void"][0]["why"]


def test_bad_reviews_file_exits_2_before_any_work(case: dict[str, Any]) -> None:
    (case["tmp"] / "reviews.toml").write_text('[[signoff]]\nreviewer = "ann"\nverdict = 3\n')
    for args in (("review", "status", str(case["spec"])),
                 ("audit", str(case["spec"]), "--out", str(case["tmp"] / "out"))):
        code, _, err = cli(*args)
        assert code == 2
        assert "reviews.toml" in err and "signoff[0]" in err
    assert not (case["tmp"] / "out").exists()


def test_audit_counts_unreviewed_lines_blockers_and_concerns(case: dict[str, Any]) -> None:
    data = plan(case, "--reviewers", "1")
    hunks = data["reviewers"][0]["hunks"]
    docker = next(h for h in hunks if h["path"] == "docker/Dockerfile")
    out = case["tmp"] / "out"
    code, _, err = cli("audit", str(case["spec"]), "--out", str(out))
    audit = json.loads((out / "audit.json").read_text())
    assert audit["verdict"] == "REVIEW" and code == 1
    review = audit["stages"]["review"]
    assert review["status"] == "ok" and review["lines_signed"] == 0
    assert any("review.unsigned.kernels" in r and "review.unsigned.install" in r
               for r in audit["reasons"])
    report = (out / "report.md").read_text()
    assert f"0 of {data['lines_total']} changed lines signed off" in report
    assert "Review coverage" in (out / "report.html").read_text()

    for h in hunks:
        verdict = "blocker" if h is docker else "ok"
        note = "third-party index <img src=x onerror=alert(1)>" if h is docker else ""
        assert cli("review", "sign", str(case["spec"]), "--reviewer", "ann", "--hunk", h["id"],
                   "--verdict", verdict, "--note", note)[0] == 0
    code, _, _ = cli("audit", str(case["spec"]), "--out", str(out))
    audit = json.loads((out / "audit.json").read_text())
    assert audit["verdict"] == "FAIL" and code == 1
    blockers = [f for f in audit["findings"] if f["rule"] == "review.blocker"]
    assert len(blockers) == 1 and blockers[0]["action"] == "block"
    assert blockers[0]["path"] == "docker/Dockerfile"
    assert not any(f["rule"].startswith("review.unsigned") for f in audit["findings"])
    html = (out / "report.html").read_text()
    assert "<img src=x" not in html
    assert "every hunk signed off" in (out / "report.md").read_text()


def test_gate_carries_signoffs_of_unchanged_hunks(case: dict[str, Any]) -> None:
    data = plan(case, "--reviewers", "1")
    for h in data["reviewers"][0]["hunks"]:
        assert cli("review", "sign", str(case["spec"]), "--reviewer", "ann", "--hunk",
                   h["id"])[0] == 0
    base = case["tmp"] / "base"
    code, _, err = cli("audit", str(case["spec"]), "--out", str(base))
    assert code == 0, err  # everything signed off, nothing else requested: PASS
    # upgrade: upstream v1.1.0 (a new file), the series rebased; the script commit is dropped
    # and a new commit added; the reviews file starts empty for the new version
    repo = case["repo"]
    repo.checkout("main")
    repo.commit("upstream 1.1", files={"vllm/new.py": "x = 2\n"})
    repo.tag("v1.1.0")
    c1, c2, _c3 = case["commits"]
    repo.checkout("series2", new=True, start="v1.1.0")
    repo.git("cherry-pick", c1, c2)
    repo.commit("entrypoint", author=FORK, files={
        "vllm/entrypoints/api.py": "def serve():\n    return 2\n"})
    commits = repo.git("rev-list", "--reverse", "v1.1.0..series2").split()
    from support import export_tree

    raw = dict(case["raw"])
    raw["upstream"] = {"repo": str(repo.path), "ref": "v1.1.0"}
    raw["patches"] = {"ref": "series2", "commits": commits}
    raw["bundle"] = {"path": str(export_tree(repo, "series2", case["tmp"] / "bundle2"))}
    raw["review"] = {"file": "reviews-1.1.toml", "required": True}
    spec2 = write_spec(case["tmp"] / "audit2.toml", raw)
    code, out, err = cli("gate", str(spec2), "--baseline", str(base / "audit.json"), "--out",
                         str(case["tmp"] / "gate"), "--json")
    g = json.loads(out)
    assert g["verdict"] == "REVIEW" and code == 1
    review = g["review"]
    carried = {s["path"] for s in review["carried"]}
    assert carried == {"csrc/kernel.cu", "vllm/envs.py", "docker/Dockerfile"}
    assert [s["path"] for s in review["no_longer_needed"]] == ["tools/run.sh"]
    assert len(review["asked"]) == 1  # only the new entrypoint hunk
    assert any("review.unsigned.entrypoints" in r for r in g["reasons"])
    assert not any("review.unsigned.kernels" in r for r in g["reasons"])
