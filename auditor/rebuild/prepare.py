"""``auditor build prepare RECIPE``: fill the recipe's toolchain folder with its pinned packages.

Each ``[[toolchain.packages]]`` entry names an exact file and its sha256. A file already in the
folder is checked (a mismatch is an input error naming the file, exit 2); a missing one is
downloaded only with ``--online`` (``pip download --no-deps`` of ``name==version`` into a private
folder, the named file checked, then moved in), otherwise the missing files are named (exit 2).
Once checked, each wheel is unpacked into ``<dir>/site-packages`` (the layout torch's and the
nvidia wheels' CMake configs expect), recorded by sha256 in ``<dir>/prepared.json`` so a second
run only re-hashes. Nothing downloaded is ever run.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import InputError, SpecError, ToolMissing
from auditor.fsutil import sha256_file
from auditor.gitio import run, which
from auditor.rebuild.recipe import Recipe, ToolchainPackage
from auditor.rebuild.wheel import unpack_wheel

#: (requirement, destination folder) -> the downloaded file; the network lives here only
Fetcher = Callable[[ToolchainPackage, Path], Path]
STATE = "prepared.json"


@dataclass(frozen=True)
class Prepared:
    package: ToolchainPackage
    path: Path
    size: int
    action: str  # "present" (already there and checked) | "fetched"
    unpacked: bool  # unpacked now (False: it already was)


def pip_requirement(pkg: ToolchainPackage) -> str:
    """``name===version``: pip's exact (string) match. ``name==2.13.0`` also admits a local
    build such as ``2.13.0+cpu``, and pip prefers that one when a find-links folder holds it."""
    return f"{pkg.name}==={pkg.version}"


def pip_fetch(pkg: ToolchainPackage, dest: Path) -> Path:
    """Download exactly ``pkg.file`` with pip (binary only, no dependencies)."""
    res = run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--no-cache-dir", "--disable-pip-version-check", "-q", "-d", str(dest),
               *_platform_args(pkg.file), pip_requirement(pkg)], check=False, timeout=3600)
    found = dest / pkg.file
    if not found.is_file():
        tail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-3:]
        got = sorted(p.name for p in dest.iterdir())
        raise InputError(f"toolchain package {pkg.requirement}: the registry did not give "
                         f"{pkg.file}" + (f" (got {', '.join(got)})" if got else "")
                         + (": " + " | ".join(tail) if tail else ""))
    return found


def _platform_args(file: str) -> list[str]:
    """pip's --platform/--python-version/--abi for a wheel of another Python or platform."""
    parts = file[:-4].split("-") if file.endswith(".whl") else []
    if len(parts) < 5:
        return []
    py, abi, plat = parts[-3], parts[-2], parts[-1]
    out = [f"--platform={p}" for p in plat.split(".")]
    if py.startswith("cp") and py[2:].isdigit():
        out += [f"--python-version={py[2:]}", "--implementation=cp"]
    out += [f"--abi={a}" for a in abi.split(".")]
    return out


def toolchain_dir(recipe: Recipe, override: Path | None = None) -> Path:
    folder = override.resolve() if override is not None else recipe.toolchain.dir
    if folder is None:
        raise SpecError("the recipe pins no toolchain packages (no [toolchain] dir)",
                        file=str(recipe.path), key="toolchain.dir")
    return folder


