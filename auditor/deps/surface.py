"""The deployed surface: which dependency declarations reach the server for an engine target.

A surface is a list of globs over tree paths (``*`` stays within a folder, ``**`` crosses folders),
each optionally followed by ``#group`` to take only part of a file (``pyproject.toml#build-system``,
``setup.py#install_requires``; the group is matched as a glob too). A requirements file on the
surface brings the files it ``-r``/``-c`` includes (transitively). The engine profile names the
globs per target (``policies/engines/*.toml``); ``[deps] deployed`` replaces them.

Declarations off the surface are still read, diffed and attributed; the deps stage only stops
counting their unpinned ranges as not checked and looking their pins up for vulnerabilities.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property, lru_cache
from typing import Any

from auditor.deps.declaration import Declaration, Extraction, Skip, Topic


@lru_cache(maxsize=512)
def _glob_re(glob: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(glob: str, path: str) -> bool:
    return bool(_glob_re(glob.lstrip("/")).match(path))


@dataclass(frozen=True)
class Entry:
    glob: str
    group: str | None  # None: the whole file

    @classmethod
    def parse(cls, text: str) -> Entry:
        path, sep, group = text.partition("#")
        return cls(path.strip(), group.strip() if sep else None)

    def takes(self, file: str, group: str) -> bool:
        if not path_matches(self.glob, file):
            return False
        # a file-level problem (group "") of a partly deployed file is deployed: it may hide the
        # deployed part
        return self.group is None or not group or fnmatchcase(group, self.group)


@dataclass(frozen=True)
class Surface:
    """The deployed part of one tree."""

    target: str  # the engine target, or "custom" for [deps] deployed
    source: str  # where the globs come from: "profile vllm, target cuda" / "[deps] deployed"
    globs: tuple[str, ...]
    files: tuple[str, ...]  # tree files on the surface (after includes), whole or in part
    computed_requires_from: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        return "**" in self.globs

    def deployed(self, d: Declaration) -> bool:
        return self._takes(d.file, d.group)

    def skip_deployed(self, s: Skip) -> bool:
        return self._takes(s.file, s.group)

    def _takes(self, file: str, group: str) -> bool:
        if file in self._included:
            return True
        return any(e.takes(file, group) for e in self._entries)

    @cached_property
    def _entries(self) -> tuple[Entry, ...]:
        return tuple(Entry.parse(g) for g in self.globs)

    @cached_property
    def _included(self) -> frozenset[str]:
        # files reached only through includes are deployed whole
        return frozenset(self.files) - {f for f in self.files
                                        if any(path_matches(e.glob, f) for e in self._entries)}

    def covers_computed(self, s: Skip) -> str | None:
        """For a computed install_requires of a deployed file: the surface file the profile says
        it is read from (so its declarations are already on the surface), else None."""
        if s.topic is not Topic.COMPUTED_REQUIRES or s.group not in (
                "install_requires", "dependencies"):
            return None
        for f in self.computed_requires_from:
            if f in self.files:
                return f
        return None

    def line(self) -> str:
        """One line for the report."""
        if self.everything:
            return (f"Deployed surface ({self.source}): every declaration in the tree "
                    f"({len(self.files)} files)")
        return (f"Deployed surface ({self.source}): {', '.join(self.globs)} "
                f"-> {len(self.files)} file(s) in the bundle")

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "source": self.source, "globs": list(self.globs),
                "files": list(self.files),
                "computed_requires_from": list(self.computed_requires_from),
                "summary": self.line()}


def build_surface(globs: Sequence[str], ex: Extraction, *, target: str, source: str,
                  computed_requires_from: Sequence[str] = ()) -> Surface:
    """The surface of ``globs`` over the files ``ex`` read, closed over requirements includes."""
    entries = [Entry.parse(g) for g in globs]
    read = set(ex.files) | {d.file for d in ex.declarations} | {s.file for s in ex.skipped}
    on = {f for f in read if any(path_matches(e.glob, f) for e in entries)}
    edges: dict[str, set[str]] = {}
    for src, dst in ex.includes:
        edges.setdefault(src, set()).add(dst)
    todo = list(on)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in on:
                on.add(nxt)
                todo.append(nxt)
    return Surface(target=target, source=source, globs=tuple(globs), files=tuple(sorted(on)),
                   computed_requires_from=tuple(f for f in computed_requires_from if f in on))


def split(decls: Iterable[Declaration], surface: Surface
          ) -> tuple[list[Declaration], list[Declaration]]:
    on: list[Declaration] = []
    off: list[Declaration] = []
    for d in decls:
        (on if surface.deployed(d) else off).append(d)
    return on, off
