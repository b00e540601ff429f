"""The toolchain actually on this machine (nvcc, host compilers, strip), against the recipe's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from auditor.errors import ToolMissing
from auditor.gitio import run, which
from auditor.rebuild.recipe import ToolchainRecipe


@dataclass(frozen=True)
class Toolchain:
    nvcc: str  # absolute paths
    cc: str
    cxx: str
    strip: str
    nvcc_version: str  # e.g. "13.0.88"
    cc_version: str  # e.g. "gcc 12.2.0"
    cmake: str = ""  # resolved only when a CMake module is built

    def to_json(self) -> dict[str, Any]:
        return {"nvcc": self.nvcc_version, "cc": self.cc_version,
                "programs": {"nvcc": self.nvcc, "cc": self.cc, "cxx": self.cxx,
                             "strip": self.strip, "cmake": self.cmake or None}}


def resolve(program: str, what: str) -> str:
    path = which(program)
    if path is None:
        raise ToolMissing(f"{what} ({program}) is not installed on this machine")
    return path


def nvcc_version(nvcc: str) -> str:
    out = run([nvcc, "--version"]).stdout
    m = re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def cc_version(cc: str) -> str:
    full = run([cc, "-dumpfullversion"], check=False)
    version = full.stdout.strip() if full.returncode == 0 and full.stdout.strip() else \
        run([cc, "-dumpversion"]).stdout.strip()
    first = run([cc, "--version"], check=False).stdout.splitlines()
    family = "clang" if first and "clang" in first[0] else "gcc"
    return f"{family} {version}"


def detect(recipe: ToolchainRecipe, *, need_nvcc: bool = True,
           need_cmake: bool = False) -> Toolchain:
    """Resolve and version the programs; ToolMissing names the first one absent."""
    nvcc = resolve(recipe.nvcc_path, "the CUDA compiler nvcc") if need_nvcc else ""
    cmake = resolve(recipe.cmake, "cmake") if need_cmake else ""
    cc = resolve(recipe.cc, "the host C compiler")
    cxx = resolve(recipe.cxx, "the host C++ compiler")
    strip = resolve(recipe.strip, "strip (binutils)")
    return Toolchain(nvcc=nvcc, cc=cc, cxx=cxx, strip=strip,
                     nvcc_version=nvcc_version(nvcc) if nvcc else "",
                     cc_version=cc_version(cc), cmake=cmake)


def _prefix_match(expected: str, actual: str) -> bool:
    e = [p for p in re.split(r"[.\s]", expected.strip()) if p]
    a = [p for p in re.split(r"[.\s]", actual.strip()) if p]
    return a[:len(e)] == e


def compare(recipe: ToolchainRecipe, tc: Toolchain) -> list[str]:
    """How the toolchain here differs from the recipe's expectation (empty when it matches)."""
    diffs = []
    if recipe.nvcc and tc.nvcc_version and not _prefix_match(recipe.nvcc, tc.nvcc_version):
        diffs.append(f"nvcc {tc.nvcc_version} here, the recipe expects {recipe.nvcc}")
    if recipe.cc_version:
        actual = tc.cc_version.split(" ", 1)[-1]
        if not _prefix_match(recipe.cc_version, actual):
            diffs.append(f"host compiler {tc.cc_version} here, the recipe expects "
                         f"{recipe.cc_version}")
    return diffs
