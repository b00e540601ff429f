"""The review stage: the audit's view of human review (``[review]`` in the spec).

Requested when the spec has a ``[review]`` section; needs the verify stage's workspace (the series'
commits). Its object in audit.json is the coverage (``auditor review status --json``) plus
``required``, ``file``, ``hunks`` (every hunk with its digest and area) and ``signoffs`` (the counted
ones), so that the gate can carry sign-offs from it without git.

Findings: a ``blocker`` sign-off is a blocking finding (``review.blocker``), a ``concern`` a finding
to review (``review.concern``); with ``required = true`` each area with unsigned changed lines is a
finding to review (``review.unsigned.<area>``), so the verdict's reasons count them by area.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.errors import InputError
from auditor.model import (
    Action,
    Category,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    fingerprint_of,
)
from auditor.review.areas import ReviewArea, profile_areas
from auditor.review.coverage import Coverage, HunkRef, compute, refs_of
from auditor.review.series import series_of_workspace
from auditor.review.signoffs import ReviewVerdict, SignOff, load_signoffs
from auditor.spec import Spec
from auditor.stage import Context, Stage
from auditor.textsafe import redact

IDS_IN_MESSAGE = 8


class ReviewStage(Stage):
    name = "review"
    needs = ("verify",)

    def requested(self, spec: Spec) -> bool:
        return spec.review is not None

    def check_inputs(self, spec: Spec) -> None:
        """A bad reviews file stops the audit before any stage runs (exit 2)."""
        if spec.review is not None:
            load_signoffs(spec.review.file, folder=spec.review.folder)

    def run(self, ctx: Context) -> StageResult:
        spec = ctx.spec
        assert spec.review is not None
        ws = ctx.workspace
        if ws is None:
            raise InputError("the review stage needs the verified workspace of the verify stage")
        signoffs = load_signoffs(spec.review.file, folder=spec.review.folder)
        ctx.progress("review: reading the series' hunks")
        series = series_of_workspace(ws, spec.profile.review_areas)
        cov = compute(refs_of(series), series.areas, signoffs)
        return review_result(cov, required=spec.review.required, file=str(spec.review.file))


def review_result(cov: Coverage, *, required: bool, file: str) -> StageResult:
    details: dict[str, Any] = {"required": required, "file": file, **cov.to_json(),
                               "areas": [a.to_json() for a in cov.areas],
                               "hunks": [h.to_json() for h in cov.hunks],
                               "signoffs": [s.to_json() | {"note": redact(s.note)}
                                            for s in cov.counted]}
    return StageResult("review", StageStatus.OK, details=details,
                       findings=tuple(review_findings(cov, required)))


def review_findings(cov: Coverage, required: bool) -> list[Finding]:
    out: list[Finding] = []
    for verdict, action, severity in ((ReviewVerdict.BLOCKER, Action.BLOCK, Severity.HIGH),
                                      (ReviewVerdict.CONCERN, Action.REVIEW, Severity.MEDIUM)):
        for s, h in cov.with_verdict(verdict):
            rule = f"review.{verdict.value}"
            out.append(Finding(
                rule=rule, category=Category.POLICY, severity=severity, action=action,
                path=h.path, line=h.start, end_line=h.end, commit=h.commit,
                message=f"reviewer {s.reviewer} marked hunk {h.id} as a {verdict.value}"
                        + (f": {s.note}" if s.note else ""),
                scanner="review", fingerprint=fingerprint_of(rule, h.path,
                                                             f"{s.reviewer} {h.digest}"),
                snippet=""))
    if required:
        for area, hunks in _unsigned_by_area(cov).items():
            rule = f"review.unsigned.{area}"
            lines = sum(h.lines for h in hunks)
            ids = ", ".join(h.id for h in hunks[:IDS_IN_MESSAGE])
            more = f" and {len(hunks) - IDS_IN_MESSAGE} more" if len(hunks) > IDS_IN_MESSAGE else ""
            out.append(Finding(
                rule=rule, category=Category.POLICY, severity=Severity.MEDIUM,
                action=Action.REVIEW, path=hunks[0].path, line=0, commit=None,
                message=f"{lines} changed line(s) in {len(hunks)} hunk(s) of {cov.title(area)} "
                        f"are not signed off ([review] required): {ids}{more}",
                scanner="review",
                fingerprint=fingerprint_of(rule, area, " ".join(sorted(h.digest for h in hunks)))))
    return out


def _unsigned_by_area(cov: Coverage) -> dict[str, list[HunkRef]]:
    out: dict[str, list[HunkRef]] = {}
    for h in cov.unreviewed:
        out.setdefault(h.area, []).append(h)
    order = {a.name: i for i, a in enumerate(cov.areas)}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


# ---------------------------------------------------------------- from audit.json (the gate)


def coverage_inputs(details: Any) -> tuple[list[HunkRef], list[ReviewArea], list[SignOff]] | None:
    """Hunks, areas and counted sign-offs of a review stage's JSON; None when unreadable."""
    if not isinstance(details, dict):
        return None
    try:
        hunks = [HunkRef.from_json(h) for h in details.get("hunks", [])]
        areas = [ReviewArea(str(a["name"]), str(a["title"]), tuple(a.get("globs", ())),
                            tuple(a.get("checklist", ()))) for a in details.get("areas", [])]
    except (KeyError, TypeError, ValueError):
        return None
    signoffs = [s for s in (SignOff.from_json(d) for d in details.get("signoffs", [])
                            if isinstance(d, dict)) if s is not None]
    return hunks, list(profile_areas(areas)), signoffs


def recompute(details: Any, carried_from: Sequence[SignOff]) -> tuple[StageResult, Coverage] | None:
    """A review stage's result again, with a baseline's sign-offs carried (see the gate)."""
    parsed = coverage_inputs(details)
    if parsed is None:
        return None
    hunks, areas, own = parsed
    cov = compute(hunks, areas, own, carried_from)
    return review_result(cov, required=bool(details.get("required")),
                         file=str(details.get("file", ""))), cov
