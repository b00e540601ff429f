"""The commit series: the commits listed by the spec against those actually on the branch.

The branch's series is ``git rev-list --reverse upstream..head``. Against it the listed commits are
checked for: commits on the branch that are not listed (hidden), listed commits that do not exist or
are not on the branch (missing), a different order, duplicates, and merge commits. Each commit's
``git patch-id --stable`` and metadata are read into :class:`~auditor.model.SeriesCommit`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from auditor.errors import ToolError
from auditor.gitio import Git
from auditor.model import SeriesCommit
from auditor.provenance.replay import automatic_merge

REASONS_MAX = 20  # hidden commits named one per line; the rest are counted
LIST_MAX = 1000  # commits listed in the JSON; totals are always given
_GIT_WORKERS = 4  # concurrent git processes for per-commit look-ups (they mostly wait on I/O)


@dataclass(frozen=True)
class MissingCommit:
    listed: str  # as the spec gives it
    sha: str | None  # the full sha when it exists at all
    why: str


@dataclass(frozen=True)
class SeriesCheck:
    listed: tuple[str, ...]  # full shas where they resolve, else as given
    actual: tuple[str, ...]  # upstream..head, oldest first
    unlisted: tuple[str, ...]
    missing: tuple[MissingCommit, ...]
    duplicates: tuple[str, ...]
    merges: tuple[str, ...]
    order_ok: bool
    commits: tuple[SeriesCommit, ...]  # the listed commits that exist, in listed order
    based_on_upstream: bool = True  # upstream is an ancestor of head

    @property
    def patch_ids(self) -> dict[str, str | None]:
        return {c.sha: c.patch_id for c in self.commits}

    def to_json(self) -> dict[str, Any]:
        return {
            "listed": list(self.listed),
            "unlisted": list(self.unlisted[:LIST_MAX]),
            "unlisted_total": len(self.unlisted),
            "missing": [m.listed for m in self.missing],
            "missing_why": {m.listed: m.why for m in self.missing},
            "duplicates": list(self.duplicates),
            "merges": list(self.merges),
            "order_ok": self.order_ok,
            "patch_ids": self.patch_ids,
            "actual": list(self.actual[:LIST_MAX]),
        }

    def reasons(self, allow_merges: bool) -> list[str]:
        """One line per way the series differs from what was published."""
        out = []
        if not self.based_on_upstream:
            out.append("upstream is not an ancestor of patches.ref: the branch is not based on "
                       "the upstream commit")
        for sha in self.unlisted[:REASONS_MAX]:
            out.append(f"commit {sha[:12]} is on the branch but not listed (hidden commit)")
        if len(self.unlisted) > REASONS_MAX:
            out.append(f"… and {len(self.unlisted) - REASONS_MAX} more hidden commits")
        for m in self.missing:
            out.append(f"listed commit {m.listed} {m.why}")
        for sha in self.duplicates:
            out.append(f"commit {sha[:12]} is listed more than once")
        if not self.order_ok:
            out.append("the listed order differs from the branch's order")
        if self.merges and not allow_merges:
            out.append(f"{len(self.merges)} merge commit(s) in the series "
                       f"({', '.join(s[:12] for s in self.merges)}); merges are not allowed in "
                       'a rebased series: if the branch merges upstream, set [patches] model = '
                       '"merge" (the proof is then ancestry and the head\'s tree, nothing '
                       "replayed)")
        return out


def branch_commits(git: Git, upstream: str, head: str, *, topo: bool = False,
                   also: Sequence[str] = ()) -> tuple[str, ...]:
    """``upstream..head`` without what ``also`` (other upstream commits) reaches, oldest first
    (``topo``: parents before children, each side branch of a merge together, the order
    ``auditor series --model merge`` writes)."""
    order = ("--topo-order",) if topo else ()
    return tuple(git.out("rev-list", "--reverse", *order, head, f"^{upstream}",
                         *(f"^{c}" for c in also), "--").split())


def check_series(git: Git, upstream: str, head: str, listed: Sequence[str] | None, *,
                 topo: bool = False, also: Sequence[str] = ()) -> SeriesCheck:
    """Compare the listed commits with ``upstream..head`` (less what the other upstream commits
    ``also`` reach) in ``git``'s repository; ``listed`` None takes the branch's own commits as
    the list (``commits = "range"``)."""
    actual = branch_commits(git, upstream, head, topo=topo, also=also)
    if listed is None:
        listed = actual
    on_branch = set(actual)
    resolved: list[str] = []
    missing: list[MissingCommit] = []
    existing: list[str] = []
    seen: set[str] = set()
    duplicates: list[str] = []
    # one `git rev-parse` per listed commit; git runs in its own processes, so they overlap
    with ThreadPoolExecutor(max_workers=_GIT_WORKERS) as pool:
        shas = list(pool.map(lambda given: resolve_commit(git, given), listed))
    for given, sha in zip(listed, shas, strict=True):
        resolved.append(sha or given)
        if sha is None:
            missing.append(MissingCommit(given, None, "does not exist in the patches repository"))
            continue
        if sha in seen:
            duplicates.append(sha)
            continue
        seen.add(sha)
        existing.append(sha)
        if sha not in on_branch:
            missing.append(MissingCommit(given, sha, "is not on the branch (not in "
                                         "upstream..patches.ref)"))
    unlisted = tuple(c for c in actual if c not in seen)
    listed_on_branch = [c for c in existing if c in on_branch]
    order_ok = listed_on_branch == [c for c in actual if c in seen]
    commits = read_commits(git, existing)
    branch_merges = set(git.out("rev-list", "--merges", head, f"^{upstream}",
                                *(f"^{c}" for c in also), "--").split())
    merges = tuple(dict.fromkeys(
        [c.sha for c in commits if len(c.parents) > 1]
        + [c for c in unlisted if c in branch_merges]))
    based = git.run("merge-base", "--is-ancestor", upstream, head, check=False).returncode == 0
    return SeriesCheck(listed=tuple(resolved), actual=actual, unlisted=unlisted,
                       missing=tuple(missing), duplicates=tuple(duplicates), merges=merges,
                       order_ok=order_ok, commits=commits, based_on_upstream=based)


def also_commits(upstream: Git, names: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``[upstream] also`` resolved in the upstream repository: (the commits, without repeats;
    the names that resolve to none), one ``git cat-file --batch-check``."""
    shas = upstream.resolve_many(names)
    return (tuple(dict.fromkeys(s for s in shas if s)),
            tuple(n for n, s in zip(names, shas, strict=True) if s is None))


