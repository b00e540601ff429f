"""What to build: the series' changes (bundle manifest vs the upstream tree) against the recipe.

A module whose source globs match a changed path is rebuilt; the others are taken from the official
wheel. A changed native source that no module claims is an error (nobody knows how it would be
built). A binary the series added or changed is never used: it is left out of the build tree and of
the wheel, and reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from auditor.gitio import Git
from auditor.model import Workspace
from auditor.provenance.bundlefiles import bundle_root
from auditor.rebuild.globs import is_native, match_any
from auditor.rebuild.recipe import ModuleRecipe, Recipe

_BINARY_EXTENSIONS = (".so", ".o", ".a", ".dll", ".dylib", ".pyd", ".exe", ".bin", ".whl",
                      ".pyc", ".pyo", ".cubin", ".fatbin", ".egg", ".node", ".jar", ".class")
_MAGICS = (b"\x7fELF", b"MZ", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
           b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"!<arch>\n", b"\x00asm")


class ChangeKind(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


class ModuleAction(StrEnum):
    BUILT = "built"
    OFFICIAL = "official"


@dataclass(frozen=True)
class Change:
    path: str
    kind: ChangeKind
    mode: str | None  # the bundle's git mode (None when deleted)


@dataclass(frozen=True)
class ModuleDecision:
    module: ModuleRecipe
    action: ModuleAction
    changed: tuple[str, ...]  # the changed bundle paths that feed it


@dataclass(frozen=True)
class BuildPlan:
    changes: tuple[Change, ...]
    decisions: tuple[ModuleDecision, ...]
    unclaimed_native: tuple[str, ...]
    binaries: tuple[str, ...]  # added or modified bundle files that are binaries
    links: tuple[str, ...]  # added or modified symbolic links (a wheel holds none)

    @property
    def to_build(self) -> tuple[ModuleDecision, ...]:
        return tuple(d for d in self.decisions if d.action is ModuleAction.BUILT)


def upstream_files(ws: Workspace) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob) of every file of the upstream tree."""
    entries = Git(ws.upstream_repo).ls_tree(ws.upstream_tree)
    return {path: (e.mode, e.sha) for path, e in entries.items() if e.type == "blob"}


def changes_vs_upstream(ws: Workspace) -> tuple[Change, ...]:
    upstream = upstream_files(ws)
    out = []
    for path, bf in ws.manifest.items():
        if path not in upstream:
            out.append(Change(path, ChangeKind.ADDED, bf.mode))
        elif upstream[path] != (bf.mode, bf.blob):
            out.append(Change(path, ChangeKind.MODIFIED, bf.mode))
    out += [Change(p, ChangeKind.DELETED, None) for p in upstream if p not in ws.manifest]
    return tuple(sorted(out, key=lambda c: c.path))


def is_binary_file(path: Path) -> bool:
    if path.name.endswith(_BINARY_EXTENSIONS):
        return True
    with path.open("rb") as f:
        head = f.read(8192)
    return head.startswith(_MAGICS) or b"\x00" in head


def make_plan(ws: Workspace, recipe: Recipe, native_globs: Iterable[str]) -> BuildPlan:
    changes = changes_vs_upstream(ws)
    native_globs = tuple(native_globs)
    decisions = []
    claimed: set[str] = set()
    for module in recipe.modules:
        fed = tuple(c.path for c in changes if match_any(c.path, module.sources))
        claimed.update(fed)
        decisions.append(ModuleDecision(module, ModuleAction.BUILT if fed else ModuleAction.OFFICIAL,
                                        fed))
    binaries, links, unclaimed = [], [], []
    for c in changes:
        if c.kind is not ChangeKind.DELETED and c.mode == "120000":
            links.append(c.path)
            continue
        if c.kind is not ChangeKind.DELETED and is_binary_file(bundle_root(ws) / c.path):
            binaries.append(c.path)
            continue
        if is_native(c.path, native_globs) and c.path not in claimed:
            unclaimed.append(c.path)
    return BuildPlan(changes=changes, decisions=tuple(decisions), unclaimed_native=tuple(unclaimed),
                     binaries=tuple(binaries), links=tuple(links))


def last_commits(ws: Workspace) -> dict[str, str]:
    """For every path the series touched, the last series commit that touched it (one git call)."""
    out = Git(ws.patches_repo).run("log", "--format=%x01%H", "--name-only", "-z", "--no-renames",
                                   *ws.series_revs, check=False).stdout
    found: dict[str, str] = {}
    current = ""
    for token in out.split("\0"):
        token = token.strip("\n")
        if token.startswith("\x01"):
            head, _, rest = token[1:].partition("\n")
            current = head.strip()
            token = rest.strip("\n")
        if token and current:
            found.setdefault(token, current)  # git log is newest first
    return found


def wheel_path_for(bundle_path: str, source_root: str, packages: Iterable[str]) -> str | None:
    """Where a bundle file lands in the wheel: ``<source_root>/<pkg>/rest`` -> ``<pkg>/rest``."""
    rel = bundle_path
    if source_root:
        if not bundle_path.startswith(source_root + "/"):
            return None
        rel = bundle_path[len(source_root) + 1:]
    top = rel.split("/", 1)[0]
    return rel if "/" in rel and top in set(packages) else None


def package_folders(members: Mapping[str, object]) -> tuple[str, ...]:
    """The official wheel's top-level package folders (not .dist-info/.data)."""
    tops = {p.split("/", 1)[0] for p in members if "/" in p}
    return tuple(sorted(t for t in tops if not t.endswith((".dist-info", ".data"))))
