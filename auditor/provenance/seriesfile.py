"""``auditor series``: the commits file of a range, as the spec's ``commits_file`` reads it.

One ``<sha> <subject>`` line per commit, oldest first, after a comment naming the range and the
model. ``merge``: every commit of ``A..B``, merges included, parents before children
(``git rev-list --topo-order``, the order the merge model's proof checks). ``rebase``: the
non-merge commits of ``A..B`` in the branch's order. Subjects are shown with their control
characters escaped (the reader takes only the sha).
"""

from __future__ import annotations

from auditor.errors import InputError
from auditor.provenance.gitview import open_repos
from auditor.provenance.series import (
    branch_commits,
    one_repository,
    read_commits,
    upstream_reach,
)
from auditor.spec import Spec
from auditor.textsafe import console_safe

MODELS = ("rebase", "merge")


def series_text(spec: Spec, rng: str, model: str) -> str:
    """The commits file for ``rng`` (``A..B``) in the spec's patches repository."""
    if model not in MODELS:
        raise InputError(f"--model: expected rebase or merge, got {model!r}")
    start, sep, end = rng.partition("..")
    if not sep or not start or not end or end.startswith(".") or "\n" in rng:
        raise InputError(f"--range: expected A..B (two revisions), got {rng!r}")
    upstream_git, git = open_repos(spec.upstream.repo, spec.patches.repo)
    resolved = []
    for name in (start, end):
        sha = None if name.startswith("-") else git.rev_parse(name)
        if sha is None:
            raise InputError(f"--range: {name!r} does not resolve to a commit in the patches "
                             f"repository {spec.patches.repo}")
        resolved.append(sha)
    reach = upstream_reach(upstream_git, git, resolved[0], resolved[1], spec.upstream.also,
                           merge_model=model == "merge",
                           one_repository=one_repository(spec.upstream.repo, spec.patches.repo))
    if reach.unresolved:
        raise InputError(f"[upstream] also: {reach.unresolved[0]} does not resolve in "
                         f"{spec.upstream.repo}")
    shas = branch_commits(git, resolved[0], resolved[1], topo=model == "merge", also=reach.also)
    commits = read_commits(git, list(shas))
    if model == "rebase":
        commits = tuple(c for c in commits if len(c.parents) <= 1)
    lines = [f"# auditor series {console_safe(rng)} --model {model}: {len(commits)} commit(s), "
             "oldest first"]
    lines += [f"{c.sha} {console_safe(c.subject)}" for c in commits]
    return "\n".join(lines) + "\n"
