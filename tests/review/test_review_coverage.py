"""Coverage arithmetic: last sign-off per reviewer wins, void sign-offs, carried ones, the line."""

from __future__ import annotations

import hashlib

from auditor.review.areas import OTHER, ReviewArea
from auditor.review.coverage import HunkRef, compute, summary_line
from auditor.review.signoffs import ReviewVerdict, SignOff
from auditor.review.stage import review_findings

AREAS = (ReviewArea("kernels", "Kernels", ("csrc/**",), ()), ReviewArea(OTHER, "Else", ("**",), ()))


def _ref(path: str, lines: int, area: str) -> HunkRef:
    d = hashlib.sha256(path.encode()).hexdigest()
    return HunkRef(d[:16], d, path, "c" * 40, area, 1, lines, lines)


def _sig(h: HunkRef, who: str, verdict: ReviewVerdict, digest: str | None = None) -> SignOff:
    d = digest or h.digest
    return SignOff(who, d[:16], d, verdict, "2026-11-30T00:00:00Z", h.path, "n")


K1, K2, O1 = _ref("csrc/a.cu", 6, "kernels"), _ref("csrc/b.cu", 4, "kernels"), _ref("x.py", 5, OTHER)


def test_latest_per_reviewer_counts_and_edited_hunks_void() -> None:
    edited = hashlib.sha256(b"old content").hexdigest()
    cov = compute([K1, K2, O1], AREAS, [
        _sig(K1, "ann", ReviewVerdict.CONCERN), _sig(K1, "ann", ReviewVerdict.OK),
        _sig(O1, "bo", ReviewVerdict.BLOCKER), _sig(K2, "bo", ReviewVerdict.OK, edited)])
    assert cov.lines_total == 15 and cov.lines_signed == 11
    assert [h.path for h in cov.unreviewed] == ["csrc/b.cu"]
    assert [s.verdict for s in cov.counted] == [ReviewVerdict.OK, ReviewVerdict.BLOCKER]
    assert len(cov.void) == 1 and "edited or dropped" in cov.void[0].why
    assert cov.by_area()["kernels"] == {"title": "Kernels", "lines_total": 10, "lines_signed": 6,
                                        "hunks_total": 2, "hunks_unreviewed": 1,
                                        "lines_unreviewed": 4}
    assert cov.by_reviewer()["bo"] == {"hunks": 1, "lines": 5, "ok": 0, "concern": 0,
                                       "blocker": 1}
    assert summary_line(cov) == ("11 of 15 changed lines signed off; unreviewed: 1 hunk in "
                                 "kernels; 1 blocker(s), 0 concern(s); 1 sign-off(s) void "
                                 "(hunk edited or dropped)")
    rules = sorted(f.rule for f in review_findings(cov, required=True))
    assert rules == ["review.blocker", "review.unsigned.kernels"]
    assert [f.rule for f in review_findings(cov, required=False)] == ["review.blocker"]


def test_carried_signoffs_count_unless_the_reviewer_signed_again() -> None:
    old = [_sig(K1, "ann", ReviewVerdict.CONCERN), _sig(K2, "ann", ReviewVerdict.OK),
           _sig(_ref("gone.py", 3, OTHER), "ann", ReviewVerdict.OK)]
    cov = compute([K1, K2, O1], AREAS, [_sig(K1, "ann", ReviewVerdict.OK)], carried_from=old)
    assert [s.path for s in cov.carried] == ["csrc/b.cu"]  # K1 re-signed; gone.py dropped
    assert cov.lines_signed == 10 and [h.path for h in cov.unreviewed] == ["x.py"]
    assert "1 carried from the baseline" in summary_line(cov)
    to_json = cov.to_json()
    assert to_json["hunks_unreviewed"] == [O1.id] and to_json["concerns"] == []
