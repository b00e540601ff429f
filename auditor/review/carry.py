"""Sign-offs across an upgrade: the gate carries what still applies and asks only for the rest.

A hunk id names the hunk's content (see :mod:`auditor.review.hunks`), so a baseline sign-off whose
digest is a hunk of the rebased series still describes exactly what is there: it is carried. Hunks
no sign-off covers (neither the baseline's nor one in the current reviews file) are what the gate
asks for, counted apart: those changed or new since the baseline, and those the baseline had too
but nobody signed there either. Baseline sign-offs of hunks the new series no
longer has are listed as no longer needed.
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
    #: of ``asked``, the hunks the baseline had too (unsigned there as well): not changed or new
    unsigned_before: tuple[str, ...] = ()

    @property
    def asked_new(self) -> tuple[str, ...]:
        """Hunks no sign-off covers that are changed or new since the baseline."""
        before = set(self.unsigned_before)
        return tuple(h for h in self.asked if h not in before)

    def to_json(self) -> dict[str, Any]:
        return {"carried": [s.to_json() for s in self.carried], "asked": list(self.asked),
                "asked_new": list(self.asked_new), "unsigned_before": list(self.unsigned_before),
                "no_longer_needed": [{"reviewer": s.reviewer, "hunk": s.hunk, "path": s.path}
                                     for s in self.no_longer_needed]}

    def reasons(self) -> list[str]:
        n_new, n_old = len(self.asked_new), len(self.unsigned_before)
        if not self.asked:
            need = "every hunk is signed off"
        else:
            need = (f"{len(self.asked)} hunk(s) still need a sign-off: {n_new} changed or new "
                    f"since the baseline, {n_old} unsigned in the baseline too")
        return [f"review: {len(self.carried)} sign-off(s) carried from the baseline (hunk "
                f"unchanged); {need}; {len(self.no_longer_needed)} sign-off(s) of dropped hunks "
                "no longer needed"]


def carry_review(baseline: AuditResult, audit: AuditResult) -> tuple[AuditResult, Carry | None]:
    """``audit`` with its review stage recomputed counting the baseline's sign-offs."""
    old = baseline.stages.get("review")
    new = audit.stages.get("review")
    old_data = old.data_as(ReviewData) if old is not None else None
    new_data = new.data_as(ReviewData) if new is not None else None
    if old_data is None or new_data is None or new is None or new.status is not StageStatus.OK:
        return audit, None
    old_hunks, _, old_signoffs = coverage_inputs(old_data)
    result, cov = recompute(new_data, old_signoffs)
    digests = {h.digest for h in cov.hunks}
    dropped = tuple(s for s in old_signoffs if s.digest not in digests)
    stages = dict(audit.stages)
    stages["review"] = result
    before = {h.digest for h in old_hunks}
    carry = Carry(carried=cov.carried, asked=tuple(h.id for h in cov.unreviewed),
                  no_longer_needed=dropped,
                  unsigned_before=tuple(h.id for h in cov.unreviewed if h.digest in before))
    return replace(audit, stages=stages), carry
