"""A rebuilt module against the same module of the official wheel, read statically (never loaded).

Five facts of each file, all read with pyelftools from the bytes on disk:

* **registered ops**: the operator schema strings a ``TORCH_LIBRARY`` module keeps in ``.rodata``
  (``m.def("topk_softmax(Tensor! topk_weights, ...) -> ()")``), by op name, whitespace folded;
* **exported symbols**: the defined GLOBAL/WEAK names of ``.dynsym`` (``nm -D --defined-only``);
* **needed libraries**: the ``DT_NEEDED`` entries of the dynamic section (the CUDA runtime's
  soname among them: ``libcudart.so.12`` against ``libcudart.so.13`` is another toolchain);
* **GPU code**: the architectures of the cubins (SASS) and PTX that the ``.nv_fatbin`` section
  holds, read from its fat binary headers (``cuobjdump --list-elf/--list-ptx`` is not part of
  every CUDA installation);
* **compilers**: the identification strings the compilers and linkers left in ``.comment``
  (``GCC: (GNU) 12.2.0``): another host compiler is another toolchain.

:func:`compare` turns the two sets of facts into differences, each a sentence a reviewer reads; the
build stage reports every one as a finding to review and records them in audit.json and the
provenance.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from auditor.errors import InputError
from auditor.rebuild.elf import exported_symbols

FATBIN_MAGIC = 0xBA55ED50  # the fat binary container (one per translation unit, concatenated)
FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
ENTRY_HEADER = struct.Struct("<HHIQ")  # kind, version, header size, payload size
ENTRY_ARCH_OFFSET = 28  # u32 SM number (86 for sm_86) inside an entry header
KIND_PTX, KIND_ELF = 1, 2

#: ``name(args) -> returns`` with an optional ``namespace::`` or overload ``.name``
_SCHEMA = re.compile(r"\s*((?:[A-Za-z_]\w*::)?[A-Za-z_]\w*(?:\.\w+)?)\s*\((.*)\)\s*->\s*(\S.*?)\s*",
                     re.S)
_MAX_SCHEMA = 4096


@dataclass(frozen=True)
class ModuleFacts:
    ops: Mapping[str, str]  # op name -> schema, whitespace folded
    symbols: frozenset[str]
    weak: frozenset[str]
    needed: tuple[str, ...]
    sass: tuple[int, ...]  # SM numbers of the cubins
    ptx: tuple[int, ...]  # SM numbers of the PTX
    fatbin: bool  # the file has a .nv_fatbin section
    compilers: tuple[str, ...] = ()  # the .comment strings, in file order, once each

    @property
    def cuda_runtime(self) -> str | None:
        return next((n for n in self.needed if n.startswith("libcudart.so")), None)

    def to_json(self) -> dict[str, Any]:
        return {"ops": len(self.ops), "symbols": len(self.symbols), "needed": list(self.needed),
                "sass": [sm_name(a) for a in self.sass], "ptx": [sm_name(a, "compute")
                                                                  for a in self.ptx],
                "compilers": list(self.compilers)}


@dataclass(frozen=True)
class Comparison:
    """How a rebuilt module differs from the official one (empty ``differences``: it does not)."""

    official: ModuleFacts
    rebuilt: ModuleFacts
    ops_missing: tuple[str, ...] = ()
    ops_added: tuple[str, ...] = ()
    ops_changed: tuple[str, ...] = ()  # same name, other schema
    symbols_missing: tuple[str, ...] = ()
    symbols_added: tuple[str, ...] = ()
    needed_missing: tuple[str, ...] = ()
    needed_added: tuple[str, ...] = ()
    differences: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"official": self.official.to_json(), "rebuilt": self.rebuilt.to_json(),
                "ops": {"missing": list(self.ops_missing), "added": list(self.ops_added),
                        "changed": list(self.ops_changed)},
                "symbols": {"missing": list(self.symbols_missing),
                            "added": list(self.symbols_added)},
                "needed": {"missing": list(self.needed_missing),
                           "added": list(self.needed_added)},
                "differences": list(self.differences)}


def sm_name(arch: int, prefix: str = "sm") -> str:
    return f"{prefix}_{arch}"


def _fold(text: str) -> str:
    return " ".join(text.split())


def registered_ops(data: bytes) -> dict[str, str]:
    """Op name -> schema of every NUL-terminated schema string in ``data`` (a ``.rodata``)."""
    out: dict[str, str] = {}
    for raw in data.split(b"\0"):
        if b"->" not in raw or b"(" not in raw or len(raw) > _MAX_SCHEMA:
            continue
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            continue
        m = _SCHEMA.fullmatch(text)
        if m is None or not all(c.isprintable() or c in "\n\t" for c in text):
            continue
        out.setdefault(m.group(1), _fold(text))
    return out


def fatbin_archs(data: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(SASS archs, PTX archs) of the fat binaries in ``data`` (a ``.nv_fatbin`` section)."""
    sass: set[int] = set()
    ptx: set[int] = set()
    off = 0
    while off + FATBIN_HEADER.size <= len(data):
        magic, _version, header_size, size = FATBIN_HEADER.unpack_from(data, off)
        if magic != FATBIN_MAGIC or header_size < FATBIN_HEADER.size:
            off += 8  # containers are 8-byte aligned; padding between them
            continue
        p, end = off + header_size, min(len(data), off + header_size + size)
        while p + ENTRY_ARCH_OFFSET + 4 <= end:
            kind, _v, entry_header, payload = ENTRY_HEADER.unpack_from(data, p)
            if entry_header < ENTRY_ARCH_OFFSET + 4:
                break
            (arch,) = struct.unpack_from("<I", data, p + ENTRY_ARCH_OFFSET)
            (sass if kind == KIND_ELF else ptx if kind == KIND_PTX else set()).add(arch)
            p += entry_header + payload
        off = max(end, off + 8)
    return tuple(sorted(sass)), tuple(sorted(ptx))


