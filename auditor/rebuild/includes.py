"""Which native sources of the bundle include a file, directly or through other headers.

Used to check a recipe's ``[sources_not_built]`` claim ("this target never compiles csrc/cpu/**")
against the code: a changed file the claim covers is still a module's source when a file the
module compiles includes it. An ``#include`` is resolved the way a compiler could: next to the
including file first, else to every bundle file whose path ends with the included name (include
directories are not read, so a name may resolve to more files than the compiler would pick —
more includers, never fewer).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

#: ``#include "x"`` and ``#include <x>``, at the start of a line (spaces allowed around ``#``)
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\r\n]+)[>"]', re.MULTILINE)


def included_names(text: bytes) -> tuple[str, ...]:
    """The names a source's ``#include`` lines name, in order."""
    return tuple(m.group(1).decode("utf-8", "replace").strip() for m in _INCLUDE.finditer(text))


class IncludeGraph:
    """Include edges between the given bundle files (bundle paths, ``/``-separated)."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = frozenset(files)
        by_name: dict[str, list[str]] = {}
        for path in files:
            by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
        self.includers: dict[str, set[str]] = {}
        for path, text in files.items():
            for name in included_names(text):
                for target in self._resolve(path, name, by_name):
                    self.includers.setdefault(target, set()).add(path)

    def _resolve(self, including: str, name: str,
                 by_name: Mapping[str, list[str]]) -> tuple[str, ...]:
        name = name.replace("\\", "/")
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(including), name))
        if beside in self.files:
            return (beside,)
        tail = "/" + name.lstrip("./")
        return tuple(p for p in by_name.get(name.rsplit("/", 1)[-1], ())
                     if p == name or ("/" + p).endswith(tail))

    def reaching(self, path: str) -> frozenset[str]:
        """Every file that includes ``path``, directly or through other files."""
        seen: set[str] = set()
        todo = [path]
        while todo:
            for includer in self.includers.get(todo.pop(), ()):
                if includer not in seen and includer != path:
                    seen.add(includer)
                    todo.append(includer)
        return frozenset(seen)


def include_graph(root: Path, paths: Iterable[str], keep: Callable[[str], bool],
                  max_bytes: int = 4 << 20) -> IncludeGraph:
    """The graph of the bundle files under ``root`` that ``keep`` admits (a file larger than
    ``max_bytes`` is read up to that size: includes sit at the top)."""
    files = {}
    for p in paths:
        if keep(p):
            with (root / p).open("rb") as f:
                files[p] = f.read(max_bytes)
    return IncludeGraph(files)
