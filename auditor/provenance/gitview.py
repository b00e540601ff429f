"""Git access for the proof: the patches repository, seeing upstream's objects, without user config.

When ``[patches] repo`` and ``[upstream] repo`` differ, upstream's object store is added as a
read-only alternate (``GIT_ALTERNATE_OBJECT_DIRECTORIES``), so the series range and the replay can
reach upstream commits without fetching anything into either repository. The user's global git
configuration is ignored (``GIT_CONFIG_GLOBAL=/dev/null``): diff, colour and whitespace settings
must not change patch ids or the replay.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from auditor.errors import InputError
from auditor.gitio import Git


class ProofGit(Git):
    """A :class:`~auditor.gitio.Git` whose every command carries a fixed extra environment."""

    def __init__(self, repo: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> None:
        super().__init__(repo, {"GIT_CONFIG_GLOBAL": os.devnull, **(env or {})})

    def with_env(self, **env: str) -> ProofGit:
        return ProofGit(self.repo, {**self.env, **env})


def objects_dir(git: Git, what: str) -> str:
    """The absolute object directory of a repository; an InputError when it is not one."""
    res = git.run("rev-parse", "--path-format=absolute", "--git-path", "objects", check=False)
    path = res.stdout.strip()
    if res.returncode != 0 or not path or not Path(path).is_dir():
        raise InputError(f"{what} {git.repo} is not a git repository")
    return path


def open_repos(upstream_repo: Path, patches_repo: Path) -> tuple[ProofGit, ProofGit]:
    """(upstream, patches) views; the patches view also reads upstream's objects."""
    upstream = ProofGit(upstream_repo)
    up_objects = objects_dir(upstream, "[upstream] repo")
    patches = ProofGit(patches_repo)
    own = objects_dir(patches, "[patches] repo")
    if os.path.realpath(own) != os.path.realpath(up_objects):
        patches = patches.with_env(GIT_ALTERNATE_OBJECT_DIRECTORIES=up_objects)
    return upstream, patches