def one_repository(upstream_repo: str | os.PathLike[str],
                   patches_repo: str | os.PathLike[str]) -> bool:
    """Whether upstream and the patches are one repository (its branches and tags are then not
    all upstream's)."""
    return os.path.realpath(upstream_repo) == os.path.realpath(patches_repo)


@dataclass(frozen=True)
class MergedUpstream:
    """Upstream commits a merge-based fork's range holds that no ``also`` ref names: what
    upstream's own branches and tags reach (a fork that merged upstream's main, or a release line
    nobody named)."""

    heads: tuple[str, ...]  # the newest of them: ``^`` of each leaves them all out of the range
    total: int


def merged_upstream(upstream: Git, git: Git, base: str, head: str,
                    also: Sequence[str] = ()) -> MergedUpstream:
    """The upstream commits in ``base..head`` (less what ``also`` reaches) that upstream's
    branches and tags reach, read in the patches view (it reads upstream's objects). For an
    upstream repository that is not the fork's own: there every branch and tag is upstream's."""
    tips = upstream.out("for-each-ref", "--format=%(objectname)", "refs/heads", "refs/tags").split()
    if not tips:
        return MergedUpstream((), 0)
    rng = "".join(f"{r}\n" for r in (head, f"^{base}", *(f"^{c}" for c in also)))
    rows = [r.split() for r in git.out("rev-list", "--parents", "--stdin", input=rng).splitlines()]
    own = set(git.out("rev-list", "--stdin",
                      input=rng + "".join(f"^{t}\n" for t in dict.fromkeys(tips))).split())
    ups = {r[0]: r[1:] for r in rows if r and r[0] not in own}
    has_child = {p for ps in ups.values() for p in ps if p in ups}
    return MergedUpstream(tuple(sorted(s for s in ups if s not in has_child)), len(ups))


@dataclass(frozen=True)
class UpstreamReach:
    """Every upstream commit besides the base that the fork's range is read without."""

    also: tuple[str, ...]  # ``[upstream] also`` resolved, then the merged heads
    unresolved: tuple[str, ...]  # ``also`` names that resolve to no commit
    merged: MergedUpstream
    #: a merge-based fork: how many commits of its range the ``also`` refs reach (upstream's,
    #: left out of the listed commits; the report says so)
    also_total: int = 0


