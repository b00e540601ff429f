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

from collections.abc import Sequence

from auditor.rebuild.globs import match_any

# the areas as values, and their parsing (the spec reads them), live in the results layer
from auditor.results.review import DEFAULT_OTHER as DEFAULT_OTHER
from auditor.results.review import OTHER as OTHER
from auditor.results.review import ReviewArea as ReviewArea
from auditor.results.review import parse_areas as parse_areas


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
