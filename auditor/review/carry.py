"""Sign-offs across an upgrade: the gate carries what still applies and asks only for the rest.

A hunk id names the hunk's content (see :mod:`auditor.review.hunks`), so a baseline sign-off whose
digest is a hunk of the rebased series still describes exactly what is there: it is carried. Hunks
no sign-off covers (changed or new since the baseline, and not signed in the current reviews file)
are what the gate asks for. Baseline sign-offs of hunks the new series no longer has are listed as
no longer needed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from auditor.model import AuditResult, StageStatus
from auditor.results.review import ReviewData
from auditor.review.signoffs import SignOff
from auditor.review.stage import coverage_inputs, recompute


@dataclass(frozen=True)
class Carry:
    carried: tuple[SignOff, ...]
    asked: tuple[str, ...]  # hunk ids no sign-off covers
    no_longer_needed: tuple[SignOff, ...]

    def to_json(self) -> dict[str, Any]:
        return {"carried": [s.to_json() for s in self.carried], "asked": list(self.asked),
                "no_longer_needed": [{"reviewer": s.reviewer, "hunk": s.hunk, "path": s.path}
                                     for s in self.no_longer_needed]}

    def reasons(self) -> list[str]:
        return [f"review: {len(self.carried)} sign-off(s) carried from the baseline (hunk "
                f"unchanged); {len(self.asked)} hunk(s) changed or new since then still need a "
                f"sign-off; {len(self.no_longer_needed)} sign-off(s) of dropped hunks no longer "
                "needed"]


def carry_review(baseline: AuditResult, audit: AuditResult) -> tuple[AuditResult, Carry | None]:
    """``audit`` with its review stage recomputed counting the baseline's sign-offs."""
    old = baseline.stages.get("review")
    new = audit.stages.get("review")
    old_data = old.data_as(ReviewData) if old is not None else None
    new_data = new.data_as(ReviewData) if new is not None else None
    if old_data is None or new_data is None or new is None or new.status is not StageStatus.OK:
        return audit, None
    _, _, old_signoffs = coverage_inputs(old_data)
    result, cov = recompute(new_data, old_signoffs)
    digests = {h.digest for h in cov.hunks}
    dropped = tuple(s for s in old_signoffs if s.digest not in digests)
    stages = dict(audit.stages)
    stages["review"] = result
    carry = Carry(carried=cov.carried, asked=tuple(h.id for h in cov.unreviewed),
                  no_longer_needed=dropped)
    return replace(audit, stages=stages), carry
