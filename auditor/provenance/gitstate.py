"""What git reads besides the refs and objects it is asked about: the state under which two runs
see the same history (replace refs, grafts, the shallow file, alternates, configuration and
attributes of a repository's git folders) and git's own version. The proof cache and the slice
cache both key on it."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from auditor.fsutil import sha256_file
from auditor.gitio import Git, run

#: files of a repository that change what git reads without changing a ref we resolve
COMMON_FILES = ("config", "info/grafts", "shallow", "info/attributes",
                "objects/info/alternates", "objects/info/grafts")
GITDIR_FILES = ("config.worktree",)


@functools.cache
def git_version() -> str:
    return run(["git", "--version"]).stdout.strip()


def file_digest(path: Path) -> str | None:
    """sha256 of a small git-dir file, None when absent (any other failure: OSError)."""
    try:
        return sha256_file(path, follow_symlinks=False)
    except FileNotFoundError:
        return None


def repo_files_state(git: Git) -> dict[str, Any]:
    """The repository's git folders, the digests of the files in them that change what git reads,
    and its replace refs."""
    dirs = git.out("rev-parse", "--path-format=absolute", "--git-common-dir",
                   "--git-dir").splitlines()
    if len(dirs) != 2:
        raise OSError(f"git rev-parse: unexpected answer for {git.repo}")
    common, gitdir = Path(dirs[0]), Path(dirs[1])
    files = {name: file_digest(common / name) for name in COMMON_FILES}
    files.update({name: file_digest(gitdir / name) for name in GITDIR_FILES})
    replace = git.run("for-each-ref", "--format=%(refname) %(objectname)", "refs/replace/",
                      text=False).stdout
    return {"common_dir": str(common), "git_dir": str(gitdir), "files": files,
            "replace": hashlib.sha256(replace).hexdigest()}
