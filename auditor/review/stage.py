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

from auditor.errors import InputError
from auditor.fsutil import relative_path
from auditor.model import (
    Action,
    Category,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    fingerprint_of,
)
from auditor.results.review import COVERAGE_KEYS, ReviewData
from auditor.review.areas import ReviewArea, profile_areas
from auditor.review.coverage import Coverage, HunkRef, compute, refs_of
from auditor.review.series import series_of_workspace
from auditor.review.signoffs import ReviewVerdict, SignOff, load_signoffs
from auditor.spec import Spec
from auditor.stage import Context, Stage

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
        return review_result(cov, required=spec.review.required,
                             file=relative_path(spec.review.file, spec.root))


def review_result(cov: Coverage, *, required: bool, file: str) -> StageResult:
    summary = cov.to_json()
    data = ReviewData(required=required, file=file,
                      coverage={k: summary[k] for k in COVERAGE_KEYS},
                      summary=str(summary["summary"]), areas=tuple(cov.areas), hunks=cov.hunks,
                      signoffs=tuple(cov.counted))
    return StageResult("review", StageStatus.OK, data,
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


def coverage_inputs(data: ReviewData) -> tuple[list[HunkRef], list[ReviewArea], list[SignOff]]:
    """Hunks, areas and counted sign-offs of a review stage's result."""
    return list(data.hunks), list(profile_areas(data.areas)), list(data.signoffs)


def recompute(data: ReviewData, carried_from: Sequence[SignOff]) -> tuple[StageResult, Coverage]:
    """A review stage's result again, with a baseline's sign-offs carried (see the gate)."""
    hunks, areas, own = coverage_inputs(data)
    cov = compute(hunks, areas, own, carried_from)
    return review_result(cov, required=data.required, file=data.file), cov
