"""Replay the listed commits onto upstream without a work tree: the tree the bundle should have.

Each commit's change against its first parent (``git diff-tree -p --binary --full-index``) is
applied to a temporary index (``GIT_INDEX_FILE``) with ``git apply --cached --3way``, as a
cherry-pick would; the result is ``git write-tree``. A merge commit (when merges are allowed) is
replayed as its change against the clean automatic merge of its two parents (``git merge-tree
--write-tree``), since both sides' commits were replayed before it; only the merge's own
resolution is applied. (git 2.39's ``merge-tree`` has no
``--merge-base`` yet, so it cannot cherry-pick.) Neither the repository's index nor any work tree is
touched; the blobs and trees written are ordinary unreferenced objects.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from auditor.gitio import Git
from auditor.model import SeriesCommit
from auditor.provenance.gitview import ProofGit
from auditor.provenance.treehash import EMPTY_TREE

_DIFF_WORKERS = 2  # git diff-tree processes computing diffs ahead of the applies
_DIFF_AHEAD = 8  # diffs computed ahead at most (bounds the memory they take)


@dataclass(frozen=True)
class Replay:
    tree: str | None  # None when a commit did not apply
    applied: tuple[str, ...]
    failed_commit: str | None = None
    error: str = ""


def replay(git: ProofGit, onto: str, commits: Sequence[SeriesCommit], scratch: Path) -> Replay:
    """Apply ``commits`` in order onto the commit ``onto``; the first that fails stops it.

    When the commits already form that chain (the first's only parent is ``onto``, each next
    one's only parent the one before), applying each change to its own parent's tree gives the
    commit's tree, always: the answer is the last commit's tree, with nothing to apply."""
    parents = [onto, *(c.sha for c in commits[:-1])]
    if commits and all(c.parents == (p,) for p, c in zip(parents, commits, strict=True)):
        return Replay(tree=commits[-1].tree, applied=tuple(c.sha for c in commits))
    return apply_each(git, onto, commits, scratch)


def apply_each(git: ProofGit, onto: str, commits: Sequence[SeriesCommit],
               scratch: Path) -> Replay:
    """:func:`replay` by applying each commit's change in turn."""
    scratch.mkdir(parents=True, exist_ok=True)
    index = scratch / "replay.index"
    index.unlink(missing_ok=True)
    g = git.with_env(GIT_INDEX_FILE=str(index))
    g.run("read-tree", f"{onto}^{{tree}}")
    applied: list[str] = []
    # A commit's diff depends only on the commit and its parents, not on the replay so far, so
    # worker threads compute the next few ahead (git works in its own processes) while the applies
    # run here strictly in order. Diffs past a commit that fails are never used.
    with ThreadPoolExecutor(max_workers=_DIFF_WORKERS) as pool:
        ahead: deque[Future[bytes]] = deque()
        todo = iter(commits)
        for c in commits:
            while len(ahead) < _DIFF_AHEAD and (nxt := next(todo, None)) is not None:
                ahead.append(pool.submit(_diff, git, nxt))
            diff = ahead.popleft().result()
            if diff.strip():
                res = g.run("apply", "--cached", "--3way", "--whitespace=nowarn", "-", input=diff,
                            check=False, text=False)
                if res.returncode != 0:
                    for f in ahead:
                        f.cancel()
                    lines = [ln for ln in res.stderr.splitlines()
                             if ln.startswith(("error", "CONFLICT", "U ")) or "conflict" in ln]
                    return Replay(tree=None, applied=tuple(applied), failed_commit=c.sha,
                                  error="; ".join(lines[-4:]) or res.stderr.strip()[-400:])
            applied.append(c.sha)
    tree = g.out("write-tree")
    return Replay(tree=tree, applied=tuple(applied))


def _diff(git: ProofGit, c: SeriesCommit) -> bytes:
    """The change ``c`` makes against its base (see :func:`_base`), as a binary-safe patch."""
    base = _base(git, c)
    out = git.run("diff-tree", "-p", "--binary", "--full-index", "--no-color", "--no-renames",
                  "--no-ext-diff", "--no-textconv", base, c.sha, "--", text=False).stdout
    assert isinstance(out, bytes)
    return out


def _base(git: ProofGit, c: SeriesCommit) -> str:
    """What ``c``'s change is taken against: its parent, or for a two-parent merge the clean
    automatic merge of its parents (so only the merge's own resolution is replayed)."""
    if not c.parents:
        return EMPTY_TREE
    return automatic_merge(git, c.parents) or c.parents[0]


def automatic_merge(git: Git, parents: Sequence[str], *, conflicts: bool = False) -> str | None:
    """The tree git's own merge of two ``parents`` gives (``git merge-tree --write-tree``), None
    for another number of parents or when it fails; a merge with conflicts gives its tree with the
    conflict markers only with ``conflicts`` (a merge commit's own lines are then its resolution).
    """
    if len(parents) != 2:
        return None
    res = git.run("merge-tree", "--write-tree", "--no-messages", "--allow-unrelated-histories",
                  *parents, check=False)
    words = res.stdout.split()
    if words and re.fullmatch(r"[0-9a-f]{40,64}", words[0]) and (
            res.returncode == 0 or (conflicts and res.returncode == 1)):
        return words[0]
    return None
