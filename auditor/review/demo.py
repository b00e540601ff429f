"""The embedded demo's reviews file: some hunks signed off, one concern, the rest left unread.

Alice has read the first two commits (the kernel and the server refactor) and found them fine; Bob
read the telemetry commit and raised a concern. Everything else is unreviewed, so the demo's report
shows partial coverage and, with ``required = true``, the unread lines by area.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from auditor.gitio import Git
from auditor.review.hunks import series_hunks
from auditor.review.signoffs import ReviewVerdict, SignOff, append_signoffs

REVIEWS = "reviews.toml"
_PLAN = (  # (index of the commit in the series, reviewer, verdict, note)
    (0, "alice", ReviewVerdict.OK, ""),
    (1, "alice", ReviewVerdict.OK, "pure refactor; validation unchanged"),
    (2, "bob", ReviewVerdict.CONCERN,
     "posts a machine id to a stats server; make sure the opt-out is honoured"),
)


def write_demo_reviews(root: Path, repo: Path, commits: Sequence[str]) -> Path:
    hunks = series_hunks(Git(repo), list(commits))
    target = root / REVIEWS
    for index, reviewer, verdict, note in _PLAN:
        if index >= len(commits):
            continue
        mine = [h for h in hunks if h.commit == commits[index]]
        append_signoffs(target, reviewer, [
            SignOff(reviewer=reviewer, hunk=h.id, digest=h.digest, verdict=verdict,
                    date="2026-01-02T09:00:00Z", path=h.path, note=note) for h in mine])
    return target
