"""What git reads besides the refs and objects it is asked about: the state under which two runs
see the same history (replace refs, grafts, the shallow file, alternates, configuration and
attributes of a repository's git folders) and git's own version. The proof cache, the slice
cache and the SBOM's diff cache key on it."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from auditor.fsutil import sha256_file
from auditor.gitio import Git, run
from auditor.gitseal import sealed_of

#: files of a repository that change what git reads without changing a ref we resolve
COMMON_FILES = ("config", "info/grafts", "shallow", "info/attributes",
                "objects/info/alternates", "objects/info/grafts")
GITDIR_FILES = ("config.worktree",)
# git's environment that can change what it shows of the same commits
_GIT_ENV = ("GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS", "GIT_GRAFT_FILE",
            "GIT_SHALLOW_FILE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
            "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_ATTR_NOSYSTEM", "HOME",
            "XDG_CONFIG_HOME")
# the system-wide configuration and attributes of a Debian-built git (its prefix is /usr)
_SYSTEM_FILES = (Path("/etc/gitconfig"), Path("/etc/gitattributes"))


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
    and its replace refs. For a sealed view (:mod:`auditor.gitseal`) git reads none of the given
    repository's files: its state is the seal's (the object folders read and what was ignored),
    the same for every run on the same repository."""
    sealed = sealed_of(git.repo)
    if sealed is not None:
        return sealed.state()
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


def git_settings(git: Git) -> str:
    """A digest of everything besides refs and objects that can change what git says of the same
    commits of ``git``'s repository (blame, diffs): its git-folder state
    (:func:`repo_files_state`), the user's and the system's configuration and attributes, git's
    environment and version."""
    home = Path(os.environ.get("HOME", "/nonexistent"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files: dict[str, str | None] = {}
    for f in (home / ".gitconfig", xdg / "git" / "config", xdg / "git" / "attributes",
              *_SYSTEM_FILES):
        try:
            files[str(f)] = sha256_file(f)
        except FileNotFoundError:
            files[str(f)] = None
    parts = [git_version(), repo_files_state(git), files,
             {k: os.environ.get(k) for k in _GIT_ENV}]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()
