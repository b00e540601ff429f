"""Merging findings that report one concern on one line, after policy and waivers have run.

Two rules (or two scanners) often flag the same line for the same category. The report shows one
finding there, but only once each rule's finding has had its own policy action and waivers: a
waiver names one rule, so it must not hide another rule's finding on that line. The kept finding is
the one that weighs most (not waived, then the strongest action, then the highest severity); the
rule ids of the others ride along in ``Finding.also``.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.model import Action, Finding, Severity

_ACTION_RANK = {Action.BLOCK: 0, Action.REVIEW: 1, Action.INFO: 2}
_SEVERITY_RANK = {s: n for n, s in enumerate(Severity)}  # critical first


def _weight(f: Finding) -> tuple[int, int, int, str]:
    return (int(f.waived), _ACTION_RANK[f.action], _SEVERITY_RANK[f.severity], f.rule)


def merge_same_concern(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (path, line, category), keeping every rule id; input order is kept for the
    first finding of each group."""
    groups: dict[tuple[str, int, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.path, f.line, f.category.value), []).append(f)
    out = []
    for group in groups.values():
        ranked = sorted(group, key=_weight)
        kept = ranked[0]
        others = tuple(dict.fromkeys(r for f in ranked[1:] for r in (f.rule, *f.also)
                                     if r != kept.rule))
        out.append(kept if not others else _with_also(kept, others))
    return out


def _with_also(f: Finding, others: tuple[str, ...]) -> Finding:
    from dataclasses import replace

    return replace(f, also=tuple(dict.fromkeys((*f.also, *others))))
