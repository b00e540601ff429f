"""Not-checked reasons the approved baseline already had: accepted there, carried, not counted.

A reason is carried when the baseline's same stage gave the same reason about the same
declaration. Reasons are compared with their line numbers left out (a rebase moves lines, not
meaning); every other word must match. The deps stage's one "unpinned deployed requirements"
reason is compared by its list (``deps.unpinned_deployed``): it is carried when every requirement
it names now was already named in the baseline, and new when any is new. A stage crash is never
carried: it says nothing about the inputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from auditor.model import AuditResult, StageResult, StageStatus
from auditor.results.deps import DepsData

UNPINNED_PREFIX = "vulnerabilities of "
UNPINNED_MARK = "unpinned deployed requirement"
_LINE_NO = re.compile(r"(?<=\S):\d+(?=[:\s,)]|$)")
_MORE = re.compile(r" and \d+ more\b")


@dataclass(frozen=True)
class CarriedReasons:
    carried: tuple[tuple[str, str], ...]  # (stage, reason) accepted in the baseline
    new: tuple[tuple[str, str], ...]  # (stage, reason) that need review

    def to_json(self) -> dict[str, Any]:
        return {"carried": [{"stage": s, "reason": r} for s, r in self.carried],
                "new": [{"stage": s, "reason": r} for s, r in self.new]}


def reason_key(reason: str) -> str:
    return " ".join(_MORE.sub("", _LINE_NO.sub("", reason)).split())


def _is_unpinned(reason: str) -> bool:
    return reason.startswith(UNPINNED_PREFIX) and UNPINNED_MARK in reason


def _unpinned_keys(st: StageResult) -> set[tuple[str, str, str, str]]:
    data = st.data_as(DepsData)
    if data is None:
        return set()
    return {(u.decl.kind, u.decl.name, str(u.decl.specifier or u.decl.url), u.decl.file)
            for u in data.unpinned_deployed}


def _carried(reason: str, old: StageResult | None, new: StageResult) -> bool:
    if old is None or reason.startswith("stage crashed"):
        return False
    if _is_unpinned(reason):
        if not any(_is_unpinned(r) for r in old.not_checked):
            return False
        now = _unpinned_keys(new)
        return bool(now) and now <= _unpinned_keys(old)
    return reason_key(reason) in {reason_key(r) for r in old.not_checked}


def carry_reasons(baseline: AuditResult, audit: AuditResult) -> CarriedReasons:
    carried: list[tuple[str, str]] = []
    new: list[tuple[str, str]] = []
    for name, st in audit.stages.items():
        old = baseline.stages.get(name)
        for r in st.not_checked:
            (carried if _carried(r, old, st) else new).append((name, r))
    return CarriedReasons(tuple(carried), tuple(new))


def without_carried(stages: Sequence[StageResult], c: CarriedReasons) -> list[StageResult]:
    """The stages with carried reasons left out; a stage left with nothing unchecked is ok."""
    gone = set(c.carried)
    out = []
    for st in stages:
        keep = tuple(r for r in st.not_checked if (st.name, r) not in gone)
        status = st.status
        if status is StageStatus.INCOMPLETE and not keep and not st.reasons and st.not_checked:
            status = StageStatus.OK
        out.append(replace(st, not_checked=keep, status=status))
    return out
