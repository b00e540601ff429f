"""The slice cache: each diff-scope slice (:mod:`auditor.scan.diffslice`) stored by path, content
and what blame's answer depends on, so a warm run neither blames nor parses.

What blame depends on is the series' identity (:func:`blame_identity`: git's settings and the two
commits), or, for a path the series only modifies in place on a line of single-parent commits
(:func:`path_histories`), git's settings and the blobs the path goes through.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import ToolError
from auditor.fsutil import JsonStore
from auditor.gitio import Git
from auditor.model import Workspace
from auditor.provenance.gitstate import git_settings
from auditor.scan.interface import ScanTarget
from auditor.scan.pyast import Slice

SLICE_CACHE_SCHEMA = "auditor/slice-cache/v1"


class SliceCache:
    """Slices by (path, file sha256, what blame's answer depends on): a warm run, and an upgrade
    gate whose rebased series gives a file the same blobs, need no blame to find them.

    What blame's answer depends on is the series identity (:func:`blame_identity`: git's settings
    and the two commits), or, for a path the series only modifies in place on a line of
    single-parent commits on upstream (:func:`path_histories`), git's settings, upstream's blob
    and the blobs the commits give the path, in order: which lines of the file the series wrote
    follows from those blobs alone. An entry is a JSON file holding the replaced lines (or that
    the file is scanned whole). Unreadable entries are misses; a cache that cannot be written
    only costs speed."""

    def __init__(self, root: Path, series: str, settings: str = "",
                 histories: SeriesPaths | None = None,
                 upstream: Mapping[str, str] | None = None) -> None:
        self.store = JsonStore(root / "slice")
        # entries are written on a thread of their own (file system calls let the parsing go on)
        self._writer: ThreadPoolExecutor | None = None
        self.series = series
        self.settings = settings
        self.histories = histories
        self.upstream = upstream or {}

    def _blame_key(self, path: str) -> list[object]:
        h = self.histories
        if h is None or path in h.moved or path not in self.upstream:
            return [self.series]
        return [self.settings, self.upstream[path], list(h.blobs.get(path, ()))]

    def _key(self, t: ScanTarget) -> str:
        from auditor.scan.cache import code_digest

        raw = json.dumps([SLICE_CACHE_SCHEMA, code_digest(), self._blame_key(t.path), t.path,
                          t.sha256])
        return hashlib.sha256(raw.encode()).hexdigest()

    def get(self, t: ScanTarget) -> tuple[bool, Slice | None]:
        """(found, the slice or None for "scan it whole")."""
        data = self.store.get(self._key(t))
        if data is None:
            return False, None
        if data.get("whole"):
            return True, None
        try:
            lines = t.text.split("\n")
            for n, text in data["edits"]:
                if not 1 <= int(n) <= len(lines):
                    return False, None
                lines[int(n) - 1] = str(text)
            return True, Slice("\n".join(lines), int(data["functions"]), int(data["lines"]))
        except (ValueError, KeyError, TypeError):
            return False, None

    def put(self, t: ScanTarget, s: Slice | None) -> None:
        doc: dict[str, object] = {"whole": s is None}
        if s is not None:
            old = t.text.split("\n")
            doc.update(functions=s.functions, lines=s.lines,
                       edits=[[n, line] for n, line in enumerate(s.text.split("\n"), start=1)
                              if line != old[n - 1]])
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="auditor-slices")
        self._writer.submit(self.store.put, self._key(t), doc)

    def flush(self) -> None:
        """Wait until every entry given to :meth:`put` is written (or failed to be)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None


def slice_cache(cache_dir: Path | None, ws: Workspace,
                upstream: Mapping[str, str] | None = None) -> SliceCache | None:
    """The slice cache of this series under ``cache_dir`` (None: no cache, or git could not say
    what the series' identity is); ``upstream`` maps upstream's paths to their blobs."""
    if cache_dir is None:
        return None
    try:
        settings = blame_settings(ws)
        return SliceCache(cache_dir, blame_identity(ws, settings), settings, path_histories(ws),
                          upstream)
    except (ToolError, OSError):
        return None


def _digest(parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def blame_identity(ws: Workspace, settings: str | None = None) -> str:
    """What blame over the series says depends on: the two commits and git's settings
    (:func:`blame_settings`, computed unless given). Two runs with the same identity blame
    alike."""
    return _digest([settings or blame_settings(ws), ws.upstream_commit, ws.head_commit])


@dataclass(frozen=True)
class SeriesPaths:
    """What the series' commits do to each path (:func:`path_histories`)."""

    blobs: Mapping[str, tuple[str, ...]]  # path -> the blobs its commits give it, in order
    moved: frozenset[str]  # paths some commit adds, deletes or changes the type of


def path_histories(ws: Workspace) -> SeriesPaths | None:
    """For each path the series modifies in place: the blobs its commits give it, in order; the
    paths some commit adds, deletes or changes the type of apart (blame could follow such a path
    to another's history). None unless the series is one line of single-parent commits from
    upstream to head. One ``git log --no-renames --raw``."""
    git = Git(ws.patches_repo)
    res = git.run("log", "--reverse", "--raw", "-z", "--no-renames", "--no-abbrev",
                  "--no-ext-diff", "--format=%x01%H %P",
                  *ws.series_revs, text=False)
    raw = res.stdout if isinstance(res.stdout, bytes) else res.stdout.encode()
    parent = ws.upstream_commit
    blobs: dict[str, list[str]] = {}
    moved: set[str] = set()
    tokens = iter(raw.split(b"\0"))
    for token in tokens:
        tok = token.lstrip(b"\n")
        if tok.startswith(b"\x01"):
            sha, *parents = tok[1:].decode("ascii").split()
            if parents != [parent]:
                return None
            parent = sha
        elif tok.startswith(b":"):
            path = next(tokens, b"").decode("utf-8", "surrogateescape")
            _ma, _mb, _old, new, status = tok[1:].decode("ascii").split()
            if status != "M":
                moved.add(path)
            blobs.setdefault(path, []).append(new)
        elif tok:
            return None
    if parent != ws.head_commit:
        return None
    return SeriesPaths(blobs={p: tuple(b) for p, b in blobs.items() if p not in moved},
                       moved=frozenset(moved))


def blame_settings(ws: Workspace) -> str:
    """git's settings that can change what blame says of the same commits
    (:func:`~auditor.provenance.gitstate.git_settings` of the patches repository)."""
    return git_settings(Git(ws.patches_repo))
