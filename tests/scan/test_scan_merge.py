"""Waivers and policy apply to each finding first; findings of one concern on one line merge after.

The shown finding of a line is the weightiest one whatever the waivers (issue 33 item 6): a waiver
of the shown finding covers the rules merged into it; a waiver of a merged rule alone does not
waive the shown finding.
"""

from __future__ import annotations

import datetime as dt

from auditor.model import Action, Category, Finding, Severity
from auditor.policy import Waiver, apply_waivers
from auditor.scan.merge import merge_same_concern

TODAY = dt.date(2026, 11, 30)


def _finding(rule: str, *, action: Action = Action.BLOCK, severity: Severity = Severity.HIGH,
             line: int = 7, category: Category = Category.NETWORK) -> Finding:
    return Finding(rule=rule, category=category, severity=severity, action=action,
                   path="vllm/usage/beacon.py", line=line, commit="a" * 40,
                   message=f"{rule} fired", scanner="semgrep", fingerprint=f"fp-{rule}")


def _waiver(rule: str) -> Waiver:
    return Waiver(rule=rule, path="vllm/usage/*", fingerprint="*", reason="our own collector",
                  owner="sec-team", expires=TODAY + dt.timedelta(days=30))


def test_a_waiver_for_a_merged_rule_alone_does_not_waive_the_shown_finding() -> None:
    found = [_finding("network.python.requests"), _finding("network.python.urlopen")]
    merged = merge_same_concern(apply_waivers(found, [_waiver("network.python.urlopen")],
                                              today=TODAY))
    assert len(merged) == 1
    kept = merged[0]
    assert kept.rule == "network.python.requests" and not kept.waived
    assert kept.also == ("network.python.urlopen",)
    assert kept.to_json()["also"] == ["network.python.urlopen"]


def test_a_waiver_of_the_shown_finding_covers_the_rules_merged_into_it() -> None:
    found = [_finding("network.python.urlopen", action=Action.REVIEW),
             _finding("network.python.requests")]
    shown = merge_same_concern(found)[0]
    assert shown.rule == "network.python.requests" and not shown.waived
    exact = Waiver(rule=shown.rule, path=shown.path, fingerprint=shown.fingerprint,
                   reason="our own collector", owner="sec-team",
                   expires=TODAY + dt.timedelta(days=30))
    merged = merge_same_concern(apply_waivers(found, [exact], today=TODAY))
    assert len(merged) == 1 and merged[0].waived and not merged[0].counts
    assert merged[0].fingerprint == shown.fingerprint  # the same finding is shown, now waived
    assert merged[0].also == ("network.python.urlopen",)


def test_waiving_every_rule_on_the_line_waives_the_merged_finding() -> None:
    found = [_finding("network.python.requests"), _finding("network.python.urlopen")]
    waivers = [_waiver("network.python.requests"), _waiver("network.python.urlopen")]
    merged = merge_same_concern(apply_waivers(found, waivers, today=TODAY))
    assert len(merged) == 1 and merged[0].waived
    assert set((merged[0].rule, *merged[0].also)) == {"network.python.requests",
                                                      "network.python.urlopen"}


def test_the_weightiest_finding_is_kept_and_other_lines_and_categories_stay_apart() -> None:
    found = [
        _finding("network.shell.download", action=Action.REVIEW, severity=Severity.MEDIUM),
        _finding("network.shell.pipe-to-shell"),
        _finding("network.shell.download", line=8, action=Action.REVIEW),
        _finding("process-exec.shell.eval", category=Category.PROCESS_EXEC),
    ]
    merged = merge_same_concern(found)
    assert [(f.line, f.rule) for f in merged] == [
        (7, "network.shell.pipe-to-shell"), (8, "network.shell.download"),
        (7, "process-exec.shell.eval")]
    assert merged[0].also == ("network.shell.download",) and merged[1].also == ()
    assert "also" not in merged[1].to_json()


def test_also_round_trips_through_audit_json() -> None:
    f = merge_same_concern([_finding("a.rule"), _finding("b.rule", action=Action.REVIEW)])[0]
    assert Finding.from_json(f.to_json()) == f