def prepare(recipe: Recipe, *, online: bool, folder: Path | None = None,
            fetch: Fetcher = pip_fetch,
            progress: Callable[[str], None] | None = None) -> list[Prepared]:
    """Check (and with ``online`` fetch) every pinned package, then unpack it; see the module doc."""
    dest = toolchain_dir(recipe, folder)
    packages = recipe.toolchain.packages
    if not packages:
        raise SpecError("the recipe pins no toolchain packages ([[toolchain.packages]])",
                        file=str(recipe.path), key="toolchain.packages")
    dest.mkdir(parents=True, exist_ok=True)
    wheels = dest / "wheels"
    wheels.mkdir(exist_ok=True)
    missing = [p for p in packages if not (wheels / p.file).is_file()]
    if missing and not online:
        raise InputError(
            f"toolchain folder {dest}: {len(missing)} pinned package(s) missing: "
            + ", ".join(p.file for p in missing),
            hint=f"run `auditor build prepare {recipe.path.name} --online` once to fetch them")
    state = _state(dest)
    out: list[Prepared] = []
    say = progress or (lambda _m: None)
    for i, pkg in enumerate(packages, 1):
        target = wheels / pkg.file
        action = "present"
        if not target.is_file():
            say(f"[{i}/{len(packages)}] fetching {pkg.file}")
            with tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest) as tmp:
                got = fetch(pkg, Path(tmp))
                _check(pkg, got)
                got.replace(target)
            action = "fetched"
        else:
            _check(pkg, target)
        unpacked = False
        if state.get(pkg.file) != pkg.sha256:
            say(f"[{i}/{len(packages)}] unpacking {pkg.file} ({target.stat().st_size} bytes)")
            if pkg.file.endswith(".whl"):
                _unpack_into(target, dest / "site-packages", dest)
            state[pkg.file] = pkg.sha256
            _save_state(dest, state)
            unpacked = True
        out.append(Prepared(pkg, target, target.stat().st_size, action, unpacked))
    if recipe.toolchain.python:
        make_venv(recipe.toolchain.python, dest)
    make_placeholders(recipe, dest)
    if recipe.toolchain.cuda_driver_stub:
        nvcc = which(recipe.toolchain.nvcc_path)
        if nvcc is None:
            raise ToolMissing(f"nvcc ({recipe.toolchain.nvcc_path}) is not installed: its cuda.h "
                              "names the functions of the driver link stub")
        header = Path(os.path.realpath(nvcc)).parent.parent / "include" / "cuda.h"
        make_driver_stub(header, dest / "stubs", cc=recipe.toolchain.cc)
    return out


PLACEHOLDER_NOTE = ("auditor build prepare: a placeholder. The engine's CMake wants this dependency's "
                    "sources in a folder; the recipe builds nothing from it, and a module that "
                    "would be built from here fails (its output is not produced).\n")


def make_placeholders(recipe: Recipe, dest: Path) -> list[Path]:
    """``<dest>/placeholders/<name>/NOT-BUILT-FROM-HERE`` for each ``[toolchain] placeholders``."""
    out = []
    for name in recipe.toolchain.placeholders:
        folder = dest / "placeholders" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "NOT-BUILT-FROM-HERE").write_text(PLACEHOLDER_NOTE)
        out.append(folder)
    for rel in recipe.toolchain.placeholder_files:
        # a file the engine's CMake reads even when it builds nothing from the dependency: only a
        # comment (in the syntax of Python, shell and CMake), never code
        target = dest / "placeholders" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(f"# {line}\n" for line in PLACEHOLDER_NOTE.splitlines()))
    return out


_DRIVER_API = re.compile(r"\bCUresult\s+CUDAAPI\s+(cu\w+)\s*\(")
_DRIVER_ALIAS = re.compile(r"#\s*define\s+cu\w+\s+(cu\w+)\b")


def make_driver_stub(cuda_h: Path, folder: Path, *, cc: str = "gcc") -> Path:
    """``folder/libcuda.so`` (soname ``libcuda.so.1``): one dummy function per driver API name
    of ``cuda.h`` (and each versioned name it maps to), only so that modules can be *linked*
    without the driver; at run time the real driver library is loaded by its soname."""
    try:
        text = cuda_h.read_text("utf-8", "replace")
    except OSError as exc:
        raise InputError(f"{cuda_h}: cannot read the CUDA driver header: {exc}") from None
    names = sorted({*_DRIVER_API.findall(text), *_DRIVER_ALIAS.findall(text)})
    if not names:
        raise InputError(f"{cuda_h}: no driver API functions found (not CUDA's cuda.h?)")
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "libcuda_stub.c"
    src.write_text("/* generated by auditor build prepare: a link stub, never loaded */\n"
                   + "".join(f"int {n}(void) {{ return 999; }}\n" for n in names))
    out = folder / "libcuda.so"
    run([cc, "-shared", "-fPIC", "-O0", "-Wl,-soname,libcuda.so.1", "-o", str(out), str(src)],
        timeout=600)
    return out


def make_venv(python: str, dest: Path) -> Path:
    """``<dest>/venv``: a venv of ``python`` (no pip) whose default path holds the unpacked packages.

    Build scripts that run Python with their own ``PYTHONPATH`` (vLLM's kernel generators) then
    still find them. The venv is made again when missing; nothing is installed into it.
    """
    venv = dest / "venv"
    if not (venv / "bin" / "python").exists():
        run([python, "-m", "venv", "--without-pip", str(venv)], timeout=600)
    site = sorted(venv.glob("lib/python*/site-packages"))
    if len(site) != 1:
        raise InputError(f"{venv}: expected one lib/python*/site-packages folder, found {len(site)}")
    (site[0] / "auditor-toolchain.pth").write_text(str(dest / "site-packages") + "\n")
    return venv / "bin" / "python"


