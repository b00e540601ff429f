"""What to build: the series' changes (bundle manifest vs the upstream tree) against the recipe.

A module whose source globs match a changed path is rebuilt; the others are taken from the official
wheel. A changed native source that no module claims is an error (nobody knows how it would be
built), unless the recipe's ``[sources_not_built]`` says this target never compiles it (another
device's backend) and no file a module compiles includes it: then it is left out of the build tree
(a wrong claim breaks the build instead of hiding in it) and reported. A file a module compiles
that includes it makes it that module's source. A binary the series added or changed is never used: it is left out of the build tree and of
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
from auditor.rebuild.cmakelists import (
    CMakeSyntaxError,
    Effect,
    Reason,
    change_effect,
    host_writes,
    targets_of_files,
)
from auditor.rebuild.cmakelists import parse as parse_cmake
from auditor.rebuild.globs import is_native, match_any
from auditor.rebuild.includes import include_graph
from auditor.rebuild.recipe import BuilderKind, ModuleRecipe, Recipe

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
    #: how a changed CMake file reaches it ("CMakeLists.txt:768: list(APPEND ...) changed: _moe_C")
    why: tuple[str, ...] = ()


@dataclass(frozen=True)
class BuildPlan:
    changes: tuple[Change, ...]
    decisions: tuple[ModuleDecision, ...]
    unclaimed_native: tuple[str, ...]
    binaries: tuple[str, ...]  # added or modified bundle files that are binaries
    links: tuple[str, ...]  # added or modified symbolic links (a wheel holds none)
    #: extension targets the bundle's CMake defines that the recipe neither builds nor excuses
    unlisted_targets: tuple[str, ...] = ()
    #: what the changed CMake files do (arch list changes, changes with no build effect)
    cmake_notes: tuple[str, ...] = ()
    #: changed native sources this target never compiles: (path, the recipe's reason)
    not_built: tuple[tuple[str, str], ...] = ()

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


def is_cmake_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == "CMakeLists.txt" or path.endswith(".cmake")


def _under(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def make_plan(ws: Workspace, recipe: Recipe, native_globs: Iterable[str]) -> BuildPlan:
    changes = changes_vs_upstream(ws)
    native_globs = tuple(native_globs)
    cmake_dirs = sorted({m.cmake.source_dir for m in recipe.modules if m.cmake is not None})
    configure_args = tuple(a for m in recipe.modules if m.cmake is not None
                           for a in m.cmake.configure_args)
    effects, host_notes = _cmake_effects(ws, changes, cmake_dirs, configure_args)
    fed: dict[str, list[str]] = {m.name: [] for m in recipe.modules}
    whys: dict[str, list[str]] = {m.name: [] for m in recipe.modules}
    claimed: set[str] = set(effects)
    for module in recipe.modules:
        sd = module.cmake.source_dir if module.cmake is not None else None
        fed[module.name] += [c.path for c in changes if _compiles(module, c.path)
                             and not (sd is not None and is_cmake_file(c.path)
                                      and _under(c.path, sd))]
        if module.builder is BuilderKind.CMAKE and module.cmake is not None:
            for path, effect in sorted(effects.items()):
                if not _under(path, module.cmake.source_dir):
                    continue
                if effect.everything or module.cmake.target in effect.targets:
                    fed[module.name].append(path)
                    whys[module.name] += effect.why(module.cmake.target)
        claimed.update(fed[module.name])
    binaries: list[str] = []
    links: list[str] = []
    unclaimed: list[str] = []
    candidates: list[str] = []
    for c in changes:
        if c.kind is not ChangeKind.DELETED and c.mode == "120000":
            links.append(c.path)
            continue
        if c.kind is not ChangeKind.DELETED and is_binary_file(bundle_root(ws) / c.path):
            binaries.append(c.path)
            continue
        if is_native(c.path, native_globs) and c.path not in claimed:
            (candidates if _not_built_reason(recipe, c.path) else unclaimed).append(c.path)
    not_built = _not_built_sources(ws, recipe, native_globs, candidates, fed, whys)
    decisions = tuple(
        ModuleDecision(m, ModuleAction.BUILT if fed[m.name] else ModuleAction.OFFICIAL,
                       tuple(sorted(set(fed[m.name]))), tuple(dict.fromkeys(whys[m.name])))
        for m in recipe.modules)
    notes = host_notes + [f"{path}: {a}" for path, e in sorted(effects.items())
                          for a in e.arch_changes]
    notes += [r.text for _, e in sorted(effects.items()) for r in e.reasons
              if not r.everything and not r.targets]
    return BuildPlan(changes=changes, decisions=decisions, unclaimed_native=tuple(unclaimed),
                     binaries=tuple(binaries), links=tuple(links),
                     unlisted_targets=unlisted_targets(ws, recipe, cmake_dirs),
                     cmake_notes=tuple(notes), not_built=tuple(not_built))


def _not_built_sources(ws: Workspace, recipe: Recipe, native_globs: tuple[str, ...],
                       candidates: list[str], fed: dict[str, list[str]],
                       whys: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The changed sources ``[sources_not_built]`` covers that no module's source includes, with
    the recipe's reason; one that a module's source includes is added to that module's changes."""
    if not candidates:
        return []
    graph = include_graph(bundle_root(ws), ws.manifest,
                          lambda p: ws.manifest[p].mode != "120000" and is_native(p, native_globs))
    out = []
    for path in candidates:
        includers = graph.reaching(path)
        reached = False
        for module in recipe.modules:
            via = sorted(p for p in includers if _compiles(module, p))
            if via:
                reached = True
                fed[module.name].append(path)
                whys[module.name].append(
                    f"{path} (in [sources_not_built]) is included by {via[0]}"
                    + (f" and {len(via) - 1} more of its sources" if len(via) > 1 else ""))
        if not reached:
            out.append((path, _not_built_reason(recipe, path)))
    return out