def module_facts(path: Path, what: str = "module") -> ModuleFacts:
    """The four facts of one module file (InputError naming ``what`` if it is not ELF)."""
    try:
        with path.open("rb") as f:
            elf = ELFFile(f)
            rodata = elf.get_section_by_name(".rodata")
            ops = registered_ops(rodata.data()) if rodata is not None else {}
            needed: list[str] = []
            for sec in elf.iter_sections():
                if isinstance(sec, DynamicSection):
                    needed += [str(t.needed) for t in sec.iter_tags()  # type: ignore[attr-defined]
                               if t.entry.d_tag == "DT_NEEDED"]
            fb = elf.get_section_by_name(".nv_fatbin")
            sass, ptx = fatbin_archs(fb.data()) if fb is not None else ((), ())
            comment = elf.get_section_by_name(".comment")
            compilers = comment_strings(comment.data()) if comment is not None else ()
    except (ELFError, OSError, ValueError, struct.error) as exc:
        raise InputError(f"{what} {path.name} is not a readable ELF file: {exc}") from None
    return ModuleFacts(ops=ops, symbols=exported_symbols(path, what),
                       weak=exported_symbols(path, what, weak=True),
                       needed=tuple(needed), sass=sass, ptx=ptx, fatbin=fb is not None,
                       compilers=compilers)


def comment_strings(data: bytes, limit: int = 32) -> tuple[str, ...]:
    """The NUL-separated strings of a ``.comment`` section, once each, in order (at most
    ``limit``, each cut at 200 characters: the section is the audited party's bytes)."""
    out: dict[str, None] = {}
    for raw in data.split(b"\0"):
        text = raw.decode("utf-8", "replace").strip()
        if text and len(out) < limit:
            out.setdefault(text[:200], None)
    return tuple(out)


def _names(items: Iterable[str], limit: int = 8) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _archs(archs: Iterable[int], prefix: str = "sm") -> str:
    return ", ".join(sm_name(a, prefix) for a in archs) or "none"


