"""Which GPU architectures an nvcc release can target, and which release could when it cannot.

Facts from NVIDIA's CUDA release notes: CUDA 12.0 removed Kepler (sm_35, sm_37); CUDA 13.0 removed
Maxwell, Pascal and Volta (sm_50 to sm_72) and renamed Thor's sm_101 to sm_110. New architectures
arrive with the release listed as ``first``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# arch number -> (family, first CUDA release that targets it, last release that still does or None)
_SUPPORT: dict[int, tuple[str, tuple[int, int], tuple[int, int] | None]] = {
    35: ("Kepler", (5, 0), (11, 8)), 37: ("Kepler", (6, 5), (11, 8)),
    50: ("Maxwell", (6, 0), (12, 9)), 52: ("Maxwell", (7, 0), (12, 9)),
    53: ("Maxwell", (7, 0), (12, 9)),
    60: ("Pascal", (8, 0), (12, 9)), 61: ("Pascal", (8, 0), (12, 9)),
    62: ("Pascal", (8, 0), (12, 9)),
    70: ("Volta", (9, 0), (12, 9)), 72: ("Volta", (10, 0), (12, 9)),
    75: ("Turing", (10, 0), None),
    80: ("Ampere", (11, 0), None), 86: ("Ampere", (11, 1), None), 87: ("Ampere", (11, 4), None),
    89: ("Ada", (11, 8), None), 90: ("Hopper", (11, 8), None),
    100: ("Blackwell", (12, 8), None), 101: ("Blackwell (Thor)", (12, 8), (12, 9)),
    103: ("Blackwell", (12, 9), None), 110: ("Blackwell (Thor)", (13, 0), None),
    120: ("Blackwell", (12, 8), None), 121: ("Blackwell", (12, 9), None),
}


@dataclass(frozen=True)
class ArchProblem:
    arch: str  # as the recipe wrote it
    message: str


def _number(arch: str) -> int | None:
    m = re.match(r"^(\d+)\.?(\d+)?", arch)
    if not m:
        return None
    return int(m.group(1) + (m.group(2) or "")) if "." in arch else int(m.group(1))


def _release(version: str) -> tuple[int, int] | None:
    m = re.match(r"^(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _fmt(release: tuple[int, int]) -> str:
    return f"{release[0]}.{release[1]}"


def unsupported(nvcc_version: str, archs: tuple[str, ...]) -> list[ArchProblem]:
    """The archs that nvcc ``nvcc_version`` cannot target, each naming the toolchain that could.

    An arch this table does not know is reported too (fail closed: it is not known to build).
    """
    release = _release(nvcc_version)
    out: list[ArchProblem] = []
    for arch in archs:
        num = _number(arch)
        info = _SUPPORT.get(num) if num is not None else None
        if release is None or info is None:
            out.append(ArchProblem(arch, f"sm_{num if num is not None else arch}: not known to "
                                         f"be a target of nvcc {nvcc_version or '(unknown)'}"))
            continue
        family, first, last = info
        could = f"CUDA {_fmt(first)}" + (f" to {_fmt(last)}" if last else " or newer")
        if release < first:
            out.append(ArchProblem(arch, f"sm_{num} ({family}) needs CUDA {_fmt(first)} or "
                                         f"newer; nvcc {nvcc_version} cannot target it"))
        elif last is not None and release > last:
            out.append(ArchProblem(arch, f"sm_{num} ({family}) was removed after CUDA "
                                         f"{_fmt(last)}; nvcc {nvcc_version} cannot target it "
                                         f"({could} can)"))
    return out