def upstream_reach(upstream: Git, git: Git, base: str | None, head: str | None,
                   names: Sequence[str], *, merge_model: bool,
                   one_repository: bool) -> UpstreamReach:
    """``[upstream] also`` and, for a merge-based fork whose upstream repository is not its own,
    what upstream's branches and tags reach in the range (:func:`merged_upstream`): the one
    definition the proof, ``auditor series`` and the review plan read the range by."""
    also, unresolved = also_commits(upstream, names)
    merged = MergedUpstream((), 0)
    if merge_model and not one_repository and base and head:
        merged = merged_upstream(upstream, git, base, head, also)
    also_total = 0
    if merge_model and base and head and also:
        rng = f"{head}\n^{base}\n"
        also_total = (int(git.out("rev-list", "--count", "--stdin", input=rng) or 0)
                      - int(git.out("rev-list", "--count", "--stdin",
                                    input=rng + "".join(f"^{c}\n" for c in also)) or 0))
    return UpstreamReach((*also, *merged.heads), unresolved, merged, also_total)


def upstream_picks(upstream: Git, git: Git, base: str, head: str,
                   commits: Sequence[SeriesCommit], also: Sequence[str] = (), *,
                   refs: bool = True) -> dict[str, str]:
    """The series commits that are upstream's own commits applied again (a cherry-pick, or the
    same change arriving through the fork): ``{series sha: upstream sha}`` where a commit that
    upstream's branches, tags or ``also`` refs reach, and neither ``base`` nor the series'
    ``head`` does, has the same subject and the same ``git patch-id --stable``. Subjects choose
    the candidates, so only those are diffed. ``refs`` False leaves upstream's branches and tags
    out, ``also`` alone counts: in a repository that also holds the fork, a branch or a tag may be
    the fork's own (a real fork tags its own releases there)."""
    wanted: dict[str, list[str]] = {}
    for c in commits:
        if len(c.parents) == 1 and c.patch_id:
            wanted.setdefault(" ".join(c.subject.split()), []).append(c.sha)
    if not wanted:
        return {}
    tips = (upstream.out("for-each-ref", "--format=%(objectname)", "refs/heads", "refs/tags")
            if refs else "")
    revs = [*dict.fromkeys([*tips.split(), *also])]
    if not revs:
        return {}
    # in the patches view (it reads upstream's objects): what the fork's head reaches is the fork's
    rows = git.out("log", "--stdin", f"^{base}", f"^{head}", "--no-merges",
                   "--format=%H%x00%s", "--", input="".join(f"{r}\n" for r in revs))
    candidates: dict[str, list[str]] = {}
    for row in rows.splitlines():
        sha, _, subject = row.partition("\0")
        key = " ".join(subject.split())
        if key in wanted and sha:
            candidates.setdefault(key, []).append(sha)
    if not candidates:
        return {}
    ids = patch_ids_of(git, [s for shas in candidates.values() for s in shas])
    by_id: dict[str, str] = {}
    for shas in candidates.values():
        for s in shas:
            if s in ids:
                by_id.setdefault(ids[s], s)
    return {c.sha: by_id[c.patch_id] for c in commits
            if c.patch_id and c.patch_id in by_id and by_id[c.patch_id] != c.sha}


@dataclass(frozen=True)
class MergeChange:
    """A merge's own change: what it holds beyond git's own merge of its parents."""

    paths: tuple[str, ...]
    #: ``git patch-id --stable`` of the diff from git's own merge to the merge: the same own
    #: lines give the same id, whatever the merge is called or which parents it has
    patch_id: str | None
    #: files, insertions and deletions of that same diff: the lines the merge's review hunks show
    stats: dict[str, int] | None = None


def merge_changes(git: Git, commits: Sequence[SeriesCommit]) -> dict[str, MergeChange]:
    """For each two-parent merge among ``commits`` that is not what git's own merge of its parents
    gives: the paths it changed while merging and the patch-id of that change (a clean merge is
    left out). A merge git cannot recompute is compared with its first parent."""
    out: dict[str, MergeChange] = {}
    for c in commits:
        if len(c.parents) != 2:
            continue
        base = automatic_merge(git, c.parents, conflicts=True) or c.parents[0]
        names = git.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", base, c.sha,
                        "--", text=False).stdout
        assert isinstance(names, bytes)
        paths = tuple(n.decode("utf-8", "surrogateescape") for n in names.split(b"\0") if n)
        if paths:
            numstat = git.run("diff-tree", "-r", "--numstat", "--no-renames", base, c.sha,
                              "--").stdout
            assert isinstance(numstat, str)
            out[c.sha] = MergeChange(paths, _diff_patch_id(git, base, c.sha),
                                     _count_numstat(numstat.splitlines()))
    return out


