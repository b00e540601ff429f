"""The model: JSON round-trip of audit.json and the verdict for each outcome."""

from __future__ import annotations

import json

import pytest
from typed_results import scan_data

from auditor.model import (
    AUDIT_SCHEMA,
    STAGES,
    Action,
    AuditResult,
    Category,
    FailOn,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    Verdict,
    compute_verdict,
    exit_code_for,
    fingerprint_of,
)


def finding(action: Action = Action.REVIEW, *, waived: bool = False) -> Finding:
    return Finding(rule="network.python.urlopen", category=Category.NETWORK,
                   severity=Severity.HIGH, action=action, path="pkg/usage.py", line=12,
                   commit="a" * 40, message="outbound HTTP", scanner="semgrep",
                   fingerprint=fingerprint_of("network.python.urlopen", "pkg/usage.py", "urlopen(r)"),
                   waived=waived, snippet="urlopen(req)")


def test_every_enum_member_round_trips() -> None:
    for enum in (Category, Severity, Action, Verdict, StageStatus, FailOn):
        for member in enum:
            assert enum(member.value) is member


def test_audit_json_round_trips() -> None:
    stages = {n: StageResult.not_requested(n) for n in STAGES}
    stages["scan"] = StageResult("scan", StageStatus.OK, scan_data(),
                                 findings=(finding(), finding(Action.BLOCK, waived=True)))
    stages["deps"] = StageResult("deps", StageStatus.INCOMPLETE, not_checked=("numpy: unpinned",))
    verdict, reasons = compute_verdict(stages.values())
    audit = AuditResult(verdict=verdict, reasons=reasons, stages=stages,
                        tool={"name": "auditor"}, inputs={"spec": "audit.toml"})
    data = json.loads(json.dumps(audit.to_json()))
    assert data["schema"] == AUDIT_SCHEMA
    assert set(data["stages"]) == set(STAGES)
    assert data["stages"]["deps"]["status"] == "incomplete"
    required = {"rule", "category", "severity", "action", "path", "line", "commit", "message",
                "scanner", "fingerprint", "inherited", "waived"}
    assert all(required <= set(f) for f in data["findings"])
    assert AuditResult.from_json(data) == audit


def test_wrong_schema_is_refused() -> None:
    with pytest.raises(ValueError, match="schema"):
        AuditResult.from_json({"schema": "something/else", "stages": {}})


def test_fingerprint_is_stable_when_whitespace_and_lines_shift() -> None:
    assert fingerprint_of("r", "p", "a(  b )") == fingerprint_of("r", "p", "a( b )")
    assert fingerprint_of("r", "p", "a(b)") != fingerprint_of("r", "q", "a(b)")


OK = StageResult("verify", StageStatus.OK)
CASES = [
    ("pass", [OK], Verdict.PASS, 0, 0),
    ("review", [OK, StageResult("scan", StageStatus.OK, findings=(finding(),))],
     Verdict.REVIEW, 1, 0),
    ("waived-block-passes", [StageResult("scan", StageStatus.OK,
                                         findings=(finding(Action.BLOCK, waived=True),))],
     Verdict.PASS, 0, 0),
    ("block", [StageResult("scan", StageStatus.OK, findings=(finding(Action.BLOCK),))],
     Verdict.FAIL, 1, 1),
    ("failed-stage", [StageResult("verify", StageStatus.FAILED, reasons=("tree differs",))],
     Verdict.FAIL, 1, 1),
    ("incomplete", [OK, StageResult("scan", StageStatus.INCOMPLETE, not_checked=("a.cu",))],
     Verdict.INCOMPLETE, 3, 3),
    ("fail-beats-incomplete", [StageResult("verify", StageStatus.FAILED, reasons=("x",)),
                               StageResult("scan", StageStatus.INCOMPLETE, not_checked=("y",))],
     Verdict.FAIL, 1, 1),
    ("info-only", [StageResult("scan", StageStatus.OK, findings=(finding(Action.INFO),))],
     Verdict.PASS, 0, 0),
    ("not-requested-is-not-incomplete", [OK, StageResult.not_requested("build")], Verdict.PASS, 0, 0),
]


@pytest.mark.parametrize(("name", "stages", "verdict", "code", "code_block"), CASES,
                         ids=[c[0] for c in CASES])
def test_verdicts_and_exit_codes(name, stages, verdict, code, code_block) -> None:
    got, reasons = compute_verdict(stages)
    assert got is verdict
    assert reasons  # every verdict states its reasons
    assert exit_code_for(got) == code
    assert exit_code_for(got, FailOn.BLOCK) == code_block


def test_fail_keeps_what_was_left_unchecked_among_its_reasons() -> None:
    _, reasons = compute_verdict([StageResult("verify", StageStatus.FAILED, reasons=("tree",)),
                                  StageResult("scan", StageStatus.INCOMPLETE, not_checked=("a.cu",))])
    assert any("a.cu" in r for r in reasons)
