"""What differs between the replayed tree and the bundle, path by path, and why.

Each difference is added (only the bundle has it), removed (only the tree has it), modified
(content) or mode-changed, with sizes and modes, and for small text files a short unified diff.
Differences that ``git archive`` itself produces from the tree's ``.gitattributes`` are explained
and verified: ``export-ignore`` paths are left out of an archive, and ``export-subst`` files have
their ``$Format:…$`` placeholders expanded (the rest of the file must be byte-identical). Other
archive-time attributes (``filter``, ``ident``, ``eol``, ``working-tree-encoding``) are named as a
possible cause but not verified, so they stay unexplained.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from auditor.gitio import TreeEntry
from auditor.model import BundleFile
from auditor.provenance.bundlefiles import BundleFiles
from auditor.provenance.gitview import ProofGit
from auditor.provenance.treehash import MODE_GITLINK

DIFF_MAX_BYTES = 64 * 1024
DIFF_MAX_LINES = 60
DIFFS_MAX = 50  # unified diffs for at most this many files


class Change(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    MODIFIED = "modified"
    MODE_CHANGED = "mode-changed"


class Explanation(StrEnum):
    EXPORT_IGNORE = "export-ignore"
    EXPORT_SUBST = "export-subst"


@dataclass(frozen=True)
class Difference:
    path: str
    change: Change
    tree_mode: str | None = None
    bundle_mode: str | None = None
    tree_size: int | None = None
    bundle_size: int | None = None
    tree_blob: str | None = None
    bundle_blob: str | None = None
    diff: str | None = None
    explained: Explanation | None = None
    note: str = ""
    expansions: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": display(self.path), "change": self.change.value,
                               "tree_mode": self.tree_mode, "bundle_mode": self.bundle_mode,
                               "tree_size": self.tree_size, "bundle_size": self.bundle_size,
                               "tree_blob": self.tree_blob, "bundle_blob": self.bundle_blob,
                               "explained": self.explained.value if self.explained else None}
        if self.note:
            out["note"] = self.note
        if self.diff is not None:
            out["diff"] = self.diff
        if self.expansions:
            out["expansions"] = list(self.expansions)
        return out


def display(path: str) -> str:
    """A path that JSON and terminals can carry (undecodable bytes become ``\\xNN``)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def tree_entries(git: ProofGit, tree: str) -> dict[str, TreeEntry]:
    """Every blob and gitlink of a tree, recursively, by posix path, with blob sizes."""
    return git.ls_tree(tree, sizes=True)


def attributes(git: ProofGit, tree: str, paths: Iterable[str], names: Iterable[str],
               scratch: Path) -> dict[str, dict[str, str]]:
    """``git check-attr`` of ``paths`` as the tree's own ``.gitattributes`` set them."""
    paths = list(dict.fromkeys(paths))
    if not paths:
        return {}
    scratch.mkdir(parents=True, exist_ok=True)
    index = scratch / "attr.index"
    index.unlink(missing_ok=True)
    g = git.with_env(GIT_INDEX_FILE=str(index))
    g.run("read-tree", tree)
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    raw = g.run("check-attr", "--cached", "-z", "--stdin", *names, input=data,
                text=False).stdout
    assert isinstance(raw, bytes)
    parts = raw.split(b"\0")
    out: dict[str, dict[str, str]] = {}
    for i in range(0, len(parts) - 2, 3):
        value = parts[i + 2].decode("utf-8", "replace")
        if value != "unspecified":
            out.setdefault(os.fsdecode(parts[i]), {})[parts[i + 1].decode()] = value
    return out


def _prefixes(path: str) -> list[str]:
    """The parent folders (with a trailing ``/``, so folder-only patterns match) and the path."""
    parts = path.split("/")
    return ["/".join(parts[:i]) + "/" for i in range(1, len(parts))] + [path]


_ARCHIVE_ATTRS = ("export-ignore", "export-subst", "filter", "ident", "eol",
                  "working-tree-encoding")
_PLACEHOLDER = re.compile(rb"\$Format:([^$]*)\$")
# placeholders whose expansion needs a program (signatures: gpg) or state beyond the commit and
# the refs: never computed, so a file that uses them stays unexplained
_UNCOMPUTED = re.compile(rb"%G|%\(describe")
_SEP = b"\0\1\2\0"  # between the expansions of one git call (commit text holds no NUL)


