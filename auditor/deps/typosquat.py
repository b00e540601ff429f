"""Typosquat detection: a new package name a small edit away from a name already trusted.

The distance is the (unrestricted) Damerau-Levenshtein distance: insertions, deletions,
substitutions and transpositions of adjacent characters each cost 1. Names are compared in their
canonical form (PEP 503), so ``Py_Torch`` and ``py-torch`` are the same name. Very short names
collide by chance, so a name of four characters or fewer is only matched at distance 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from packaging.utils import canonicalize_name

from auditor.spec import POLICIES_DIR

POPULAR_FILE = POLICIES_DIR / "popular-packages.txt"


def damerau_levenshtein(a: str, b: str) -> int:
    """Edit distance with adjacent transpositions (Lowrance-Wagner, true Damerau-Levenshtein)."""
    if a == b:
        return 0
    if not a or not b:
        return len(a) or len(b)
    inf = len(a) + len(b)
    last_row: dict[str, int] = {}
    # d has a sentinel row/column at index 0; strings are 1-based from index 2
    d = [[inf] * (len(b) + 2) for _ in range(len(a) + 2)]
    for i in range(len(a) + 1):
        d[i + 1][0] = inf
        d[i + 1][1] = i
    for j in range(len(b) + 1):
        d[0][j + 1] = inf
        d[1][j + 1] = j
    for i in range(1, len(a) + 1):
        last_col = 0
        for j in range(1, len(b) + 1):
            i1 = last_row.get(b[j - 1], 0)
            j1 = last_col
            cost = 0 if a[i - 1] == b[j - 1] else 1
            if cost == 0:
                last_col = j
            d[i + 1][j + 1] = min(
                d[i][j] + cost,  # substitution
                d[i + 1][j] + 1,  # insertion
                d[i][j + 1] + 1,  # deletion
                d[i1][j1] + (i - i1 - 1) + 1 + (j - j1 - 1),  # transposition
            )
        last_row[a[i - 1]] = i
    return d[len(a) + 1][len(b) + 1]


@lru_cache(maxsize=4)
def popular_packages(path: Path = POPULAR_FILE) -> frozenset[str]:
    """The canonical names listed in ``policies/popular-packages.txt`` (one per line, # comments)."""
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(canonicalize_name(line))
    return frozenset(names)


@dataclass(frozen=True)
class Lookalike:
    name: str  # the new name
    resembles: str  # the trusted name it is close to
    distance: int
    source: str  # "upstream" or "popular"


def lookalikes(new: str, trusted: Iterable[tuple[str, str]], max_distance: int) -> list[Lookalike]:
    """Trusted names (name, source) within ``max_distance`` of ``new`` (itself excluded)."""
    new = canonicalize_name(new)
    limit = min(max_distance, 1) if len(new) <= 4 else max_distance
    out: dict[str, Lookalike] = {}
    for name, source in trusted:
        name = canonicalize_name(name)
        if name == new or abs(len(name) - len(new)) > limit or name in out:
            continue
        # "-" and "_" and "." are one separator after canonicalisation; also compare without it
        dist = min(damerau_levenshtein(new, name),
                   damerau_levenshtein(new.replace("-", ""), name.replace("-", "")) or 1)
        if 0 < dist <= limit:
            out[name] = Lookalike(new, name, dist, source)
    return sorted(out.values(), key=lambda x: (x.distance, x.name))
