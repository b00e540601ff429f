"""``git blame`` of many files at once: one ``git log -p`` over the series, walked back in Python.

Blame over ``upstream..head`` of a linear series gives each line of the head's file the newest
commit whose diff added it, or the upstream boundary: a line untouched by a commit's diff keeps
its place, shifted by the hunks above it, in the commit's parent. So one ``git log -p -U0`` over
the range (the same diffs blame computes: the same algorithm and heuristics, pinned for both
in :data:`DIFF_CONFIG`) and a walk from the newest commit to the oldest give blame's answer for
every file the series modified, where one ``git blame`` per file cost a process and ~15 ms each.

The walk answers only where it is sure. A file is left to ``git blame`` (:func:`walk` leaves it
out) when the range has a merge, when the file is created, deleted or binary somewhere in the
range (blame may follow a rename there), and whenever its diffs do not account for its text:
every line given to a commit must be the text that commit's hunk added, and every line left to
upstream must be upstream's line at the place the walk found. A name the log quotes unreadably
stops the whole walk (every file is then blamed). ``tests/provenance/test_provenance_serieswalk.py`` compares the walk with ``git
blame`` on generated series. Names and hunk headers are read by :mod:`auditor.gitpatch`, as
the review's hunks are.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from auditor.gitio import Git
from auditor.gitpatch import header_path, hunk_ranges, side_path

#: pinned for the log here and for ``git blame`` alike (a user's config could set either)
DIFF_CONFIG = ("-c", "diff.algorithm=myers", "-c", "diff.indentHeuristic=true")
_ANY = "\0"  # in unfollowable: a binary diff whose path could not be read
_DEV_NULL = "/dev/null"  # a side of a created or deleted file (no path of a tree starts with /)


@dataclass
class _Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    added: list[bytes] = field(default_factory=list)


@dataclass
class _Log:
    """The parsed log: each commit's hunks by path (newest commit first), and the paths the walk
    cannot follow."""

    commits: list[tuple[str, dict[str, list[_Hunk]]]] = field(default_factory=list)
    unfollowable: set[str] = field(default_factory=set)
    merges: bool = False


def walk(git: Git, revs: Sequence[str], heads: Mapping[str, bytes],
         upstreams: Mapping[str, bytes]) -> dict[str, tuple[list[str | None], list[bytes]]]:
    """Blame's answer, ``(origin per head line, head lines)``, for each path of ``heads`` (the
    head's bytes by path) that upstream has (``upstreams``: its bytes) and the walk can follow;
    the others are left out."""
    res = git.run(*DIFF_CONFIG, "log", "-p", "-U0", "--no-renames", "--no-ext-diff",
                  "--no-textconv", "--no-color", "--src-prefix=a/", "--dst-prefix=b/",
                  "--format=commit %H %P", *revs, check=False, text=False)
    if res.returncode != 0:
        return {}
    log = _parse(res.stdout if isinstance(res.stdout, bytes) else res.stdout.encode())
    if log.merges:
        return {}
    out: dict[str, tuple[list[str | None], list[bytes]]] = {}
    for path, head in heads.items():
        if path not in upstreams or path in log.unfollowable:
            continue
        lines = _lines(head)
        origins = _walk_one(log.commits, path, lines, _lines(upstreams[path]))
        if origins is not None:
            out[path] = (origins, lines)
    return out


def _lines(data: bytes) -> list[bytes]:
    """Lines as git counts them: split on newlines, a last line without one still a line."""
    rows = data.split(b"\n")
    if rows and rows[-1] == b"":
        rows.pop()
    return rows


def _parse(raw: bytes) -> _Log:
    log = _Log()
    rows = raw.split(b"\n")
    files: dict[str, list[_Hunk]] = {}
    old: str | None = None  # the file diff's "---" name, then (from "+++") its path
    path: str | None = None
    named: str | None = None  # the file diff's name from its "diff --git" row, if readable
    i = 0
    while i < len(rows):
        row = rows[i]
        i += 1
        if row.startswith(b"commit "):
            words = row.split()
            log.merges |= len(words) > 3
            files = {}
            log.commits.append((words[1].decode("ascii") if len(words) > 1 else "", files))
            old = path = None
        elif row.startswith(b"diff --git "):
            old = path = None
            named = header_path(row[len(b"diff --git "):])
        elif row.startswith(b"Binary files "):
            # a binary diff has no ---/+++ rows: its name is the "diff --git" row's, when that
            # row can be read; otherwise no path of the log is sure
            log.unfollowable.add(named if named is not None else _ANY)
        elif row.startswith(b"--- "):
            old = side_path(row[4:], b"a/") or _DEV_NULL
        elif row.startswith(b"+++ ") and old is not None:
            path = side_path(row[4:], b"b/") or _DEV_NULL
            if old != path:  # created or deleted: blame it
                log.unfollowable.update(n for n in (old, path) if n != _DEV_NULL)
                path = None
            else:
                files.setdefault(path, [])
        elif row.startswith(b"@@ ") and path is not None:
            i, hunk = _hunk(row, rows, i)
            if hunk is None:
                log.unfollowable.add(path)
                path = None
            else:
                files[path].append(hunk)
    if _ANY in log.unfollowable:
        log.unfollowable.update(p for _sha, fs in log.commits for p in fs)
    return log


def _hunk(header: bytes, rows: Sequence[bytes], i: int) -> tuple[int, _Hunk | None]:
    """The hunk of ``header`` with its body (from row ``i``), and the row after it; None for
    a hunk that cannot be read."""
    try:
        hunk = _Hunk(*hunk_ranges(header))
    except ValueError:
        return i, None
    # exactly old_len "-" rows and new_len "+" rows follow (and "\ No newline" notes): counted,
    # so a content row that looks like a header is never read as one
    want_old, want_new = hunk.old_len, hunk.new_len
    while want_old or want_new:
        if i >= len(rows):
            return i, None
        body = rows[i]
        i += 1
        if body[:1] == b"-" and want_old:
            want_old -= 1
        elif body[:1] == b"+" and want_new:
            want_new -= 1
            hunk.added.append(body[1:])
        elif body[:1] != b"\\":
            return i, None
    return i, hunk


def _walk_one(commits: Sequence[tuple[str, Mapping[str, Sequence[_Hunk]]]], path: str,
              head: list[bytes], upstream: list[bytes]) -> list[str | None] | None:
    """Each head line's commit (None: upstream's), or None when the diffs do not account for the
    text (see the module docstring)."""
    origins: list[str | None] = [None] * len(head)
    # the lines not yet given to a commit, as runs: (first head line, length, place in the
    # version being looked at, 1-based), in order of place
    runs: list[tuple[int, int, int]] = [(0, len(head), 1)] if head else []
    for sha, files in commits:
        hunks = files.get(path)
        if not hunks:
            continue
        moved = _through(runs, hunks, sha, head, origins)
        if moved is None:
            return None
        runs = moved
    for first, length, place in runs:
        if upstream[place - 1:place - 1 + length] != head[first:first + length]:
            return None
    return origins


def _through(runs: Iterable[tuple[int, int, int]], hunks: Sequence[_Hunk], sha: str,
             head: list[bytes], origins: list[str | None]) -> list[tuple[int, int, int]] | None:
    """The runs' places in the commit's parent; lines in the commit's hunks given to it."""
    # breakpoints of the new side: where each hunk's lines start and where the lines after it do
    starts = [h.new_start for h in hunks]
    ends = [h.new_start + h.new_len if h.new_len else h.new_start + 1 for h in hunks]
    shift = []  # shift of a line after hunk k (and before hunk k + 1): old place - new place
    total = 0
    for hunk in hunks:
        total += hunk.old_len - hunk.new_len
        shift.append(total)
    out: list[tuple[int, int, int]] = []
    for first, length, place in runs:
        end = place + length
        while place < end:
            k = bisect.bisect_right(starts, place) - 1  # the last hunk starting at or before
            h = hunks[k] if k >= 0 else None
            if h is not None and h.new_len and place < ends[k]:  # in hunk k: the commit's
                take = min(end, ends[k]) - place
                for j in range(take):
                    if h.added[place - h.new_start + j] != head[first + j]:
                        return None
                    origins[first + j] = sha
            else:
                # after hunk k (or before all): up to the next hunk's start
                nxt = starts[k + 1] if k + 1 < len(starts) else end
                if h is not None and not h.new_len and place < ends[k]:
                    nxt = min(nxt, ends[k])  # a deletion after line new_start: lines below move
                take = min(end, nxt) - place
                if take <= 0:
                    return None
                moved = place + (shift[k] if k >= 0 and place >= ends[k] else
                                 shift[k - 1] if k >= 1 else 0)
                if moved < 1:
                    return None
                out.append((first, take, moved))
            first += take
            place += take
    return out
