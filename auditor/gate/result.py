"""The gate's decision: what changed since the baseline, what counts, the verdict and its reasons.

:func:`decide` is pure: two :class:`~auditor.model.AuditResult` in, a :class:`GateResult` out. The
verdict is :func:`~auditor.model.compute_verdict` over the new audit's stages with the findings
carried from the baseline left out, so only new blocking or review findings, a failed proof or
check, or something not checked can make it other than PASS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from auditor.gate.carry import CarriedReasons, carry_reasons, without_carried
from auditor.gate.compare import DepsDiff, FindingDiff, compare_deps, compare_findings
from auditor.gate.match import CommitMatch, counts, entries, left_out, match_series
from auditor.model import AuditResult, StageStatus, Verdict, compute_verdict
from auditor.report.interface import redacted
from auditor.report.view import as_map, clean_finding
from auditor.results.deps import DepsData
from auditor.results.verify import VerifyData

GATE_SCHEMA = "auditor/gate/v1"


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    reasons: tuple[str, ...]
    baseline: AuditResult
    audit: AuditResult
    series: tuple[CommitMatch, ...]
    series_known: bool  # False when either audit recorded no series (verify did not complete)
    findings: FindingDiff
    deps: DepsDiff
    baseline_path: str = ""
    review: Mapping[str, Any] | None = None  # sign-offs carried, asked for, no longer needed
    not_checked: CarriedReasons = CarriedReasons((), ())

    def commit_for(self, sha: str | None) -> CommitMatch | None:
        for m in self.series:
            if m.new is not None and m.new.sha == sha:
                return m
        return None

    def to_json(self) -> dict[str, Any]:
        carried = self.findings.carried_fingerprints
        per_commit = []
        for m in self.series:
            sha = m.new.sha if m.new else None
            entry = m.to_json()
            if m.new is not None:
                mine = [f for f in self.audit.findings if f.commit == sha]
                entry["findings"] = {"new": sum(1 for f in mine if f.fingerprint not in carried),
                                     "carried": sum(1 for f in mine if f.fingerprint in carried)}
            per_commit.append(entry)
        return {
            "schema": GATE_SCHEMA,
            "verdict": self.verdict.value,
            "reasons": list(self.reasons),
            "baseline": _summary(self.baseline) | {"path": self.baseline_path},
            "audit": _summary(self.audit),
            "series": {"known": self.series_known, "counts": counts(self.series),
                       "commits": per_commit},
            "findings": {
                "new": [clean_finding(f).to_json() for f in self.findings.new],
                "carried": [clean_finding(f).to_json() for f in self.findings.carried],
                "resolved": [clean_finding(f).to_json() for f in self.findings.resolved],
            },
            "deps": self.deps.to_json(),
            "not_checked": self.not_checked.to_json(),
        } | ({"review": dict(self.review)} if self.review is not None else {})


def _verify(audit: AuditResult) -> VerifyData | None:
    st = audit.stages.get("verify")
    return st.data_as(VerifyData) if st is not None else None


def _summary(audit: AuditResult) -> dict[str, Any]:
    engine = as_map(audit.inputs.get("engine"))
    verify = _verify(audit)
    up = verify.upstream if verify is not None else None
    return {"verdict": audit.verdict.value,
            "engine": {"profile": engine.get("profile"), "version": engine.get("version")},
            "upstream": {"ref": (up.ref if up is not None else None)
                         or as_map(audit.inputs.get("upstream")).get("ref"),
                         "commit": up.commit if up is not None else None}}


def decide(baseline: AuditResult, audit: AuditResult, *, baseline_path: str = "") -> GateResult:
    """The gate of ``audit`` against ``baseline``, both redacted first (the one pass, as a
    report's): a saved baseline holds its text redacted, so the fresh audit is compared as it
    will be saved, and everything the gate shows comes from redacted values."""
    from auditor.review.carry import carry_review

    baseline, audit = redacted(baseline), redacted(audit)
    audit, carry = carry_review(baseline, audit)  # sign-offs of unchanged hunks still count
    old_series = entries(_verify(baseline))
    new_series = entries(_verify(audit))
    series = match_series(old_series, new_series)
    findings = compare_findings(baseline.findings, audit.findings)
    carried = set(map(id, findings.carried))
    stages = [replace(st, findings=tuple(f for f in st.findings if id(f) not in carried))
              for st in audit.stages.values()]
    accepted = carry_reasons(baseline, audit)
    verdict, reasons = compute_verdict(without_carried(stages, accepted))
    extra = []
    if accepted.carried:
        extra.append(f"{len(accepted.carried)} not-checked reason(s) accepted in the baseline "
                     "(same reason, same declaration) carried, not counted")
    if findings.carried:
        extra.append(f"{len(findings.carried)} finding(s) already reviewed in the baseline "
                     "(same fingerprint) carried, not counted")
    c = counts(series)
    picks, clean = left_out(_verify(audit))
    apart = [f"{picks} upstream commit(s) applied again"] * bool(picks) + [
        f"{clean} clean merge(s)"] * bool(clean)
    extra.append(f"series: {c['unchanged']} unchanged, {c['changed']} changed, {c['added']} new, "
                 f"{c['dropped']} dropped commit(s) since the baseline"
                 + (f" (the fork's own; {' and '.join(apart)} left out)" if apart else ""))
    series_known = bool(old_series) and bool(new_series)
    if not series_known:
        extra.append("series: not compared — "
                     + ("the baseline" if not old_series else "the new audit")
                     + " recorded no series commits")
    if carry is not None:
        extra += carry.reasons()
    if baseline.verdict in (Verdict.FAIL, Verdict.INCOMPLETE):
        extra.append(f"note: the baseline's own verdict was {baseline.verdict.value}; its blocking "
                     "findings were not carried")
    if verdict is Verdict.PASS:
        reasons = ("no new blocking or review finding since the baseline, the proof holds and "
                   "every requested check ran"
                   + (" or was accepted unchecked in the baseline" if accepted.carried else ""),)
    for st in audit.stages.values():
        if st.name == "verify" and st.status is StageStatus.NOT_REQUESTED:
            extra.append("verify was not requested: the series could not be matched")
    return GateResult(verdict=verdict, reasons=tuple(reasons) + tuple(extra), baseline=baseline,
                      audit=audit, series=series, series_known=series_known, findings=findings,
                      deps=compare_deps(_deps(baseline), _deps(audit)),
                      baseline_path=baseline_path, not_checked=accepted,
                      review=carry.to_json() if carry is not None else None)


def _deps(audit: AuditResult) -> DepsData | None:
    st = audit.stages.get("deps")
    return st.data_as(DepsData) if st is not None else None
