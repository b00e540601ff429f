"""The review stage's data: coverage of the changed hunks by sign-offs, and what it was made of
(the hunks, the areas and the counted sign-offs, so the gate can recompute it without git)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.results.base import JsonObject, StageData, objects, strs
from auditor.review.areas import ReviewArea
from auditor.review.coverage import HunkRef
from auditor.review.signoffs import SignOff

#: the keys of the coverage object (``auditor review status --json``) kept as written
COVERAGE_KEYS = ("lines_total", "lines_signed", "hunks_total", "hunks_unreviewed",
                 "hunks_unreviewed_total", "by_area", "by_reviewer", "concerns", "blockers",
                 "void", "carried")


@dataclass(frozen=True)
class ReviewData(StageData):
    required: bool
    file: str
    coverage: JsonObject  # the counts of ``auditor review status --json`` (display only)
    summary: str  # the coverage in one line
    areas: tuple[ReviewArea, ...]
    hunks: tuple[HunkRef, ...]
    signoffs: tuple[SignOff, ...]  # the counted ones (notes redacted)

    def to_json(self) -> dict[str, Any]:
        return {"required": self.required, "file": self.file, **self.coverage,
                "summary": self.summary, "areas": [a.to_json() for a in self.areas],
                "hunks": [h.to_json() for h in self.hunks],
                "signoffs": [s.to_json() for s in self.signoffs]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReviewData:
        signoffs = tuple(s for s in (SignOff.from_json(x) for x in objects(d["signoffs"]))
                         if s is not None)
        return cls(required=bool(d["required"]), file=str(d["file"]),
                   coverage={k: d[k] for k in COVERAGE_KEYS}, summary=str(d["summary"]),
                   areas=tuple(ReviewArea(str(a["name"]), str(a["title"]), strs(a["globs"]),
                                          strs(a["checklist"])) for a in objects(d["areas"])),
                   hunks=tuple(HunkRef.from_json(h) for h in objects(d["hunks"])),
                   signoffs=signoffs)
