"""Old and new series matched as ``git range-diff`` does: by patch-id, then by subject.

Pure functions on plain values, so the matching is tested without any repository. A commit whose
patch-id is unchanged keeps its earlier review; one matched only by subject has a changed patch; the
rest were added or dropped. The result follows the new series' order, with each dropped commit
placed where it stood in the old one.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from auditor.results.verify import VerifyData


class MatchKind(StrEnum):
    UNCHANGED = "unchanged"  # same patch-id: the earlier review holds
    CHANGED = "changed"  # same subject, different patch: review again
    ADDED = "added"  # only in the new series
    DROPPED = "dropped"  # only in the baseline's series

    @property
    def mark(self) -> str:
        """The sign ``git range-diff`` prints between the two sides."""
        return {"unchanged": "=", "changed": "!", "added": ">", "dropped": "<"}[self.value]


@dataclass(frozen=True)
class SeriesEntry:
    index: int  # 1-based position in its series
    sha: str
    subject: str
    patch_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "sha": self.sha, "subject": self.subject,
                "patch_id": self.patch_id}


@dataclass(frozen=True)
class CommitMatch:
    kind: MatchKind
    old: SeriesEntry | None
    new: SeriesEntry | None

    @property
    def subject_changed(self) -> bool:
        return bool(self.old and self.new
                    and _norm_subject(self.old.subject) != _norm_subject(self.new.subject))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value,
                "old": self.old.to_json() if self.old else None,
                "new": self.new.to_json() if self.new else None}


def entries(verify: VerifyData | None) -> tuple[SeriesEntry, ...]:
    """The listed series of a verify stage's result, in order, with patch-ids and subjects (from
    the listed commits when the stage read them, else the listed shas alone).

    What the fork itself changes is compared, so a merge-based fork's upstream content stays out:
    a commit recorded as upstream's own applied again (``upstream_picks``) is upstream's, a merge
    git's own merge of its parents reproduces adds nothing, and a merge with lines of its own is
    paired by the patch-id of those lines (``merge_patch_ids``). Positions stay those of the
    listed series."""
    if verify is None:
        return ()
    series = verify.proof.series if verify.proof is not None else None
    skip: set[str] = set()
    merge_ids: Mapping[str, str] = {}
    if series is not None:
        skip = set(series.upstream_picks)
        merge_ids = series.merge_patch_ids
        skip |= {m for m in series.merges if m not in series.merge_changes}
    if verify.commits:
        return tuple(SeriesEntry(i, c.commit.sha, c.commit.subject.strip(),
                                 merge_ids.get(c.commit.sha) or verify.patch_id(c.commit.sha))
                     for i, c in enumerate(verify.commits, 1) if c.commit.sha not in skip)
    return tuple(SeriesEntry(i, sha, "", merge_ids.get(sha) or verify.patch_id(sha))
                 for i, sha in enumerate(verify.listed, 1) if sha not in skip)


def left_out(verify: VerifyData | None) -> tuple[int, int]:
    """(upstream commits applied again, clean merges) that :func:`entries` leaves out."""
    if verify is None or verify.proof is None:
        return 0, 0
    series = verify.proof.series
    listed = set(verify.listed)
    return (len(set(series.upstream_picks) & listed),
            len({m for m in series.merges if m not in series.merge_changes} & listed))


def _norm_subject(subject: str) -> str:
    # both sides are of redacted audits (gate.result.decide), as a saved baseline is
    return " ".join(subject.split())


def match_series(old: Sequence[SeriesEntry], new: Sequence[SeriesEntry]) -> tuple[CommitMatch, ...]:
    """Pair each new commit with at most one old commit (patch-id first, then subject)."""
    pair: dict[int, int] = {}  # new position -> old position (0-based)
    kind: dict[int, MatchKind] = {}
    used: set[int] = set()

    def pass_(key_of: Any, found: MatchKind) -> None:
        pool: dict[str, deque[int]] = defaultdict(deque)
        for i, o in enumerate(old):
            k = key_of(o)
            if k and i not in used:
                pool[k].append(i)
        for j, n in enumerate(new):
            k = key_of(n)
            if j in pair or not k or not pool.get(k):
                continue
            i = pool[k].popleft()
            pair[j], kind[j] = i, found
            used.add(i)

    pass_(lambda e: e.patch_id, MatchKind.UNCHANGED)
    pass_(lambda e: _norm_subject(e.subject), MatchKind.CHANGED)

    out: list[CommitMatch] = []
    emitted: set[int] = set()

    def drop_before(limit: int) -> None:
        for i in range(limit):
            if i not in used and i not in emitted:
                emitted.add(i)
                out.append(CommitMatch(MatchKind.DROPPED, old[i], None))

    for j, n in enumerate(new):
        if j in pair:
            drop_before(pair[j])
            out.append(CommitMatch(kind[j], old[pair[j]], n))
        else:
            out.append(CommitMatch(MatchKind.ADDED, None, n))
    drop_before(len(old))
    return tuple(out)


def counts(matches: Iterable[CommitMatch]) -> dict[str, int]:
    out = {k.value: 0 for k in MatchKind}
    for m in matches:
        out[m.kind.value] += 1
    return out
