"""Split the series' hunks across reviewers: by area, balanced by changed lines.

The fair share is the total changed lines divided by the number of reviewers (rounded up). An area
within the fair share stays whole; a bigger one is cut into pieces of at most the fair share, whole
files first (a file bigger than the share is cut between hunks). The pieces go, largest first, to the
reviewer with the fewest lines so far (ties: the earlier reviewer), which keeps the largest load
within a third of the best possible. Same series and reviewers, same plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from auditor.errors import InputError
from auditor.results.review import NAME_RE as NAME_RE
from auditor.review.hunks import Hunk
from auditor.review.series import ReviewSeries

PLAN_SCHEMA = "auditor/review-plan/v1"


def check_reviewer(name: str) -> str:
    if not NAME_RE.fullmatch(name):
        raise InputError(f"reviewer name {name!r} is not allowed: use letters, digits and . _ @ + - "
                         "(at most 64, starting with a letter or digit)")
    return name


def reviewer_names(count: int | None, names: Sequence[str], *,
                   hunks: int | None = None) -> tuple[str, ...]:
    """``--reviewer NAME`` repeated, or ``--reviewers N`` (reviewer-1 … reviewer-N). ``hunks``:
    the series' hunk count, which caps N (a reviewer more than there are hunks would get an
    empty packet); a series without hunks still gets one reviewer."""
    if names:
        if count is not None and count != len(names):
            raise InputError(f"--reviewers {count} but {len(names)} --reviewer name(s) given")
        for n in names:
            check_reviewer(n)
        if len(set(names)) != len(names):
            raise InputError("a --reviewer name is given twice")
        return tuple(names)
    if count is None or count < 1:
        raise InputError("give --reviewers N (N >= 1) or --reviewer NAME (repeated)")
    if hunks is not None:
        count = min(count, max(1, hunks))
    return tuple(f"reviewer-{i}" for i in range(1, count + 1))


@dataclass(frozen=True)
class Packet:
    reviewer: str
    areas: tuple[str, ...]  # area names, in the profile's order
    hunks: tuple[Hunk, ...]

    @property
    def lines(self) -> int:
        return sum(h.lines for h in self.hunks)


@dataclass(frozen=True)
class Plan:
    series: ReviewSeries
    packets: tuple[Packet, ...]

    @property
    def lines_total(self) -> int:
        return self.series.lines_total

    def packet(self, reviewer: str) -> Packet | None:
        return next((p for p in self.packets if p.reviewer == reviewer), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": PLAN_SCHEMA,
            "lines_total": self.lines_total,
            "hunks_total": len(self.series.hunks),
            "reviewers": [{
                "name": p.reviewer, "areas": list(p.areas), "lines": p.lines,
                "hunks": [h.to_json() | {"area": self.series.area(h), "digest": h.digest}
                          for h in p.hunks],
            } for p in self.packets],
            "warnings": list(self.series.warnings),
        }


@dataclass(frozen=True)
class _Piece:
    area: str
    part: int
    hunks: tuple[Hunk, ...]

    @property
    def lines(self) -> int:
        return sum(h.lines for h in self.hunks)


def make_plan(series: ReviewSeries, reviewers: Sequence[str]) -> Plan:
    if not reviewers:
        raise InputError("a plan needs at least one reviewer")
    order = {a.name: i for i, a in enumerate(series.areas)}
    by_area: dict[str, list[Hunk]] = {}
    for h in series.hunks:
        by_area.setdefault(series.area(h), []).append(h)
    total = series.lines_total
    fair = max(1, -(-total // len(reviewers)))
    pieces: list[_Piece] = []
    for area in sorted(by_area, key=lambda a: order[a]):
        pieces += _split(area, by_area[area], fair)
    loads = [0] * len(reviewers)
    assigned: list[list[_Piece]] = [[] for _ in reviewers]
    for piece in sorted(pieces, key=lambda p: (-p.lines, order[p.area], p.part)):
        k = min(range(len(reviewers)), key=lambda i: (loads[i], i))
        assigned[k].append(piece)
        loads[k] += piece.lines
    position = {id(h): i for i, h in enumerate(series.hunks)}
    packets = []
    for name, mine in zip(reviewers, assigned, strict=True):
        areas = tuple(sorted({p.area for p in mine}, key=lambda a: order[a]))
        hunks = sorted((h for p in mine for h in p.hunks),
                       key=lambda h: (order[series.area(h)], h.path, position[id(h)]))
        packets.append(Packet(name, areas, tuple(hunks)))
    return Plan(series, tuple(packets))


def _split(area: str, hunks: list[Hunk], fair: int) -> list[_Piece]:
    """An area as one piece, or (when bigger than ``fair``) pieces of at most ``fair`` lines."""
    if sum(h.lines for h in hunks) <= fair:
        return [_Piece(area, 0, tuple(hunks))]
    files: dict[str, list[Hunk]] = {}
    for h in hunks:
        files.setdefault(h.path, []).append(h)
    out: list[list[Hunk]] = [[]]

    def size(piece: list[Hunk]) -> int:
        return sum(h.lines for h in piece)

    for path in sorted(files):
        group = files[path]
        lines = size(group)
        if size(out[-1]) + lines <= fair:
            out[-1] += group
        elif lines <= fair:
            out.append(list(group))
        else:
            for h in group:  # a file bigger than the share: cut between its hunks
                if out[-1] and size(out[-1]) + h.lines > fair:
                    out.append([])
                out[-1].append(h)
    return [_Piece(area, i, tuple(p)) for i, p in enumerate(out) if p]
