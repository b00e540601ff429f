"""The wheel overlay: the official wheel, the audited Python files, the modules built here.

Path rule (bundle -> wheel): with ``[wheel] source_root = R`` and package folders ``P`` (the
recipe's ``packages``, or the official wheel's top-level folders), the bundle file ``R/p/rest``
becomes the wheel file ``p/rest`` for every ``p`` in ``P``; other bundle files are not packaged.
Changed files replace the official copy, added ones are added, deleted ones are dropped; a changed
file the official wheel does not ship stays out (upstream's packaging rules excluded it). Binaries
and symbolic links from the bundle never enter. Every output file gets an :class:`Origin`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from auditor.fsutil import sha256_file
from auditor.model import Workspace
from auditor.provenance.bundlefiles import bundle_root
from auditor.rebuild.builders import BuiltModule
from auditor.rebuild.plan import BuildPlan, ChangeKind, wheel_path_for
from auditor.rebuild.wheel import (
    FileSpec,
    UnpackedWheel,
    WheelName,
    set_metadata_version,
    unpack_wheel,
    write_entries,
)


class OriginKind(StrEnum):
    OFFICIAL = "official"  # byte-identical to a file of the official wheel
    AUDITED_SOURCE = "audited-source"  # byte-identical to a file of the verified bundle
    BUILT = "built"  # a module compiled here from the recipe
    GENERATED = "generated"  # wheel metadata rewritten here (METADATA version, RECORD)


@dataclass(frozen=True)
class Origin:
    path: str
    origin: OriginKind
    sha256: str | None  # None for RECORD (it cannot hold its own hash)
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"origin": self.origin.value, "sha256": self.sha256, **self.detail}


@dataclass(frozen=True)
class Overlay:
    wheel: Path
    name: WheelName
    origins: Mapping[str, Origin]
    replaced: tuple[str, ...]
    added: tuple[str, ...]
    dropped: tuple[str, ...]
    not_packaged: tuple[str, ...]  # changed bundle files the official wheel does not ship


def build_overlay(official: UnpackedWheel, ws: Workspace, plan: BuildPlan, *,
                  packages: tuple[str, ...], source_root: str, version: str,
                  built: Mapping[str, tuple[BuiltModule, Mapping[str, Any]]],
                  out_dir: Path, epoch: int, commits: Mapping[str, str | None]) -> Overlay:
    """Write the overlaid wheel into ``out_dir``. ``built`` maps wheel paths to (module, detail)."""
    new_name = WheelName(official.name.name, version, official.name.build, official.name.tag)
    old_di, new_di = official.dist_info, new_name.dist_info
    old_data = official.dist_info.removesuffix(".dist-info") + ".data"
    entries: dict[str, FileSpec] = {}
    origins: dict[str, Origin] = {}

    def rename(path: str) -> str:
        top, _, rest = path.partition("/")
        if top == old_di:
            return f"{new_di}/{rest}"
        if top == old_data:
            return f"{new_name.data_dir}/{rest}"
        return path

    for path, member in official.members.items():
        if path == f"{old_di}/RECORD" or path in (f"{old_di}/RECORD.jws", f"{old_di}/RECORD.p7s"):
            continue
        out = rename(path)
        local = official.local(path)
        if path == f"{old_di}/METADATA":
            text = set_metadata_version(local.read_text(encoding="utf-8"), version).encode()
            entries[out] = text
            origins[out] = Origin(out, OriginKind.GENERATED, hashlib.sha256(text).hexdigest(),
                                  {"from": path, "change": f"Version set to {version}"})
            continue
        entries[out] = (local, member.mode)
        detail: Mapping[str, Any] = {"official_path": path} if out != path else {}
        origins[out] = Origin(out, OriginKind.OFFICIAL, member.sha256, detail)

    replaced: list[str] = []
    added: list[str] = []
    dropped: list[str] = []
    not_packaged: list[str] = []
    skip = set(plan.binaries) | set(plan.links)
    for change in plan.changes:
        wp = wheel_path_for(change.path, source_root, packages)
        if wp is None or change.path in skip:
            continue
        if change.kind is ChangeKind.DELETED:
            if wp in entries:
                del entries[wp]
                del origins[wp]
                dropped.append(wp)
            continue
        if change.kind is ChangeKind.MODIFIED and wp not in official.members:
            not_packaged.append(change.path)
            continue
        bf = ws.manifest[change.path]
        local = bundle_root(ws) / change.path
        entries[wp] = (local, 0o755 if bf.mode == "100755" else 0o644)
        origins[wp] = Origin(wp, OriginKind.AUDITED_SOURCE, bf.sha256,
                             {"bundle_path": change.path, "blob": bf.blob,
                              "commit": commits.get(change.path)})
        (replaced if change.kind is ChangeKind.MODIFIED else added).append(wp)

    for wp, (module, detail) in built.items():
        entries[wp] = (module.path, 0o755)
        origins[wp] = Origin(wp, OriginKind.BUILT, module.sha256, dict(detail))

    origins[f"{new_di}/RECORD"] = Origin(f"{new_di}/RECORD", OriginKind.GENERATED, None,
                                         {"change": "regenerated for the files above"})
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = write_entries(out_dir / new_name.filename, entries, new_di, epoch=epoch)
    return Overlay(wheel=wheel, name=new_name, origins=origins, replaced=tuple(sorted(replaced)),
                   added=tuple(sorted(added)), dropped=tuple(sorted(dropped)),
                   not_packaged=tuple(sorted(not_packaged)))


def verify_origins(overlay: Overlay, official: UnpackedWheel, ws: Workspace,
                   built: Mapping[str, BuiltModule], scratch: Path) -> list[str]:
    """Re-open the written wheel; every file must hold exactly what its origin claims."""
    from auditor.rebuild.wheel import record_problems

    out = unpack_wheel(overlay.wheel, scratch)
    problems = [f"output wheel: {p}" for p in record_problems(out)]
    for path, member in sorted(out.members.items()):
        o = overlay.origins.get(path)
        if o is None:
            problems.append(f"{path}: no origin")
            continue
        if o.origin is OriginKind.OFFICIAL:
            src = official.members.get(str(o.detail.get("official_path", path)))
            ok = src is not None and src.sha256 == member.sha256
        elif o.origin is OriginKind.AUDITED_SOURCE:
            bf = ws.manifest.get(str(o.detail["bundle_path"]))
            ok = (bf is not None and bf.sha256 == member.sha256
                  and sha256_file(bundle_root(ws) / bf.path) == member.sha256)
        elif o.origin is OriginKind.BUILT:
            mod = built.get(path)
            ok = mod is not None and mod.sha256 == member.sha256
        else:
            ok = path.endswith(("/RECORD", "/METADATA")) and (o.sha256 in (None, member.sha256))
        if not ok:
            problems.append(f"{path}: content does not match its origin ({o.origin.value})")
    for path in sorted(set(overlay.origins) - set(out.members)):
        problems.append(f"{path}: has an origin but is not in the wheel")
    return problems
