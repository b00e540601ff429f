"""Merging findings that report one concern on one line, after policy and waivers have run.

Two rules (or two scanners) often flag the same line for the same category. The report shows one
finding there: the one that weighs most (the strongest action, then the highest severity, then the
rule id), with the rule ids of the others in ``Finding.also``. Which one is shown does not depend
on waivers, so its fingerprint is the one a reviewer copies from the report.

Waivers: **a waiver of the shown finding covers the rules merged into it** — it accepts the
weightiest reading of that concern on that line, so the weaker ones of the same line and category
go with it. A waiver of one of the merged rules alone (``fingerprint = "*"`` on the path) does not
waive the shown finding: the line still counts under its weightiest rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from auditor.model import Action, Finding, Severity

_ACTION_RANK = {Action.BLOCK: 0, Action.REVIEW: 1, Action.INFO: 2}
_SEVERITY_RANK = {s: n for n, s in enumerate(Severity)}  # critical first


def _weight(f: Finding) -> tuple[int, int, str, str]:
    return (_ACTION_RANK[f.action], _SEVERITY_RANK[f.severity], f.rule, f.fingerprint)


def merge_same_concern(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (path, line, category), keeping every rule id; input order is kept for the
    first finding of each group. The group is waived exactly when its shown finding is."""
    groups: dict[tuple[str, int, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.path, f.line, f.category.value), []).append(f)
    out = []
    for group in groups.values():
        ranked = sorted(group, key=_weight)
        kept = ranked[0]
        others = tuple(dict.fromkeys(r for f in ranked[1:] for r in (f.rule, *f.also)
                                     if r != kept.rule))
        out.append(kept if not others else replace(kept, also=tuple(dict.fromkeys(
            (*kept.also, *others)))))
    return out
