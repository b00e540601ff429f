"""ELF facts with pyelftools: the dynamic symbols a module exports, and which sections differ."""

from __future__ import annotations

import hashlib
from pathlib import Path

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
