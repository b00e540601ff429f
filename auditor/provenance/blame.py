"""Which series commit introduced each line of a bundle file (diff scope and attribution).

``git blame`` over the range ``upstream..head`` gives, for every line of the head's version of a
file, the last series commit that changed it, or the upstream boundary. When the bundle's copy
differs from the head's, its lines are mapped onto the head's with a sequence match; lines that the
series does not explain are marked :data:`UNEXPLAINED`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from auditor.gitio import Git
from auditor.lines import split_lines
from auditor.model import Workspace
from auditor.provenance import serieswalk
from auditor.provenance.bundlefiles import bundle_files

#: a line that is in upstream already (not the series' doing)
UPSTREAM: None = None
#: a line of the bundle that neither upstream nor any series commit has
UNEXPLAINED = "unexplained"
# a porcelain header row: the commit (40 hex digits), then its line numbers
_HEADER = re.compile(rb"[0-9a-f]{40}(?= |$)")


def _blame(git: Git, revs: Sequence[str], path: str) -> tuple[list[str | None], list[str]] | None:
    """(origin per head line, head lines) or None when the head has no such file."""
    res = git.run(*serieswalk.DIFF_CONFIG, "blame", "--porcelain", *revs, "--", path,
                  check=False, text=False)
    if res.returncode != 0:
        return None
    origins: list[str | None] = []
    rows: list[bytes] = []
    boundary: set[bytes] = set()
    current = b""
    origin: str | None = None  # current's origin, decoded once per header
    raw = res.stdout if isinstance(res.stdout, bytes) else res.stdout.encode()
    for row in raw.split(b"\n"):
        if row[:1] == b"\t":
            rows.append(row)
            origins.append(origin)
        elif row == b"boundary":
            boundary.add(current)
            origin = None
        elif _HEADER.match(row):
            # the commit of the next line (a 40-hex word begins no other row of the format)
            current = row[:40]
            origin = None if current in boundary else current.decode("ascii")
    return origins, _decoded(r[1:] for r in rows)


def _decoded(rows: Iterable[bytes]) -> list[str]:
    return [r.decode("utf-8", "replace").removesuffix("\r") for r in rows]


Blamed = tuple[list[str | None], list[str]]


def walked(ws: Workspace, paths: Sequence[str]) -> dict[str, Blamed]:
    """``git blame``'s answer for those of ``paths`` the series walk can give
    (:mod:`auditor.provenance.serieswalk`: one ``git log`` for all); the others are left out, for
    :func:`line_origins` to blame one by one."""
    git = Git(ws.patches_repo)
    try:
        heads = git.ls_tree(ws.head_tree)
        uppers = git.ls_tree(ws.upstream_tree)
        want = [p for p in paths if p in heads and p in uppers and heads[p].type == "blob"
                and uppers[p].type == "blob" and "\n" not in p]
        blobs = git.read_blobs([heads[p].sha for p in want] + [uppers[p].sha for p in want])
        found = serieswalk.walk(git, ws.series_revs,
                                {p: blobs[heads[p].sha] for p in want},
                                {p: blobs[uppers[p].sha] for p in want})
    except Exception:  # noqa: BLE001 - the walk only saves time: on any failure, git blame
        return {}  # answers each file (and says what is wrong, if anything is)
    return {p: (origins, _decoded(lines)) for p, (origins, lines) in found.items()}


def line_origins(ws: Workspace, path: str, bundle_text: str | None = None,
                 blamed: Blamed | None = None) -> list[str | None]:
    """For each line (0-based) of the bundle's ``path``: the introducing series commit's sha,
    :data:`UPSTREAM` (None) for inherited lines, or :data:`UNEXPLAINED`. ``blamed``: blame's
    answer for the path when already known (:func:`walked`)."""
    if bundle_text is None:
        text = bundle_files(ws).read_one(path).decode("utf-8", errors="replace")
        # as Path.read_text read it before: universal newlines
        bundle_text = text.replace("\r\n", "\n").replace("\r", "\n")
    bundle_lines = split_lines(bundle_text)
    if blamed is None:
        blamed = _blame(Git(ws.patches_repo), ws.series_revs, path)
    if blamed is None:
        return [UNEXPLAINED] * len(bundle_lines)
    origins, head_lines = blamed
    if ws.upstream_picks:  # upstream's own commits applied again: their lines are upstream's
        origins = [UPSTREAM if o in ws.upstream_picks else o for o in origins]
    if head_lines == bundle_lines:
        return origins
    out: list[str | None] = [UNEXPLAINED] * len(bundle_lines)
    matcher = difflib.SequenceMatcher(a=head_lines, b=bundle_lines, autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            out[b + k] = origins[a + k]
    return out