def _compiles(module: ModuleRecipe, path: str) -> bool:
    """The module's source globs claim ``path``."""
    return match_any(path, module.sources) and not match_any(path, module.exclude)


def _not_built_reason(recipe: Recipe, path: str) -> str:
    """The recipe's reason that this target never compiles ``path`` ("" when it says none)."""
    return next((why for glob, why in recipe.sources_not_built if match_any(path, (glob,))), "")


def _cmake_effects(ws: Workspace, changes: tuple[Change, ...], cmake_dirs: list[str],
                   configure_args: tuple[str, ...]) -> tuple[dict[str, Effect], list[str]]:
    """Changed CMake file -> what it reaches (added or deleted: everything), and the notes on
    how it was read (the branches a Linux build never takes, or why they were read as live)."""
    out: dict[str, Effect] = {}
    cmake_changes = [c for c in changes if is_cmake_file(c.path)
                     and any(_under(c.path, d) for d in cmake_dirs)]
    if not cmake_changes:
        return out, []
    upstream = upstream_files(ws)
    linux_only, notes = _host_fixed(ws, cmake_dirs, configure_args)
    for c in cmake_changes:
        if c.kind is not ChangeKind.MODIFIED or c.mode == "120000":
            out[c.path] = Effect(frozenset(), True, (Reason(f"{c.path}: {c.kind.value}: every "
                                                            "target", everything=True),))
            continue
        old = Git(ws.upstream_repo).cat_blob(upstream[c.path][1]).decode("utf-8", "replace")
        new = (bundle_root(ws) / c.path).read_text("utf-8", "replace")
        out[c.path] = change_effect(c.path, old, new, linux_only=linux_only)
    return out, notes


def _host_fixed(ws: Workspace, cmake_dirs: list[str],
                configure_args: tuple[str, ...]) -> tuple[bool, list[str]]:
    """Whether the host-platform branches (if(WIN32), …) can be read as this Linux host takes
    them: only when no CMake file of the bundle (nor a configure argument) can set the variables
    they test."""
    root = bundle_root(ws)
    files = []
    for p in sorted(ws.manifest):
        if is_cmake_file(p) and any(_under(p, d) for d in cmake_dirs):
            try:
                files.append((p, parse_cmake((root / p).read_text("utf-8", "replace"))))
            except CMakeSyntaxError as exc:
                return False, [f"{p} cannot be read as CMake ({exc}): branches such as "
                               "if(WIN32) are read as taken"]
    found = host_writes(files, configure_args)
    if found:
        return False, [f"{found[0]} can set what if(WIN32), if(MSVC), if(APPLE), … test: those "
                       "branches are read as taken"
                       + (f" ({len(found) - 1} more such)" if len(found) > 1 else "")]
    return True, []


def unlisted_targets(ws: Workspace, recipe: Recipe, cmake_dirs: list[str]) -> tuple[str, ...]:
    """Extension targets of the bundle's CMake code that the recipe omits, one message each."""
    built = {m.cmake.target for m in recipe.modules if m.cmake is not None}
    out = []
    root = bundle_root(ws)
    for sd in cmake_dirs:
        files = [p for p in ws.manifest if _under(p, sd) and is_cmake_file(p)
                 and (p.endswith(".cmake") or p == (f"{sd}/CMakeLists.txt" if sd
                                                    else "CMakeLists.txt"))]
        try:
            defined = targets_of_files({p: (root / p).read_text("utf-8", "replace")
                                        for p in sorted(files)})
        except CMakeSyntaxError as exc:
            out.append(f"the bundle's CMake code cannot be read for its extension targets: {exc}")
            continue
        for name, where in sorted(defined.items()):
            if name not in built and name not in recipe.targets_not_built:
                out.append(f"the bundle's CMake defines the extension target {name} ({where}); "
                           f"the recipe {recipe.path.name} neither builds it (a module with "
                           f"cmake.target = \"{name}\") nor lists it in [targets_not_built]")
    return tuple(out)


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