def subst_expected(git: ProofGit, commit: str, tree_data: bytes) -> tuple[bytes, tuple[str, ...]] | None:
    """What ``git archive`` of ``commit`` writes for a file with ``export-subst`` whose content in
    the tree is ``tree_data``: every ``$Format:…$`` placeholder replaced by git's own expansion of
    it for that commit (computed with ``git log``'s format, in the sealed repository), and the
    expansions; None when there is no placeholder or one git would need a program for."""
    pieces = _PLACEHOLDER.split(tree_data)
    if len(pieces) == 1:
        return None
    formats = pieces[1::2]
    if any(_UNCOMPUTED.search(f) or b"\0" in f for f in formats):
        return None
    fmt = b"%x00%x01%x02%x00".join(formats)
    try:
        text = fmt.decode("utf-8")
    except UnicodeDecodeError:
        return None
    res = git.run("log", "-1", "--no-show-signature", "--no-color", "--no-notes",
                  f"--format=format:{text}", commit, "--", check=False, text=False)
    if res.returncode != 0:
        return None
    out = res.stdout
    assert isinstance(out, bytes)
    values = out.split(_SEP)
    if len(values) != len(formats):
        return None
    expected = b"".join(piece if i % 2 == 0 else values[i // 2]
                        for i, piece in enumerate(pieces))
    return expected, tuple(v.decode("utf-8", "replace") for v in values)


def _text(data: bytes) -> list[str] | None:
    if len(data) > DIFF_MAX_BYTES or b"\0" in data[:8000]:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def unified_diff(path: str, old: bytes, new: bytes) -> str | None:
    """A short unified diff when both sides are small text, secrets redacted."""
    a, b = _text(old), _text(new)
    if a is None or b is None:
        return None
    lines = list(difflib.unified_diff(a, b, f"tree/{display(path)}", f"bundle/{display(path)}",
                                      n=2))
    if len(lines) > DIFF_MAX_LINES:
        lines = lines[:DIFF_MAX_LINES] + [f"… {len(lines) - DIFF_MAX_LINES} more diff lines\n"]
    text = "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)
    return text  # redacted where it leaves (audit.json, the reports' redacted audit)


def _read_bundle(files: BundleFiles, f: BundleFile) -> bytes:
    return files.read_entries([f.path])[f.path]


def compare(git: ProofGit, tree: str, manifest: Mapping[str, BundleFile], files: BundleFiles,
            scratch: Path, commits: Sequence[str] = ()) -> list[Difference]:
    """Every difference between ``tree`` and the bundle, sorted by path, explained where git
    archive accounts for it; ``commits`` are those the bundle may be ``git archive`` of (their
    ``export-subst`` expansions are the only ones accepted)."""
    entries = tree_entries(git, tree)
    raw: list[Difference] = []
    for path, e in entries.items():
        f = manifest.get(path)
        if f is None:
            note = ("a submodule (gitlink) in the tree; a bundle cannot carry it"
                    if e.mode == MODE_GITLINK else "")
            raw.append(Difference(path, Change.REMOVED, tree_mode=e.mode, tree_size=e.size,
                                  tree_blob=e.sha, note=note))
        elif f.blob != e.sha:
            raw.append(Difference(path, Change.MODIFIED, tree_mode=e.mode, bundle_mode=f.mode,
                                  tree_size=e.size, bundle_size=f.size, tree_blob=e.sha,
                                  bundle_blob=f.blob))
        elif f.mode != e.mode:
            raw.append(Difference(path, Change.MODE_CHANGED, tree_mode=e.mode,
                                  bundle_mode=f.mode, tree_size=e.size, bundle_size=f.size,
                                  tree_blob=e.sha, bundle_blob=f.blob))
    for path, f in manifest.items():
        if path not in entries:
            raw.append(Difference(path, Change.ADDED, bundle_mode=f.mode, bundle_size=f.size,
                                  bundle_blob=f.blob))
    if not raw:
        return []
    wanted = [p for d in raw if d.change is not Change.ADDED for p in _prefixes(d.path)]
    attrs = attributes(git, tree, wanted, _ARCHIVE_ATTRS, scratch)
    out = []
    diffs = 0
    for d in sorted(raw, key=lambda d: os.fsencode(d.path)):
        d = _explain(git, d, attrs, manifest, files, commits)
        if (d.change is Change.MODIFIED and d.explained is None and diffs < DIFFS_MAX
                and d.tree_blob and d.path in manifest and d.tree_mode != MODE_GITLINK):
            diff = unified_diff(d.path, git.cat_blob(d.tree_blob),
                                _read_bundle(files, manifest[d.path]))
            if diff is not None:
                diffs += 1
                d = _with(d, diff=diff)
        out.append(d)
    return out


def _with(d: Difference, **kw: Any) -> Difference:
    from dataclasses import replace

    return replace(d, **kw)


def _explain(git: ProofGit, d: Difference, attrs: Mapping[str, Mapping[str, str]],
             manifest: Mapping[str, BundleFile], files: BundleFiles,
             commits: Sequence[str]) -> Difference:
    if d.change is Change.ADDED:
        return d
    if d.change is Change.REMOVED:
        ignored = next((p for p in _prefixes(d.path)
                        if attrs.get(p, {}).get("export-ignore") == "set"), None)
        if ignored is not None:
            where = "" if ignored == d.path else f" (set on {display(ignored)})"
            return _with(d, explained=Explanation.EXPORT_IGNORE,
                         note=f"export-ignore in .gitattributes{where}: git archive leaves "
                              f"it out")
        return d
    own = attrs.get(d.path, {})
    if (d.change is Change.MODIFIED and own.get("export-subst") == "set" and d.tree_blob
            and d.tree_mode == d.bundle_mode):
        tree_data = git.cat_blob(d.tree_blob)
        bundle_data = _read_bundle(files, manifest[d.path])
        for commit in dict.fromkeys(commits):
            expected = subst_expected(git, commit, tree_data)
            if expected is not None and expected[0] == bundle_data:
                return _with(d, explained=Explanation.EXPORT_SUBST, expansions=expected[1],
                             note=f"export-subst in .gitattributes: the file is what git archive "
                                  f"of {commit[:12]} writes ($Format:…$ placeholders expanded)")
        return _with(d, note="export-subst is set, but the file is not what git archive of "
                             f"{' or '.join(c[:12] for c in commits) or 'a commit'} writes: "
                             "its $Format:…$ placeholders hold other text, or it differs beyond "
                             "them")
    causes = [f"{k}={v}" for k, v in own.items()
              if k in ("filter", "ident", "eol", "working-tree-encoding") and v != "unset"]
    if causes and d.change is Change.MODIFIED:
        return _with(d, note="git archive applies " + ", ".join(causes)
                             + " to this file; not verified")
    return d
