"""Git access for every stage: sealed views of the given repositories (:mod:`auditor.gitseal`).

git never runs inside ``[upstream] repo`` or ``[patches] repo`` for history: each is sealed into a
private bare repository with auditor's own configuration, no attributes, hooks, replace refs or
grafts. The patches view also reads upstream's objects (a second alternate), so the series range
and the replay reach upstream commits without fetching anything into either repository. The
user's global git configuration is ignored too: diff, colour and whitespace settings must not
change patch ids or the replay.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from auditor.gitio import Git
from auditor.gitseal import Ignored, seal, sealed_of


class ProofGit(Git):
    """A :class:`~auditor.gitio.Git` whose every command carries a fixed extra environment."""

    def __init__(self, repo: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> None:
        super().__init__(repo, {"GIT_CONFIG_GLOBAL": os.devnull, **(env or {})})

    def with_env(self, **env: str) -> ProofGit:
        return ProofGit(self.repo, {**self.env, **env})


def open_repos(upstream_repo: Path, patches_repo: Path) -> tuple[ProofGit, ProofGit]:
    """(upstream, patches) sealed views; the patches view also reads upstream's objects."""
    upstream = seal(upstream_repo, "[upstream] repo")
    patches = seal(patches_repo, "[patches] repo", borrow=upstream.object_dirs[:1])
    return ProofGit(upstream.path), ProofGit(patches.path)


def ignored_state(*gits: Git) -> list[tuple[str, Ignored]]:
    """(spec key, what was ignored) of each sealed view among ``gits`` (:mod:`auditor.gitseal`)."""
    out = []
    for g in gits:
        sealed = sealed_of(g.repo)
        if sealed is not None:
            out.append((sealed.what, sealed.ignored))
    return out