def compare(official: ModuleFacts, rebuilt: ModuleFacts) -> Comparison:
    """Every way ``rebuilt`` differs from ``official``, as sentences (see the module doc)."""
    diffs: list[str] = []
    ops_missing = tuple(sorted(set(official.ops) - set(rebuilt.ops)))
    ops_added = tuple(sorted(set(rebuilt.ops) - set(official.ops)))
    ops_changed = tuple(sorted(n for n in set(official.ops) & set(rebuilt.ops)
                               if official.ops[n] != rebuilt.ops[n]))
    if ops_missing:
        diffs.append(f"registers no op {_names(ops_missing)} of the official module's "
                     f"{len(official.ops)}")
    if ops_added:
        diffs.append(f"registers op(s) the official module does not: {_names(ops_added)}")
    for name in ops_changed:
        diffs.append(f"op {name} has another schema: official {official.ops[name]!r}, rebuilt "
                     f"{rebuilt.ops[name]!r}")
    sym_missing = tuple(sorted(official.symbols - rebuilt.symbols))
    sym_added = tuple(sorted(rebuilt.symbols - official.symbols))
    if sym_missing:
        diffs.append(f"exports {len(sym_missing)} fewer dynamic symbol(s) than the official "
                     f"module: {_names(sym_missing, 5)}")
    if sym_added:
        diffs.append(f"exports {len(sym_added)} dynamic symbol(s) the official module does not: "
                     f"{_names(sym_added, 5)}")
    need_missing = tuple(n for n in official.needed if n not in rebuilt.needed)
    need_added = tuple(n for n in rebuilt.needed if n not in official.needed)
    if official.cuda_runtime != rebuilt.cuda_runtime:
        diffs.append(f"links the CUDA runtime {rebuilt.cuda_runtime or 'not at all'}, the "
                     f"official module {official.cuda_runtime or 'none'} (another CUDA toolkit)")
    other_missing = [n for n in need_missing if not n.startswith("libcudart.so")]
    other_added = [n for n in need_added if not n.startswith("libcudart.so")]
    if other_missing:
        diffs.append(f"does not need {_names(other_missing)} (the official module does)")
    if other_added:
        diffs.append(f"needs {_names(other_added)} (the official module does not)")
    if official.sass != rebuilt.sass or official.ptx != rebuilt.ptx:
        line = (f"has GPU code for {_archs(rebuilt.sass)} (PTX {_archs(rebuilt.ptx, 'compute')}), "
                f"the official module for {_archs(official.sass)} (PTX "
                f"{_archs(official.ptx, 'compute')})")
        only_here = sorted(set(rebuilt.sass) - set(official.sass))
        if only_here:
            line += f"; {_archs(only_here)} is not among the official module's cubins"
        diffs.append(line)
    if official.compilers and set(official.compilers) != set(rebuilt.compilers):
        diffs.append(f"was built by {_names(rebuilt.compilers, 3) or 'an unnamed compiler'}, the "
                     f"official module by {_names(official.compilers, 3)} (another host "
                     "compiler)")
    return Comparison(official=official, rebuilt=rebuilt, ops_missing=ops_missing,
                      ops_added=ops_added, ops_changed=ops_changed, symbols_missing=sym_missing,
                      symbols_added=sym_added, needed_missing=need_missing,
                      needed_added=need_added, differences=tuple(diffs))


def compare_files(official: Path, rebuilt: Path) -> Comparison:
    return compare(module_facts(official, "official module"),
                   module_facts(rebuilt, "rebuilt module"))


def main(argv: list[str] | None = None) -> int:
    """``python -m auditor.rebuild.compare_official OFFICIAL.so REBUILT.so``: the comparison as
    JSON (for benchmarks; the build stage calls :func:`compare_files` itself)."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m auditor.rebuild.compare_official OFFICIAL.so REBUILT.so",
              file=sys.stderr)
        return 2
    try:
        c = compare_files(Path(args[0]), Path(args[1]))
    except InputError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(json.dumps(c.to_json(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
