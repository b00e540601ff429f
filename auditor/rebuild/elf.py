"""ELF facts with pyelftools: the dynamic symbols a module exports, and which sections differ."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from auditor.errors import InputError

ELF_MAGIC = b"\x7fELF"


def exported_symbols(path: Path, what: str = "module", *, weak: bool | None = None) -> frozenset[str]:
    """Names of the defined GLOBAL/WEAK symbols of ``.dynsym`` (InputError if not ELF).

    ``weak=True`` gives only the weak ones (C++ vague linkage: inline functions, template
    instances), ``weak=False`` only the strong ones, ``None`` both.
    """
    try:
        with path.open("rb") as f:
            elf = ELFFile(f)
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is None:
                return frozenset()
            out = set()
            for sym in dynsym.iter_symbols():  # type: ignore[attr-defined]
                if not sym.name or sym["st_shndx"] == "SHN_UNDEF":
                    continue
                bind = sym["st_info"]["bind"]
                if bind not in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE"):
                    continue
                if weak is not None and (bind == "STB_WEAK") != weak:
                    continue
                out.add(sym.name)
            return frozenset(out)
    except (ELFError, OSError, ValueError) as exc:
        raise InputError(f"{what} {path.name} is not a readable ELF file: {exc}") from None


def imported_symbols(path: Path, what: str = "module") -> frozenset[str]:
    """Names of the undefined symbols of ``.dynsym``: what the file takes from other libraries
    (InputError if not ELF)."""
    try:
        with path.open("rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            if dynsym is None:
                return frozenset()
            return frozenset(sym.name for sym in dynsym.iter_symbols()  # type: ignore[attr-defined]
                             if sym.name and sym["st_shndx"] == "SHN_UNDEF")
    except (ELFError, OSError, ValueError) as exc:
        raise InputError(f"{what} {path.name} is not a readable ELF file: {exc}") from None


_STUB = re.compile(r"^_Z\d+__device_stub__(.+)$")


def cuda_kernel_symbols(symbols: frozenset[str], among: frozenset[str]) -> frozenset[str]:
    """The names of ``symbols`` that are CUDA kernels or their host stubs: nvcc names the stub
    of kernel ``_Z<mangled>`` ``_Z<n>__device_stub__Z<mangled>...``; a kernel is a symbol whose
    stub is in ``among`` (the module's exports)."""
    stubbed = {m.group(1) for s in among if (m := _STUB.match(s))}
    return frozenset(s for s in symbols if _STUB.match(s) or (
        s.startswith("_Z") and any(t.startswith(s[1:]) for t in stubbed)))


def _sections(path: Path) -> dict[str, str]:
    with path.open("rb") as f:
        elf = ELFFile(f)
        out: dict[str, str] = {}
        for i, sec in enumerate(elf.iter_sections()):
            name = sec.name or f"#{i}"
            if sec["sh_type"] == "SHT_NOBITS":
                digest = f"nobits:{sec['sh_size']}"
            else:
                digest = hashlib.sha256(sec.data()).hexdigest()
            out[name if name not in out else f"{name}#{i}"] = digest
        return out


def section_differences(a: Path, b: Path) -> list[str]:
    """Names of the sections whose bytes differ (or that only one file has); [] when equal."""
    try:
        sa, sb = _sections(a), _sections(b)
    except (ELFError, OSError, ValueError) as exc:
        return [f"(not comparable as ELF: {exc})"]
    names = sorted(set(sa) | set(sb))
    out = []
    for n in names:
        if n not in sa:
            out.append(f"{n} (only in the second build)")
        elif n not in sb:
            out.append(f"{n} (only in the first build)")
        elif sa[n] != sb[n]:
            out.append(n)
    if not out and a.read_bytes() != b.read_bytes():
        out.append("(headers or padding outside sections)")
    return out


def _ordered_sections(path: Path) -> list[tuple[str, int, bytes | None]]:
    """(name, file offset, bytes; None for NOBITS) of every section, in file order."""
    with path.open("rb") as f:
        elf = ELFFile(f)
        out = []
        for i, sec in enumerate(elf.iter_sections()):
            data = None if sec["sh_type"] == "SHT_NOBITS" else sec.data()
            out.append((sec.name or f"#{i}", int(sec["sh_offset"]), data))
        return sorted(out, key=lambda s: s[1])


_TIME_RE = re.compile(rb"\b\d{2}:\d{2}:\d{2}\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
                      rb" [ \d]\d \d{4}\b")
_TMP_RE = re.compile(rb"tmpxft_[0-9a-f]+_[0-9a-f]+|/tmp/[\w.-]+|cc[A-Za-z0-9]{6}\.o")
# nvcc's name for a translation unit's anonymous namespace: _GLOBAL__N__<path hash>_<len>_<file>_
# <suffix>[_<process id>]; the suffix comes from the source's mtime and the id from the front end
# where the unit defines nothing of its own
_MODULE_ID_RE = re.compile(rb"_GLOBAL__N__[0-9a-f]{8}_\d+_\w+?_[0-9a-f]{8}(?:_\d+)?(?=\d*[A-Za-z])")


def _cause(name: str, a: bytes, b: bytes, roots: tuple[bytes, bytes]) -> str:
    """The likely reason two versions of one section differ (a reader's first guess)."""
    ra, rb = roots
    if (ra and ra in a) or (rb and rb in b):
        return "the build path (the folder the module was built in is recorded in it)"
    if name == ".note.gnu.build-id":
        return "the build id (a hash of the other bytes: look at the next differing section)"
    if set(_TIME_RE.findall(a)) != set(_TIME_RE.findall(b)):
        return "a timestamp (__DATE__/__TIME__ or a tool's build time)"
    if set(_TMP_RE.findall(a)) != set(_TMP_RE.findall(b)):
        return "a temporary file name (nvcc's tmpxft_<pid> names, compiler temp files)"
    if set(_MODULE_ID_RE.findall(a)) != set(_MODULE_ID_RE.findall(b)):
        return ("nvcc's module id in an anonymous namespace's name (it ends with the source's "
                "mtime and, for a unit that defines nothing of its own, a process id)")
    if name.startswith((".debug", ".zdebug")):
        return "debug information"
    return "unknown (different code or data; compare the two files with diffoscope)"


def first_difference(a: Path, b: Path, *, roots: tuple[str, str] = ("", "")) -> dict[str, Any]:
    """The first section, in file order, whose bytes differ between two builds, and its likely
    cause (the GNU build id, a hash of the other bytes, only when nothing else differs); ``roots`` are the two build folders (found in a section: the build path). ``{}`` when
    the files are equal."""
    if a.read_bytes() == b.read_bytes():
        return {}
    try:
        sa, sb = _ordered_sections(a), _ordered_sections(b)
    except (ELFError, OSError, ValueError) as exc:
        return {"section": None, "cause": f"not comparable as ELF: {exc}"}
    by_name = {n: d for n, _o, d in sb}
    enc = (roots[0].encode(), roots[1].encode())
    build_id: dict[str, Any] = {}
    for name, offset, data in sa:
        if name not in by_name:
            return {"section": name, "offset": offset,
                    "cause": "the section is only in the first build"}
        other = by_name[name]
        if data != other:
            found = {"section": name, "offset": offset,
                     "cause": _cause(name, data or b"", other or b"", enc)}
            if name != ".note.gnu.build-id":
                return found
            build_id = build_id or found  # a hash of the rest: the cause lies further on
    if build_id:
        return build_id
    extra = [n for n, _o, _d in sb if n not in {x[0] for x in sa}]
    if extra:
        return {"section": extra[0], "cause": "the section is only in the second build"}
    return {"section": None, "cause": "headers or padding outside the sections (layout)"}
