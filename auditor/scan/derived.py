"""Derived scan targets: other readings of a bundle file, at the file's own line numbers.

Some files cannot be read by the scanners as they are, or mean something else than they look:

- a Dockerfile (:mod:`auditor.scan.dockerfile`): the shell text of its instructions becomes a
  ``bash`` target (and a heredoc fed to Python a ``python`` one) for the shell and environment
  rules, whatever semgrep's Dockerfile parser makes of the file itself;
- a Python file with a coding declaration (:mod:`auditor.scan.pycoding`): the text the interpreter
  decodes replaces the file for every scanner that does not read raw bytes.

A derived target keeps the bundle path; findings map back through its ``line_map`` (identity for
the Dockerfile readings). Its cache identity is its own text plus :data:`DIGEST` (the source of the
derivations), like the CUDA shim's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from auditor.scan import dockerfile, pycoding
from auditor.scan.interface import ScanTarget

DOCKERFILE_READING = "dockerfile-{family}"
PYTHON_DECODED = "python-decoded"


def _digest() -> str:
    h = hashlib.sha256()
    for mod in (dockerfile, pycoding):
        h.update(Path(str(mod.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


DIGEST = _digest()


def expand(targets: Sequence[ScanTarget]) -> list[ScanTarget]:
    """Every target, followed by its derived targets (a superseded one is marked so)."""
    out: list[ScanTarget] = []
    for t in targets:
        extra = derive(t)
        if any(d.derived == PYTHON_DECODED for d in extra):
            t = replace(t, superseded=True)
        out.append(t)
        out.extend(extra)
    return out


def derive(t: ScanTarget) -> list[ScanTarget]:
    if t.family == "dockerfile":
        return [_target(t, DOCKERFILE_READING.format(family=r.family), r.family, r.text,
                        covers=r.covers) for r in dockerfile.readings(t.text)]
    if t.family == "python":
        _coding, decoded = pycoding.decoded_reading(t.text)
        if decoded is not None:
            return [_target(t, PYTHON_DECODED, "python", decoded.text,
                            line_map=decoded.line_map)]
    return []


def _target(t: ScanTarget, how: str, family: str, text: str, *,
            covers: tuple[tuple[int, int], ...] = (),
            line_map: tuple[int, ...] = ()) -> ScanTarget:
    sha = hashlib.sha256(f"{how}\0{DIGEST}\0".encode() + text.encode("utf-8")).hexdigest()
    return ScanTarget(key=f"{t.key}#{how}", path=t.path, origin=t.origin, sha256=sha,
                      family=family, text=text, derived=how, line_map=line_map, covers=covers)