def check_prepared(recipe: Recipe) -> Path:
    """The prepared toolchain folder; ToolMissing (the build is INCOMPLETE) naming what is not."""
    dest = toolchain_dir(recipe)
    state = _state(dest) if dest.is_dir() else {}
    absent = [p.file for p in recipe.toolchain.packages
              if state.get(p.file) != p.sha256 or not (dest / "wheels" / p.file).is_file()]
    if absent:
        raise ToolMissing(f"the toolchain folder {dest} is not prepared: "
                          f"{len(absent)} pinned package(s) not there or not checked: "
                          + ", ".join(absent[:5]) + (" …" if len(absent) > 5 else ""),
                          hint=f"run `auditor build prepare {recipe.path.name} --online` once")
    return dest


def stand_ins(recipe: Recipe, nvcc_version: str) -> list[str]:
    """The ways the prepared toolchain differs from what the engine pins (review findings)."""
    out = [f"{p.name} {p.version} stands in for {p.stands_in_for}"
           for p in recipe.toolchain.packages if p.stands_in_for]
    dest = recipe.toolchain.dir
    version_py = dest / "site-packages" / "torch" / "version.py" if dest else None
    if version_py is not None and version_py.is_file() and nvcc_version:
        m = re.search(r"^cuda\s*(?::\s*[^=]+)?=\s*'([0-9.]+)'", version_py.read_text(), re.M)
        if m and m.group(1).split(".")[0] != nvcc_version.split(".")[0]:
            out.append(f"the modules are compiled with nvcc {nvcc_version} and link CUDA "
                       f"{nvcc_version.split('.')[0]}'s runtime, while the torch they load into "
                       f"is built for CUDA {m.group(1)}")
    return out


def _unpack_into(wheel: Path, site: Path, dest: Path) -> None:
    """Unpack ``wheel`` (safely) and merge it into ``site``; a clash with other bytes is an error."""
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest) as tmp:
        unpacked = unpack_wheel(wheel, Path(tmp) / "w", max_files=500_000,
                                max_member_bytes=8 * 1024**3, max_bytes=32 * 1024**3)
        for rel, member in sorted(unpacked.members.items()):
            target = site / rel
            if target.is_file():
                if sha256_file(target) != member.sha256:
                    raise InputError(f"toolchain package {wheel.name}: {rel} is also in another "
                                     "pinned package, with other bytes")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            unpacked.local(rel).replace(target)
            target.chmod(member.mode)


def _check(pkg: ToolchainPackage, path: Path) -> None:
    actual = sha256_file(path)
    if actual != pkg.sha256:
        raise InputError(f"toolchain package {path}: sha256 {actual} does not match the recipe's "
                         f"{pkg.sha256} ({pkg.requirement})",
                         hint="a changed or corrupt download; delete the file to fetch it again")


def _state(dest: Path) -> dict[str, str]:
    f = dest / STATE
    if not f.is_file():
        return {}
    try:
        data = json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{f}: unreadable ({exc}); delete it to unpack again") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise InputError(f"{f}: not a prepared-state file; delete it to unpack again")
    return {str(k): v for k, v in data.items()}


def _save_state(dest: Path, state: dict[str, str]) -> None:
    tmp = dest / f".{STATE}.tmp"
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    tmp.replace(dest / STATE)


def render(recipe: Recipe, done: list[Prepared]) -> str:
    """One line per package, then the folder and the total size."""
    lines = [f"{p.action:8} {p.package.file}  {p.size} bytes  sha256 ok"
             + ("  (unpacked)" if p.unpacked else "") for p in done]
    total = sum(p.size for p in done)
    folder = done[0].path.parent.parent if done else recipe.toolchain.dir
    lines.append(f"toolchain folder {folder}: {len(done)} package(s), {total} bytes")
    return "\n".join(lines) + "\n"


__all__ = ["Prepared", "check_prepared", "stand_ins", "make_driver_stub", "make_venv", "pip_fetch", "prepare", "render"]
