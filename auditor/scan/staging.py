"""Staged copies of scan targets: the exact bytes that were hashed, under names a scanner knows.

Each scanner scans copies in its own folder rather than the bundle, so what it sees is what the
cache key describes, bundle ignore files play no part, and a file semgrep would not recognise by
name (``Dockerfile.cuda``, a CUDA file after the C++ shim) gets a suffix it does recognise.
Bundle copies go under ``b/``, upstream copies under ``u/``; the bundle path is kept below that so
rule path filters still apply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from auditor.scan.files import staged_name
from auditor.scan.interface import Origin, ScanTarget

_ROOTS = {Origin.BUNDLE: "b", Origin.UPSTREAM: "u"}


def stage(files: Sequence[ScanTarget], root: Path,
          transform: Callable[[ScanTarget], str] | None = None) -> dict[str, ScanTarget]:
    """Write each target below ``root``; returns staged relative path (posix) -> target."""
    out: dict[str, ScanTarget] = {}
    used: set[str] = set()
    for t in files:
        rel = staged_name(t.path, t.family)
        base = _ROOTS[t.origin]
        candidate = f"{base}/{rel}"
        n = 0
        # a suffixed name may collide with a real file of the bundle ("run" -> "run.sh")
        while candidate.lower() in used:
            n += 1
            candidate = f"{base}~{n}/{rel}"
        used.add(candidate.lower())
        dest = root / candidate
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = transform(t) if transform is not None else t.text
        dest.write_bytes(text.encode("utf-8"))
        out[candidate] = t
    return out


#: from this many bytes of staged copies on, a scanner's files are shared among its processes
SHARE_MIN = 1_000_000


def shares(rels: Sequence[str], root: Path, processes: int) -> list[list[str]]:
    """Staged copies (relative to ``root``) shared among ``processes`` groups of about the same
    bytes, each sorted (the largest copy first, each to the lightest group); one group when there
    are fewer than two processes or less than :data:`SHARE_MIN` bytes."""
    sizes = {rel: (root / rel).stat().st_size for rel in rels}
    if processes < 2 or len(sizes) < 2 or sum(sizes.values()) < SHARE_MIN:
        return [sorted(sizes)]
    groups: list[list[str]] = [[] for _ in range(processes)]
    load = [0] * processes
    for rel in sorted(sizes, key=lambda r: (-sizes[r], r)):
        k = load.index(min(load))
        groups[k].append(rel)
        load[k] += sizes[rel]
    return [sorted(g) for g in groups if g]
