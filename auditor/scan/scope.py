"""Scan scope and attribution: which files the series changed, and which commit a finding is on.

``diff`` scope keeps the files whose bundle blob differs from upstream's tree (or that upstream
lacks), and within them only findings whose line range touches a line that blame attributes to a
series commit (or that no commit explains). ``full`` scope keeps every file; findings whose
fingerprint upstream's copy of the same path also has are *inherited*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from auditor.gitio import Git
from auditor.model import Workspace
from auditor.provenance.blame import UNEXPLAINED


def upstream_blobs(ws: Workspace) -> dict[str, str]:
    """path -> blob sha of every file in upstream's tree (``git ls-tree -r``)."""
    entries = Git(ws.upstream_repo).ls_tree(ws.upstream_tree)
    return {path: e.sha for path, e in entries.items() if e.type == "blob" and e.mode != "120000"}


def changed_paths(ws: Workspace, upstream: Mapping[str, str]) -> set[str]:
    """Bundle files the series added or changed (symlinks are the verify stage's business)."""
    return {p for p, f in ws.manifest.items()
            if f.mode != "120000" and upstream.get(p) != f.blob}


def read_blobs(ws: Workspace, shas: Sequence[str]) -> dict[str, bytes]:
    """Blob contents by sha in one ``git cat-file --batch`` process (a missing one: ToolError)."""
    return Git(ws.upstream_repo).read_blobs(shas)


@dataclass(frozen=True)
class Attribution:
    """Where a finding sits relative to the series."""

    touches_series: bool  # some line of its range is the series' (or unexplained)
    commit: str | None  # the first attributed line's commit (None when unexplained/upstream)
    unexplained: bool  # that first attributed line is one no commit explains


def attribute(origins: Sequence[str | None] | None, line: int, end_line: int) -> Attribution:
    """Attribute the 1-based line range to the first series line in it. ``origins`` None means
    the file is upstream's unchanged."""
    if origins is None:
        return Attribution(False, None, False)
    for n in range(max(1, line), max(line, end_line) + 1):
        if n - 1 >= len(origins):
            break
        origin = origins[n - 1]
        if origin is None:
            continue
        if origin == UNEXPLAINED:
            return Attribution(True, None, True)
        return Attribution(True, origin, False)
    return Attribution(False, None, False)


def series_lines(origins: Iterable[str | None]) -> int:
    return sum(1 for o in origins if o is not None)
