"""Review areas of an engine profile: which changed paths go together, and what to look for there.

An engine profile's ``[review_areas]`` table holds one sub-table per area, in order::

    [review_areas.kernels]
    title = "CUDA/C++ kernels (csrc/)"
    globs = ["csrc/**", "*.cu"]
    checklist = ["Out-of-bounds reads or writes", ...]

A path belongs to the first area whose globs match it (:mod:`auditor.rebuild.globs` syntax). A path
that no area claims belongs to :data:`OTHER`, which is always present (last) even when a profile
declares no areas.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.errors import SpecError
from auditor.rebuild.globs import match_any

OTHER = "other"
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


@dataclass(frozen=True)
class ReviewArea:
    name: str  # short key: kernels, build, ...
    title: str
    globs: tuple[str, ...]
    checklist: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "globs": list(self.globs),
                "checklist": list(self.checklist)}


DEFAULT_OTHER = ReviewArea(OTHER, "Everything else", ("**",), (
    "Network, process execution, file access, deserialization, credentials, obfuscation",))


def parse_areas(raw: Mapping[str, Any], *, file: Path) -> tuple[ReviewArea, ...]:
    """The areas of a profile's ``[review_areas]`` table; a malformed one is a SpecError."""
    out: list[ReviewArea] = []
    for name, body in raw.items():
        key = f"review_areas.{name}"
        if not _NAME.fullmatch(name):
            raise SpecError("an area name is lower-case letters, digits, _ or -",
                            file=str(file), key=key)
        if not isinstance(body, dict):
            raise SpecError(f"expected a table, got {type(body).__name__}", file=str(file), key=key)
        unknown = sorted(set(body) - {"title", "globs", "checklist"})
        if unknown:
            raise SpecError("unknown key", file=str(file), key=f"{key}.{unknown[0]}")
        title = body.get("title", name)
        if not isinstance(title, str) or not title.strip():
            raise SpecError("expected a non-empty string", file=str(file), key=f"{key}.title")
        globs = _strings(body.get("globs"), file, f"{key}.globs", required=True)
        checklist = _strings(body.get("checklist", []), file, f"{key}.checklist", required=False)
        out.append(ReviewArea(name, title, globs, checklist))
    if not any(a.name == OTHER for a in out):
        out.append(DEFAULT_OTHER)
    return tuple(out)


def _strings(value: Any, file: Path, key: str, *, required: bool) -> tuple[str, ...]:
    if value is None or not isinstance(value, list) or (required and not value):
        raise SpecError("expected a non-empty list of strings" if required
                        else "expected a list of strings", file=str(file), key=key)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise SpecError(f"expected a non-empty string, got {item!r}", file=str(file),
                            key=f"{key}[{i}]")
    return tuple(value)


def profile_areas(areas: Sequence[ReviewArea]) -> tuple[ReviewArea, ...]:
    """The areas to use: the profile's, always ending in one catch-all :data:`OTHER`."""
    if not areas:
        return (DEFAULT_OTHER,)
    other = [a for a in areas if a.name == OTHER]
    return tuple(a for a in areas if a.name != OTHER) + (other[0] if other else DEFAULT_OTHER,)


def area_of(path: str, areas: Sequence[ReviewArea]) -> str:
    """The name of the first area whose globs match ``path``, else :data:`OTHER`."""
    for area in areas:
        if area.name != OTHER and match_any(path, area.globs):
            return area.name
    return OTHER
