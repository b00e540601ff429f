"""The series' changed hunks, each with an id that names its exact content.

One ``git log -p`` over the series' commits (each against its first parent, no renames, three lines
of context, full blob names) is parsed into :class:`Hunk` values. A hunk's :attr:`Hunk.digest` is the
SHA-256 of its path, its file-level kind (modified, new file with its mode, deleted) and its lines
exactly as the diff gives them, context included — but not its line numbers, the ``@@`` section
heading, or any commit sha. So the same series gives the same ids, a rebase that leaves a hunk's
content and context alone keeps its id, and any edit of the hunk (whitespace and indentation too:
they matter in Python) gives a new one. :attr:`Hunk.id` is the digest's first 16 hex digits, for
people; sign-offs record the full digest.

Two hunks of the series can have the same content (the same lines with the same context twice in a
file, or a change made, reverted and made again): each is a hunk of its own to review, so the
second and later ones add their occurrence (2, 3, … in series order) to the digest. The first
keeps the plain digest, so a series without repeats has the ids it always had.

Changes without text lines are hunks too, counted as one line each: a binary file (named by its old
and new blob), a mode change (the executable bit), an empty new or deleted file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from auditor.errors import ToolError
from auditor.gitio import Git
from auditor.gitpatch import header_path, hunk_ranges, side_path
from auditor.provenance.replay import automatic_merge
from auditor.results.review import ID_HEX as ID_HEX

CONTEXT = 3
_SCHEME = b"auditor/hunk/v1"


class HunkKind(StrEnum):
    TEXT = "text"
    BINARY = "binary"
    MODE = "mode"
    EMPTY = "empty"  # a new or deleted file without content


@dataclass(frozen=True)
class Hunk:
    id: str
    digest: str
    path: str
    commit: str
    kind: HunkKind
    start: int  # first line of the hunk in the commit's version of the file (old side if deleted)
    end: int
    added: int
    removed: int
    header: str  # the "@@ -a,b +c,d @@" line (display only; not part of the id)
    text: str  # the hunk's lines, decoded for display (not part of the id: the bytes are)
    occurrence: int = 1  # 2, 3, …: a repeat of an earlier hunk's exact content (see above)

    @property
    def lines(self) -> int:
        """Changed lines: added plus removed (a change without text lines counts as one)."""
        return self.added + self.removed if self.kind is HunkKind.TEXT else 1

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "commit": self.commit, "start": self.start,
                "end": self.end, "lines": self.lines, "occurrence": self.occurrence}


def hunk_digest(path: str, file_kind: bytes, body: bytes) -> str:
    h = hashlib.sha256()
    for part in (_SCHEME, os.fsencode(path), file_kind, body):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def series_hunks(git: Git, commits: Sequence[str]) -> tuple[Hunk, ...]:
    """Every hunk of every commit, in series order then diff order: a commit's diff against its
    parent; a two-parent merge's against git's own merge of its parents (a clean merge has none;
    the lines a merge adds or resolves by hand are its own)."""
    if not commits:
        return ()
    parents = dict(line.split(" ", 1) for line in git.out(
        "log", "--no-walk=unsorted", "--format=%H %P", *commits, "--").splitlines())
    merges = [c for c in commits if len(parents.get(c, "").split()) == 2]
    plain = [c for c in commits if c not in set(merges)]
    raw = b""
    if plain:
        out = git.run("log", "--no-walk=unsorted", "-p", "--no-color", "--no-ext-diff",
                      "--no-textconv", "--no-renames", "--full-index", f"-U{CONTEXT}",
                      "--diff-merges=first-parent", "--format=commit %H", *plain, "--",
                      text=False).stdout
        assert isinstance(out, bytes)
        raw += out
    for sha in merges:
        base = automatic_merge(git, parents[sha].split(), conflicts=True) or \
            parents[sha].split()[0]
        diff = git.run("diff-tree", "-p", "--no-color", "--no-ext-diff", "--no-textconv",
                       "--no-renames", "--full-index", f"-U{CONTEXT}", base, sha, "--",
                       text=False).stdout
        assert isinstance(diff, bytes)
        raw += f"commit {sha}\n\n".encode() + diff
    hunks = list(parse_log(raw))
    seen = {h.commit for h in hunks}
    order = {sha: i for i, sha in enumerate(commits)}
    unknown = seen - set(order)
    if unknown:
        raise ToolError(f"git log -p gave a commit that was not asked for: {sorted(unknown)[0]}")
    hunks.sort(key=lambda h: order[h.commit])  # stable: diff order within a commit is kept
    return with_occurrences(hunks)


def with_occurrences(hunks: Sequence[Hunk]) -> tuple[Hunk, ...]:
    """The hunks with unique digests: the n-th hunk (n >= 2) whose content repeats an earlier
    one's gets the digest of (its content's digest, n)."""
    seen: dict[str, int] = {}
    out: list[Hunk] = []
    for h in hunks:
        n = seen.get(h.digest, 0) + 1
        seen[h.digest] = n
        if n > 1:
            digest = occurrence_digest(h.digest, n)
            h = replace(h, id=digest[:ID_HEX], digest=digest, occurrence=n)
        out.append(h)
    return tuple(out)


def occurrence_digest(content_digest: str, occurrence: int) -> str:
    """The digest of the ``occurrence``-th hunk (from 2) with the content ``content_digest``."""
    h = hashlib.sha256()
    for part in (_SCHEME + b"/occurrence", content_digest.encode("ascii"),
                 str(occurrence).encode("ascii")):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


# ---------------------------------------------------------------- the patch parser


@dataclass
class _File:
    commit: str
    a_path: str | None = None
    b_path: str | None = None
    git_path: str = ""
    kind: bytes = b"modified"
    old_mode: bytes = b""
    new_mode: bytes = b""
    index: bytes = b""
    binary: bool = False
    had_hunks: bool = False

    @property
    def path(self) -> str:
        return self.b_path or self.a_path or self.git_path


def parse_log(raw: bytes) -> Iterator[Hunk]:
    """Hunks of ``git log -p --format='commit %H'`` output (see :func:`series_hunks`)."""
    lines = raw.split(b"\n")
    i = 0
    commit = ""
    current: _File | None = None
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"commit ") and len(line) == 47:
            if current is not None:
                yield from _file_level(current)
                current = None
            commit = line[7:].decode("ascii")
            i += 1
        elif line.startswith(b"diff --git "):
            if current is not None:
                yield from _file_level(current)
            if not commit:
                raise ToolError("git log -p: a diff before any commit line")
            current = _File(commit=commit, git_path=_git_header_path(line[11:]))
            i += 1
        elif current is not None and line.startswith(b"@@ "):
            hunk, i = _read_hunk(lines, i, current)
            current.had_hunks = True
            yield hunk
        elif current is not None:
            _header_line(current, line)
            i += 1
        else:
            i += 1  # blank lines between commits
    if current is not None:
        yield from _file_level(current)


def _header_line(f: _File, line: bytes) -> None:
    if line.startswith(b"new file mode "):
        f.kind, f.new_mode = b"new " + line[14:], line[14:]
    elif line.startswith(b"deleted file mode "):
        f.kind, f.old_mode = b"deleted " + line[18:], line[18:]
    elif line.startswith(b"old mode "):
        f.old_mode = line[9:]
    elif line.startswith(b"new mode "):
        f.new_mode = line[9:]
    elif line.startswith(b"index "):
        f.index = line[6:].split(b" ")[0]
    elif line.startswith(b"Binary files ") or line == b"GIT binary patch":
        f.binary = True
    elif line.startswith(b"--- "):
        f.a_path = side_path(line[4:], b"a/")
    elif line.startswith(b"+++ "):
        f.b_path = side_path(line[4:], b"b/")


def _read_hunk(lines: list[bytes], i: int, f: _File) -> tuple[Hunk, int]:
    header = lines[i]
    try:
        old_start, old_len, new_start, new_len = hunk_ranges(header)
    except ValueError:
        raise ToolError(f"git log -p: unreadable hunk header {header[:120]!r}") from None
    i += 1
    body: list[bytes] = []
    old_left, new_left = old_len, new_len
    added = removed = 0
    while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i].startswith(b"\\")):
        line = lines[i]
        tag = line[:1]
        if tag == b" ":
            old_left -= 1
            new_left -= 1
        elif tag == b"-":
            old_left -= 1
            removed += 1
        elif tag == b"+":
            new_left -= 1
            added += 1
        elif tag == b"\\":
            pass  # "\ No newline at end of file": part of the content
        else:
            raise ToolError(f"git log -p: hunk of {f.path!r} in {f.commit[:12]} ends early")
        if old_left < 0 or new_left < 0:
            raise ToolError(f"git log -p: hunk of {f.path!r} in {f.commit[:12]} is longer than "
                            "its header says")
        body.append(line)
        i += 1
    if old_left or new_left:
        raise ToolError(f"git log -p: hunk of {f.path!r} in {f.commit[:12]} is cut short")
    path = f.path
    data = b"\n".join(body)
    digest = hunk_digest(path, f.kind, data)
    if new_len:
        start, end = new_start, new_start + new_len - 1
    else:
        start = end = max(old_start, 1)
    text = data.decode("utf-8", "replace")
    return Hunk(id=digest[:ID_HEX], digest=digest, path=path, commit=f.commit,
                kind=HunkKind.TEXT, start=start, end=end, added=added, removed=removed,
                header="@@ " + b" ".join(header.split(b"@@")[1].split()[:2]).decode(
                    "ascii", "replace") + " @@",  # as git wrote the ranges
                text=text), i


def _file_level(f: _File) -> Iterator[Hunk]:
    """The hunks a file change has besides its text hunks: binary, mode, empty file."""
    path = f.path
    parts: list[tuple[HunkKind, bytes, str]] = []
    if f.binary:
        parts.append((HunkKind.BINARY, b"binary " + f.index,
                      f"binary file changed ({f.index.decode('ascii', 'replace')})"))
    elif not f.had_hunks and (f.kind.startswith(b"new ") or f.kind.startswith(b"deleted ")):
        parts.append((HunkKind.EMPTY, b"empty",
                      f"{'new' if f.kind.startswith(b'new ') else 'deleted'} empty file"))
    if f.old_mode and f.new_mode and f.kind == b"modified":
        parts.append((HunkKind.MODE, b"mode " + f.old_mode + b" " + f.new_mode,
                      f"mode {f.old_mode.decode('ascii', 'replace')} -> "
                      f"{f.new_mode.decode('ascii', 'replace')}"))
    for kind, body, text in parts:
        digest = hunk_digest(path, f.kind, body)
        yield Hunk(id=digest[:ID_HEX], digest=digest, path=path, commit=f.commit, kind=kind,
                   start=0, end=0, added=0, removed=0, header=f"({kind.value})", text=text)


def _git_header_path(rest: bytes) -> str:
    """The path of ``diff --git a/P b/P`` (renames are off, so both sides name the same path)."""
    return header_path(rest) or os.fsdecode(rest)