def _diff_patch_id(git: Git, old: str, new: str) -> str | None:
    """``git patch-id --stable`` of the diff between two trees (or commits)."""
    diff = git.run("diff-tree", "-r", "-p", "--no-color", "--no-ext-diff", "--no-textconv",
                   "--no-renames", "--full-index", old, new, "--", text=False).stdout
    assert isinstance(diff, bytes)
    if not diff.strip():
        return None
    res = git.run("patch-id", "--stable", input=b"commit " + new.encode() + b"\n" + diff,
                  text=False).stdout
    assert isinstance(res, bytes)
    pid = res.decode().partition(" ")[0]
    return pid or None


def resolve_commit(git: Git, given: str) -> str | None:
    """The full sha of a listed commit (abbreviations allowed), or None when there is none."""
    given = given.strip().lower()
    sha = git.rev_parse(given)
    if sha is None or not sha.startswith(given):  # a ref that merely looks like hex is not it
        return None
    return sha


_FIELDS = ("%H", "%T", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B")


def read_commits(git: Git, shas: Sequence[str]) -> tuple[SeriesCommit, ...]:
    """SeriesCommit for each sha, in the given order, with its patch id."""
    if not shas:
        return ()
    fmt = "%x00".join(_FIELDS)
    raw = git.run("log", "--no-walk=unsorted", "-z", f"--format={fmt}", *shas, "--",
                  text=False).stdout
    assert isinstance(raw, bytes)
    fields = raw.split(b"\0")
    n = len(_FIELDS)
    patch_ids = patch_ids_of(git, shas)
    out = []
    for i, sha in enumerate(shas):
        row = [f.decode("utf-8", "replace") for f in fields[i * n:(i + 1) * n]]
        if len(row) != n or row[0] != sha:
            raise ToolError(f"git log gave unexpected output for commit {sha}")
        message = row[9].rstrip("\n")
        out.append(SeriesCommit(
            sha=sha, tree=row[1], parents=tuple(row[2].split()), subject=message.split("\n")[0],
            message=message, author_name=row[3], author_email=row[4], author_date=row[5],
            committer_name=row[6], committer_email=row[7], committer_date=row[8],
            patch_id=patch_ids.get(sha)))
    return tuple(out)


def patch_ids_of(git: Git, shas: Sequence[str]) -> dict[str, str]:
    """``git patch-id --stable`` of each commit; merges and empty commits have none."""
    if not shas:
        return {}
    log = git.run("log", "--no-walk=unsorted", "-p", "--no-color", "--no-ext-diff",
                  "--no-textconv", "--format=commit %H", *shas, "--", text=False).stdout
    res = git.run("patch-id", "--stable", input=log, text=False).stdout
    assert isinstance(res, bytes)
    out = {}
    for line in res.decode().splitlines():
        pid, _, sha = line.partition(" ")
        if sha:
            out[sha] = pid
    return out


def diff_stats(git: Git, shas: Sequence[str]) -> dict[str, dict[str, int]]:
    """Files changed, lines inserted and deleted by each commit (binary files count as files); a
    merge shows none here (``git log`` gives no diff for it): see :class:`MergeChange`."""
    if not shas:
        return {}
    raw = git.run("log", "--no-walk=unsorted", "--numstat", "--no-renames", "--format=commit %H",
                  *shas, "--").stdout
    assert isinstance(raw, str)
    out: dict[str, dict[str, int]] = {}
    lines: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in raw.splitlines():
        if line.startswith("commit "):
            current = lines.setdefault(line[7:].strip(), [])
        elif current is not None:
            current.append(line)
    for sha, numstat in lines.items():
        out[sha] = _count_numstat(numstat)
    return out


def _count_numstat(lines: Sequence[str]) -> dict[str, int]:
    """Files, insertions and deletions of ``--numstat`` lines (a binary file counts as a file)."""
    out = {"files": 0, "insertions": 0, "deletions": 0}
    for line in lines:
        if not line.strip():
            continue
        added, deleted, _ = line.split("\t", 2)
        out["files"] += 1
        out["insertions"] += int(added) if added.isdigit() else 0
        out["deletions"] += int(deleted) if deleted.isdigit() else 0
    return out
