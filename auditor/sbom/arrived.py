"""Upstream's own commits that arrived through the fork, kept apart from the fork's commits in the
SBOM's pedigree (issue 28 item 8).

Two ways in: a listed commit with the same subject and ``git patch-id --stable`` as a commit an
upstream ref reaches (``Workspace.upstream_picks``: a cherry-pick, or a rebased copy), and the
commits of the other upstream refs the spec names (``[upstream] also``) that the fork's head
merged in: those are left out of the series by the proof (``Workspace.series_revs``) and read here
from ``upstream..head`` minus the series.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.gitio import Git
from auditor.model import SeriesCommit, Workspace
from auditor.provenance.series import read_commits

#: more upstream commits than this are counted, not each described (a merged release line of a
#: real engine can bring thousands)
MAX_ARRIVED = 5000


@dataclass(frozen=True)
class ArrivedCommit:
    commit: SeriesCommit
    via: str  # "pick" (same patch-id as upstream's) | "also" (reached from an [upstream] also ref)
    upstream_sha: str | None = None  # for a pick: the upstream commit it repeats


@dataclass(frozen=True)
class Pedigree:
    own: tuple[SeriesCommit, ...]  # the fork's commits (and merges), in series order
    arrived: tuple[ArrivedCommit, ...]  # upstream's, in the order they arrived
    arrived_total: int  # how many arrived (more than ``arrived`` holds past MAX_ARRIVED)


def split_pedigree(ws: Workspace) -> Pedigree:
    picks = ws.upstream_picks
    own = tuple(c for c in ws.commits if c.sha not in picks)
    arrived = [ArrivedCommit(c, "pick", picks[c.sha]) for c in ws.commits if c.sha in picks]
    total = len(arrived)
    if ws.upstream_also:
        git = Git(ws.patches_repo)
        everything = git.out("rev-list", "--reverse", "--topo-order", ws.head_commit,
                             f"^{ws.upstream_commit}", "--").split()
        outside = set(git.out("rev-list", *ws.series_revs, "--").split())
        listed = {c.sha for c in ws.commits}
        merged_in = [s for s in everything if s not in outside and s not in listed]
        total += len(merged_in)
        arrived += [ArrivedCommit(c, "also")
                    for c in read_commits(git, merged_in[:MAX_ARRIVED])]
    return Pedigree(own=own, arrived=tuple(arrived), arrived_total=total)
