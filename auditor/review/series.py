"""The series to review, read from git the way the verify stage reads it (no bundle needed).

``auditor review`` commands plan and count the listed commits' hunks. They resolve upstream (the
pinned commit when there is one) and the series head as verify does, check the listed series against
the branch with :func:`~auditor.provenance.series.check_series`, and read the hunks of the listed
commits that exist. What the series check finds wrong is carried as warnings: the tree proof is
``auditor verify``'s business, but a reviewer should know the list is not the branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from auditor.errors import InputError
from auditor.gitio import Git
from auditor.model import SeriesCommit, Workspace
from auditor.provenance.gitview import open_repos
from auditor.provenance.series import (
    check_series,
    one_repository,
    upstream_picks,
    upstream_reach,
)
from auditor.review.areas import ReviewArea, area_of, profile_areas
from auditor.review.hunks import Hunk, series_hunks
from auditor.spec import Spec


@dataclass(frozen=True)
class ReviewSeries:
    commits: tuple[SeriesCommit, ...]
    hunks: tuple[Hunk, ...]
    areas: tuple[ReviewArea, ...]
    area_by_hunk: dict[str, str]  # hunk digest -> area name
    warnings: tuple[str, ...] = ()

    def area(self, h: Hunk) -> str:
        return self.area_by_hunk[h.digest]

    def subject(self, sha: str) -> str:
        for c in self.commits:
            if c.sha == sha:
                return c.subject
        return ""

    @property
    def lines_total(self) -> int:
        return sum(h.lines for h in self.hunks)


def build_series(git: Git, commits: Sequence[SeriesCommit], areas: Sequence[ReviewArea],
                 warnings: Sequence[str] = ()) -> ReviewSeries:
    areas = profile_areas(areas)
    hunks = series_hunks(git, [c.sha for c in commits])
    return ReviewSeries(commits=tuple(commits), hunks=hunks, areas=areas,
                        area_by_hunk={h.digest: area_of(h.path, areas) for h in hunks},
                        warnings=tuple(warnings))


def series_of_spec(spec: Spec) -> ReviewSeries:
    """The listed series' hunks, straight from git (see the module docstring)."""
    upstream_git, git = open_repos(spec.upstream.repo, spec.patches.repo)
    base = spec.upstream.commit or upstream_git.rev_parse(spec.upstream.ref)
    if base is None or upstream_git.rev_parse(base) is None:
        raise InputError(f"upstream {spec.upstream.commit or spec.upstream.ref} does not resolve "
                         f"in {spec.upstream.repo}")
    head = git.rev_parse(spec.patches.ref)
    if head is None:
        raise InputError(f"patches ref {spec.patches.ref} does not resolve in {spec.patches.repo}")
    merge_model = spec.patches.model == "merge"
    reach = upstream_reach(upstream_git, git, base, head, spec.upstream.also,
                           merge_model=merge_model, one_repository=one_repository(spec.upstream.repo, spec.patches.repo))
    if reach.unresolved:
        raise InputError(f"[upstream] also: {reach.unresolved[0]} does not resolve in "
                         f"{spec.upstream.repo}")
    check = check_series(git, base, head,
                         None if spec.patches.commits_range else spec.patches.commits,
                         topo=merge_model, also=reach.also)
    warnings = check.reasons(spec.patches.allow_merges or merge_model)
    picks = upstream_picks(upstream_git, git, base, head, check.commits, reach.also,
                           refs=not one_repository(spec.upstream.repo, spec.patches.repo))
    return build_series(git, _community(check.commits, picks), spec.profile.review_areas,
                        warnings)


def _community(commits: Sequence[SeriesCommit], picks: Mapping[str, str]
               ) -> tuple[SeriesCommit, ...]:
    """The commits to review: an upstream commit applied again (a cherry-pick: its lines are
    upstream's, see :func:`~auditor.provenance.series.upstream_picks`) is no community commit."""
    return tuple(c for c in commits if c.sha not in picks)


def series_of_workspace(ws: Workspace, areas: Sequence[ReviewArea]) -> ReviewSeries:
    """The verified workspace's series (the audit's review stage)."""
    _, git = open_repos(ws.upstream_repo, ws.patches_repo)
    return build_series(git, _community(ws.commits, ws.upstream_picks), areas)
