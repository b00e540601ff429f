"""git: :class:`Git` wraps a repository with the plumbing commands the provenance code needs.

Every program (git included) runs through :func:`auditor.subproc.run`; ``run``, ``which`` and
``Completed`` are re-exported here for the modules that import them from this one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from auditor.errors import InputError, ToolError
from auditor.subproc import Completed, run, which

__all__ = ["GIT_HARDENING", "Completed", "Git", "TreeEntry", "git_env", "run", "which"]


# A fixed git environment: no user or system config, no replace objects, no system attributes, no
# pager, no prompts, a fixed locale. Every GIT_* variable of the caller's environment is dropped
# (GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, GIT_REPLACE_REF_BASE, GIT_DIR, ...):
# what git does must not depend on them. Callers add their own (``extra``).
_GIT_ENV_FIXED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "LC_ALL": "C",
}
# settings on the command line, above any repository's own: none of them may name a program
GIT_HARDENING = ("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}",
                 "-c", f"core.attributesFile={os.devnull}", "-c", "log.showSignature=false",
                 "-c", "core.quotepath=off")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_GIT_ENV_FIXED)
    if extra:
        env.update(extra)
    return env


_HEX_NAME = re.compile(r"[0-9a-fA-F]{4,64}")


@dataclass(frozen=True)
class TreeEntry:
    """One entry of ``git ls-tree -r``: a file or symlink (blob) or a submodule (commit)."""

    path: str
    mode: str
    type: str  # "blob" or "commit" (a gitlink)
    sha: str
    size: int | None  # blob bytes (only when sizes were asked for); None for a gitlink


class Git:
    """Plumbing access to one repository (bare or not); never touches its work tree."""

    def __init__(self, repo: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> None:
        self.repo = Path(repo)
        if not self.repo.exists():
            raise InputError(f"repository {self.repo} does not exist")
        #: extra environment of every command (under each call's ``extra_env``)
        self.env: dict[str, str] = dict(env or {})

    @overload
    def run(self, *args: str, input: str | bytes | None = ..., check: bool = ...,
            extra_env: Mapping[str, str] | None = ...,
            text: Literal[True] = ...) -> Completed[str]: ...

    @overload
    def run(self, *args: str, input: str | bytes | None = ..., check: bool = ...,
            extra_env: Mapping[str, str] | None = ...,
            text: Literal[False]) -> Completed[bytes]: ...

    @overload
    def run(self, *args: str, input: str | bytes | None = ..., check: bool = ...,
            extra_env: Mapping[str, str] | None = ...,
            text: bool) -> Completed[str] | Completed[bytes]: ...

    def run(self, *args: str, input: str | bytes | None = None, check: bool = True,
            extra_env: Mapping[str, str] | None = None,
            text: bool = True) -> Completed[str] | Completed[bytes]:
        return run(
            ["git", "-C", str(self.repo), *GIT_HARDENING, *args],
            env=git_env({**self.env, **(extra_env or {})}), input=input, check=check, text=text,
        )

    def out(self, *args: str, input: str | bytes | None = None, check: bool = True,
            extra_env: Mapping[str, str] | None = None) -> str:
        return self.run(*args, input=input, check=check, extra_env=extra_env).stdout.strip()

    def rev_parse(self, rev: str) -> str | None:
        """The full sha a revision resolves to (peeled to a commit), or None if it does not."""
        res = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
                       check=False)
        return res.stdout.strip() if res.returncode == 0 else None

    def tree_of(self, rev: str) -> str:
        return self.out("rev-parse", "--verify", "--end-of-options", f"{rev}^{{tree}}")

    def cat_blob(self, sha: str) -> bytes:
        return self.run("cat-file", "blob", sha, text=False).stdout

    def ls_tree(self, tree: str, *, sizes: bool = False) -> dict[str, TreeEntry]:
        """Every blob and gitlink of ``tree``, recursively, by posix path (``git ls-tree -r``).

        Paths that are not UTF-8 keep their bytes as surrogate escapes (:func:`os.fsdecode`).
        ``sizes`` asks git for blob sizes (``-l``); without it every size is None.
        """
        args = ["ls-tree", "-r", "-z", "--full-tree", *(["-l"] if sizes else []), tree]
        raw = self.run(*args, text=False).stdout
        out: dict[str, TreeEntry] = {}
        for record in raw.split(b"\0"):
            if not record:
                continue
            meta, tab, name = record.partition(b"\t")
            fields = meta.decode("ascii", "replace").split()
            if not tab or len(fields) != (4 if sizes else 3):
                raise ToolError(f"git ls-tree: unexpected record {record[:200]!r}")
            mode, kind, sha = fields[:3]
            size = int(fields[3]) if sizes and fields[3].isdigit() else None
            path = os.fsdecode(name)
            out[path] = TreeEntry(path, mode, kind, sha, size)
        return out

    def read_blobs(self, shas: Iterable[str], *, missing_ok: bool = False) -> dict[str, bytes]:
        """The contents of blobs by sha, read by one ``git cat-file --batch`` process.

        A sha the repository does not have (or that is not a blob) raises ToolError; with
        ``missing_ok`` a sha it does not have is left out of the answer instead.
        """
        unique = list(dict.fromkeys(shas))
        if not unique:
            return {}
        for sha in unique:
            if not _HEX_NAME.fullmatch(sha):
                raise ValueError(f"not an object name: {sha!r}")
        request = "".join(f"{sha}\n" for sha in unique).encode()
        data = self.run("cat-file", "--batch", input=request, text=False).stdout
        out: dict[str, bytes] = {}
        pos = 0
        for sha in unique:
            nl = data.find(b"\n", pos)
            if nl < 0:
                raise ToolError(f"git cat-file --batch: no answer for {sha}")
            header = data[pos:nl].decode("ascii", "replace")
            parts = header.split()
            if parts[1:] == ["missing"]:
                if missing_ok:
                    pos = nl + 1
                    continue
                raise ToolError(f"git cat-file --batch: object {sha} is missing")
            if (len(parts) != 3 or not parts[0].lower().startswith(sha.lower())
                    or parts[1] != "blob" or not parts[2].isdigit()):
                raise ToolError(f"git cat-file --batch: unexpected header {header[:200]!r} "
                                f"for {sha}")
            start = nl + 1
            end = start + int(parts[2])
            if data[end:end + 1] != b"\n":
                raise ToolError(f"git cat-file --batch: the content of {sha} is cut short")
            out[sha] = data[start:end]
            pos = end + 1
        return out

    def resolve_many(self, names: Iterable[str]) -> list[str | None]:
        """What each revision name resolves to, peeled to a commit (None when it does not), in
        one ``git cat-file --batch-check`` process (a name with a newline resolves to None)."""
        names = list(names)
        asked = [n for n in names if n and "\n" not in n and "\r" not in n]
        if not asked:
            return [None] * len(names)
        request = "".join(f"{n}^{{commit}}\n" for n in asked)
        rows = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                        input=request).stdout.split("\n")
        answers: dict[str, str | None] = {}
        for n, row in zip(asked, rows, strict=False):
            parts = row.split()
            ok = len(parts) == 2 and parts[1] == "commit" and _HEX_NAME.fullmatch(parts[0])
            answers[n] = parts[0] if ok else None
        if len(rows) < len(asked):
            raise ToolError("git cat-file --batch-check: fewer answers than questions")
        return [answers.get(n) for n in names]
