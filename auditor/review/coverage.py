"""Review coverage: which changed lines are signed off, by area and reviewer; what is void.

Coverage works on :class:`HunkRef` (a hunk without its text), so the audit and the gate compute it
the same way, the gate from an audit.json alone. For each reviewer and hunk the last sign-off counts
(a reviewer may change a concern to ok). A sign-off counts only when its digest is that of a hunk of
the series as it is now; otherwise it is *void*: the hunk was edited (its content, context or path
changed, so it has a new id) or dropped. A hunk is signed off when some reviewer's sign-off counts,
whatever its verdict; a ``blocker`` or ``concern`` is reported besides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.results.review import HunkRef as HunkRef
from auditor.results.review import ReviewArea
from auditor.review.series import ReviewSeries
from auditor.review.signoffs import ReviewVerdict, SignOff

UNREVIEWED_MAX = 2000  # ids listed in the JSON; totals are always given


def refs_of(series: ReviewSeries) -> tuple[HunkRef, ...]:
    return tuple(HunkRef(h.id, h.digest, h.path, h.commit, series.area(h), h.start, h.end,
                         h.lines) for h in series.hunks)


@dataclass(frozen=True)
class Void:
    signoff: SignOff
    why: str


@dataclass(frozen=True)
class Coverage:
    hunks: tuple[HunkRef, ...]
    areas: tuple[ReviewArea, ...]
    counted: tuple[SignOff, ...]  # the sign-offs that count (last per reviewer and hunk)
    void: tuple[Void, ...]
    carried: tuple[SignOff, ...] = ()  # counted sign-offs that came from a baseline (the gate)
    by_digest: Mapping[str, tuple[SignOff, ...]] = field(default_factory=dict)

    @property
    def lines_total(self) -> int:
        return sum(h.lines for h in self.hunks)

    @property
    def unreviewed(self) -> tuple[HunkRef, ...]:
        return tuple(h for h in self.hunks if h.digest not in self.by_digest)

    @property
    def lines_signed(self) -> int:
        return sum(h.lines for h in self.hunks if h.digest in self.by_digest)

    def with_verdict(self, verdict: ReviewVerdict) -> list[tuple[SignOff, HunkRef]]:
        first: dict[str, HunkRef] = {}
        for h in self.hunks:
            first.setdefault(h.digest, h)
        return [(s, first[s.digest]) for s in self.counted if s.verdict is verdict]

    def title(self, area: str) -> str:
        return next((a.title for a in self.areas if a.name == area), area)

    def by_area(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for a in self.areas:
            mine = [h for h in self.hunks if h.area == a.name]
            if not mine:
                continue
            unsigned = [h for h in mine if h.digest not in self.by_digest]
            out[a.name] = {"title": a.title, "lines_total": sum(h.lines for h in mine),
                           "lines_signed": sum(h.lines for h in mine
                                               if h.digest in self.by_digest),
                           "hunks_total": len(mine), "hunks_unreviewed": len(unsigned),
                           "lines_unreviewed": sum(h.lines for h in unsigned)}
        return out

    def by_reviewer(self) -> dict[str, dict[str, Any]]:
        lines = {h.digest: h.lines for h in self.hunks}
        out: dict[str, dict[str, Any]] = {}
        for s in self.counted:
            r = out.setdefault(s.reviewer, {"hunks": 0, "lines": 0, "ok": 0, "concern": 0,
                                            "blocker": 0})
            r["hunks"] += 1
            r["lines"] += lines.get(s.digest, 0)
            r[s.verdict.value] += 1
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, Any]:
        unreviewed = self.unreviewed
        return {
            "lines_total": self.lines_total,
            "lines_signed": self.lines_signed,
            "hunks_total": len(self.hunks),
            "hunks_unreviewed": [h.id for h in unreviewed[:UNREVIEWED_MAX]],
            "hunks_unreviewed_total": len(unreviewed),
            "by_area": self.by_area(),
            "by_reviewer": self.by_reviewer(),
            "concerns": [_note(s, h) for s, h in self.with_verdict(ReviewVerdict.CONCERN)],
            "blockers": [_note(s, h) for s, h in self.with_verdict(ReviewVerdict.BLOCKER)],
            "void": [{"reviewer": v.signoff.reviewer, "hunk": v.signoff.hunk,
                      "path": v.signoff.path, "why": v.why} for v in self.void],
            "carried": len(self.carried),
            "summary": summary_line(self),
        }


def _note(s: SignOff, h: HunkRef) -> dict[str, Any]:
    return {"reviewer": s.reviewer, "hunk": s.hunk, "path": h.path, "commit": h.commit,
            "start": h.start, "end": h.end, "verdict": s.verdict.value, "note": s.note,
            "date": s.date}


def latest(signoffs: Iterable[SignOff]) -> list[SignOff]:
    """The last sign-off of each reviewer for each hunk digest, in first-seen order."""
    last: dict[tuple[str, str], SignOff] = {}
    for s in signoffs:
        last.pop((s.reviewer, s.digest), None)
        last[(s.reviewer, s.digest)] = s
    return list(last.values())


def compute(hunks: Sequence[HunkRef], areas: Sequence[ReviewArea], signoffs: Iterable[SignOff],
            carried_from: Iterable[SignOff] = ()) -> Coverage:
    """Coverage of ``hunks`` by ``signoffs``; ``carried_from`` are a baseline's counted sign-offs
    (used for a hunk only where the same reviewer has not signed it again)."""
    digests = {h.digest for h in hunks}
    ids = {h.id for h in hunks}
    own = latest(signoffs)
    mine = {(s.reviewer, s.digest) for s in own}
    carried = [s for s in latest(carried_from)
               if s.digest in digests and (s.reviewer, s.digest) not in mine]
    counted: list[SignOff] = []
    void: list[Void] = []
    for s in own:
        if s.digest in digests:
            counted.append(s)
        elif s.hunk in ids:
            void.append(Void(s, "the hunk id matches but its content digest does not"))
        else:
            void.append(Void(s, "no longer matches any hunk of the series (edited or dropped)"))
    counted += carried
    by_digest: dict[str, list[SignOff]] = {}
    for s in counted:
        by_digest.setdefault(s.digest, []).append(s)
    return Coverage(hunks=tuple(hunks), areas=tuple(areas), counted=tuple(counted),
                    void=tuple(void), carried=tuple(carried),
                    by_digest={k: tuple(v) for k, v in by_digest.items()})


def summary_line(c: Coverage) -> str:
    """One line: "14,882 of 15,517 changed lines signed off; 3 hunks in kernels unreviewed"."""
    text = f"{c.lines_signed:,} of {c.lines_total:,} changed lines signed off"
    parts = []
    for name, a in c.by_area().items():
        n = a["hunks_unreviewed"]
        if n:
            parts.append(f"{n} hunk{'s' if n != 1 else ''} in {name}")
    if parts:
        text += "; unreviewed: " + ", ".join(parts)
    elif c.hunks:
        text += "; every hunk signed off"
    blockers = len(c.with_verdict(ReviewVerdict.BLOCKER))
    concerns = len(c.with_verdict(ReviewVerdict.CONCERN))
    if blockers or concerns:
        text += f"; {blockers} blocker(s), {concerns} concern(s)"
    if c.void:
        text += f"; {len(c.void)} sign-off(s) void (hunk edited or dropped)"
    if c.carried:
        text += f"; {len(c.carried)} carried from the baseline"
    return text
