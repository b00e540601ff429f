"""Waivers apply to every stage's findings; `auditor waive` writes them; stale ones are reported.

Issue 33 items 5 and 6, on the demo (real git, semgrep, bandit, nvcc where the build runs): the
audit is run once as it is, `auditor waive` writes a stanza for every finding the report shows in
the verify and scan stages, and the audit is run again with that waivers file plus one stale
waiver. Before the fix, verify's `provenance.executable-bit` stayed unwaived (only scan, deps and
build applied waivers), and a waiver of a merged finding left the rules merged into it blocking.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.demo import prepare
from auditor.model import STAGES, Action, AuditResult, StageStatus, compute_verdict
from auditor.pipeline import run_pipeline
from auditor.spec import load_spec
from auditor.stage import Options
from auditor.waive import WaiverRequest, waive

pytestmark = pytest.mark.slow

FUTURE = dt.date.today() + dt.timedelta(days=60)
STALE = ('[[waiver]]\nrule = "network.python.requests"\npath = "tinyllm/gone.py"\n'
         'fingerprint = "0123456789abcdef0123456789abcdef"\nreason = "the old beacon"\n'
         f'owner = "ops@example.org"\nexpires = {FUTURE.isoformat()}\n')


def _run(spec_path: Path, work: Path) -> AuditResult:
    spec = load_spec(spec_path)
    (work / "out").mkdir(parents=True)
    audit, _ = run_pipeline(spec, Options(), STAGES, work / "out", work)
    return audit


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("waivers") / "example"
    spec_path = prepare(root)
    text = spec_path.read_text(encoding="utf-8")
    assert 'scope = "diff"\n' in text
    spec_path.write_text(text.replace('scope = "diff"\n',
                                      'scope = "diff"\nwaivers = "waivers.toml"\n'),
                         encoding="utf-8")
    waivers = root / "waivers.toml"
    waivers.write_text("", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as work:
        mp.setenv("AUDITOR_CACHE", str(tmp_path_factory.getbasetemp() / "auditor-cache"))
        mp.setenv("SEMGREP_ENABLE_VERSION_CHECK", "0")
        before = _run(spec_path, Path(work) / "a")
        audit_json = root / "audit-before.json"
        audit_json.write_text(json.dumps(before.to_json()), encoding="utf-8")
        shown = [f for st in ("verify", "scan") for f in before.stages[st].findings
                 if f.counts and f.action is not Action.INFO]
        waive(audit_json, WaiverRequest(fingerprints=tuple(f.fingerprint for f in shown),
                                        reason="accepted for the test", owner="sec@example.org",
                                        expires=FUTURE), waivers)
        waivers.write_text(waivers.read_text(encoding="utf-8") + "\n" + STALE, encoding="utf-8")
        after = _run(spec_path, Path(work) / "b")
    return {"before": before, "after": after, "shown": shown, "audit_json": audit_json,
            "waivers": waivers}


def test_verify_findings_are_waivable(runs: dict[str, Any]) -> None:
    (before,) = [f for f in runs["before"].stages["verify"].findings
                 if f.rule == "provenance.executable-bit"]
    assert not before.waived
    (after,) = [f for f in runs["after"].stages["verify"].findings
                if f.rule == "provenance.executable-bit"]
    assert after.waived and after.fingerprint == before.fingerprint
    assert "accepted for the test" in (after.waiver or "")


def test_waiving_what_the_report_shows_clears_verify_and_scan(runs: dict[str, Any]) -> None:
    before = runs["before"]
    merged = [f for f in before.stages["scan"].findings if f.also and f.action is Action.BLOCK]
    assert merged, "the demo has a blocking finding merged from several rules"
    assert compute_verdict([before.stages["scan"]])[0].value == "FAIL"
    after = runs["after"]
    for name in ("verify", "scan"):
        counting = [f for f in after.stages[name].findings
                    if f.counts and f.action is not Action.INFO]
        assert counting == [], (name, [(f.rule, f.path, f.line) for f in counting])
        # what the findings give (a check that could not run is another test's matter)
        judged = replace(after.stages[name], status=StageStatus.OK, not_checked=())
        assert compute_verdict([judged])[0].value == "PASS"
    # the merged finding is still shown with its rules, waived as one
    for m in merged:
        (again,) = [f for f in after.stages["scan"].findings
                    if (f.path, f.line, f.category) == (m.path, m.line, m.category)]
        assert again.waived and again.fingerprint == m.fingerprint and again.also == m.also


def test_a_stale_waiver_is_an_info_finding_naming_it(runs: dict[str, Any]) -> None:
    unused = [f for f in runs["after"].findings if f.rule == "policy.waiver-unused"]
    assert len(unused) == 1
    (u,) = unused
    assert u.action is Action.INFO and u.path == "tinyllm/gone.py"
    assert "network.python.requests" in u.message and "0123456789abcdef" in u.message
    _, reasons = compute_verdict(runs["after"].stages.values())
    assert not [r for r in reasons if "waiver-unused" in r]  # info: no weight in the verdict
    assert not [f for f in runs["before"].findings if f.rule == "policy.waiver-unused"]


def test_the_stanzas_name_the_merged_rules(runs: dict[str, Any]) -> None:
    text = runs["waivers"].read_text(encoding="utf-8")
    assert text.count("[[waiver]]") == len(runs["shown"]) + 1
    merged = [f for f in runs["shown"] if f.also]
    for f in merged:
        assert f"also covers the rules merged into this finding: {', '.join(f.also)}" in text


def test_waive_cli_refuses_bad_requests(runs: dict[str, Any], tmp_path: Path) -> None:
    audit_json = str(runs["audit_json"])
    fp = runs["shown"][0].fingerprint
    ok = ["waive", audit_json, "--finding", fp, "--owner", "o", "--reason", "r"]
    cases = {
        "empty reason": ["waive", audit_json, "--finding", fp, "--owner", "o", "--reason", " ",
                         "--expires", FUTURE.isoformat()],
        "past date": [*ok, "--expires", "2020-01-01"],
        "bad date": [*ok, "--expires", "next week"],
        "unknown fingerprint": ["waive", audit_json, "--finding", "f" * 32, "--owner", "o",
                                "--reason", "r", "--expires", FUTURE.isoformat()],
        "short prefix": ["waive", audit_json, "--finding", fp[:4], "--owner", "o",
                         "--reason", "r", "--expires", FUTURE.isoformat()],
    }
    runner = CliRunner()
    for what, args in cases.items():
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (what, res.output)
        assert "Traceback" not in res.output
    out = tmp_path / "w.toml"
    res = runner.invoke(app, [*ok, "--expires", FUTURE.isoformat(), "-o", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*ok, "--expires", FUTURE.isoformat(), "-o", str(out)])
    assert res.exit_code == 0 and out.read_text().count("[[waiver]]") == 2  # appended
    res = runner.invoke(app, ["waive", audit_json, "--finding", fp[:10], "--owner", "o",
                              "--reason", "r", "--expires", FUTURE.isoformat()])
    assert res.exit_code == 0 and fp in res.output  # a unique prefix names the finding
