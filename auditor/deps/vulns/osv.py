"""An offline OSV snapshot (``osv:<dir|zip>``): OSV JSON records, one file per advisory.

Every ``*.json`` file of the folder (recursively) or of the zip is one record. A record that is not
valid JSON or not shaped like an OSV record is reported as not checked, naming the file; the others
are still used. Withdrawn records are skipped. A pinned package is affected when its version is in
``affected[].versions`` or inside an ``ECOSYSTEM``/``SEMVER`` range (``introduced``/``fixed``/
``last_affected`` events, evaluated as the OSV schema describes), for ecosystem ``PyPI`` and the
canonical package name, with ``packaging``'s version rules.

The snapshot digest is sha256 over the lines ``<relative name>\\0<sha256 of the file>\\n`` of every
record file, sorted by name; the date is the newest ``modified`` of the records.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from auditor.deps.vulns.interface import (
    Package,
    SourceInfo,
    SourceKind,
    Vulnerability,
    VulnerabilitySource,
    VulnReport,
)
from auditor.deps.vulns.severity import record_severity
from auditor.fsutil import sha256_file
from auditor.inputs import open_input

MAX_RECORD_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 4 * 1024**3
ECOSYSTEM = "PyPI"


class CorruptRecord(ValueError):
    pass


@dataclass(frozen=True)
class Snapshot:
    records: tuple[tuple[str, Mapping[str, Any]], ...]  # (file name, record)
    corrupt: tuple[str, ...]  # one line per unusable file
    digest: str
    date: str | None
    path: Path


def _files(path: Path) -> Iterator[tuple[str, bytes]]:
    """(relative name, bytes) of every record file, sorted by name."""
    if path.is_dir():
        for p in sorted(path.rglob("*.json"), key=lambda q: q.relative_to(path).as_posix()):
            if p.is_file() and not p.is_symlink():
                if p.stat().st_size > MAX_RECORD_BYTES:
                    yield p.relative_to(path).as_posix(), b""
                else:
                    yield p.relative_to(path).as_posix(), p.read_bytes()
        return
    with open_input(path, "osv snapshot", MAX_TOTAL_BYTES) as fh, zipfile.ZipFile(fh) as zf:
        infos = sorted((i for i in zf.infolist() if not i.is_dir()
                        and i.filename.endswith(".json")), key=lambda i: i.filename)
        if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
            raise CorruptRecord(f"{path}: more than {MAX_TOTAL_BYTES} bytes uncompressed")
        for info in infos:
            if info.file_size > MAX_RECORD_BYTES:
                yield info.filename, b""
            else:
                yield info.filename, zf.read(info)


def _check(record: Any) -> Mapping[str, Any]:
    """The record when it is shaped like an OSV record (the parts this module reads)."""
    if not isinstance(record, dict):
        raise CorruptRecord("not a JSON object")
    for key in ("id", "modified"):
        if not isinstance(record.get(key), str) or not record[key]:
            raise CorruptRecord(f"missing or non-string {key!r}")
    if not isinstance(record.get("aliases", []), list):
        raise CorruptRecord("'aliases' is not a list")
    affected = record.get("affected", [])
    if not isinstance(affected, list):
        raise CorruptRecord("'affected' is not a list")
    for i, a in enumerate(affected):
        if not isinstance(a, dict):
            raise CorruptRecord(f"affected[{i}] is not an object")
        pkg = a.get("package")
        if pkg is not None and not (isinstance(pkg, dict) and isinstance(pkg.get("name", ""), str)
                                    and isinstance(pkg.get("ecosystem", ""), str)):
            raise CorruptRecord(f"affected[{i}].package is malformed")
        versions = a.get("versions", [])
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise CorruptRecord(f"affected[{i}].versions is not a list of strings")
        ranges = a.get("ranges", [])
        if not isinstance(ranges, list):
            raise CorruptRecord(f"affected[{i}].ranges is not a list")
        for j, r in enumerate(ranges):
            if not isinstance(r, dict) or not isinstance(r.get("type"), str) or not isinstance(
                    r.get("events"), list) or not all(isinstance(e, dict) for e in r["events"]):
                raise CorruptRecord(f"affected[{i}].ranges[{j}] is malformed")
    return record


def load_snapshot(path: Path) -> Snapshot:
    records: list[tuple[str, Mapping[str, Any]]] = []
    corrupt: list[str] = []
    digest = hashlib.sha256()
    newest: str | None = None
    try:
        files = list(_files(path))
    except (OSError, zipfile.BadZipFile, CorruptRecord) as exc:
        return Snapshot((), (f"OSV snapshot {path}: cannot be read: {exc}",), "", None, path)
    for name, data in files:
        digest.update(f"{name}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        try:
            if not data:
                raise CorruptRecord("empty or larger than the limit")
            record = _check(json.loads(data.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, CorruptRecord) as exc:
            corrupt.append(f"OSV record {name}: corrupt, not used: {exc}")
            continue
        records.append((name, record))
        modified = str(record["modified"])
        if newest is None or modified > newest:
            newest = modified
    if not files:
        corrupt.append(f"OSV snapshot {path}: no records (*.json) found")
    return Snapshot(tuple(records), tuple(corrupt), digest.hexdigest(), newest, path)


def _v(text: str) -> Version:
    return Version("0") if text == "0" else Version(text)


def in_range(version: Version, events: Sequence[Mapping[str, Any]]) -> bool:
    """The OSV evaluation: events sorted by version, introduced/fixed/last_affected toggles."""
    keyed: list[tuple[Version, int, str]] = []
    order = {"introduced": 0, "fixed": 1, "last_affected": 2, "limit": 3}
    for e in events:
        for kind, rank in order.items():
            if kind in e:
                keyed.append((_v(str(e[kind])), rank, kind))
    keyed.sort()
    affected = False
    for v, _, kind in keyed:
        if kind == "introduced" and version >= v:
            affected = True
        elif kind == "fixed" and version >= v:
            affected = False
        elif kind == "last_affected" and version > v:
            affected = False
    limits = [v for v, _, kind in keyed if kind == "limit"]
    if limits and not any(version < v for v in limits):
        return False
    return affected


#: the file ``auditor osv fetch`` writes beside a snapshot: what was fetched (its sha256)
SIDECAR_SUFFIX = ".meta.json"


def sidecar_path(out: Path) -> Path:
    return out.with_name(out.name + SIDECAR_SUFFIX)


def sidecar_problem(path: Path) -> str | None:
    """For ``osv:<zip>`` with a sidecar: a line when the zip is not the file that was fetched."""
    side = sidecar_path(path)
    if not path.is_file() or not side.is_file():
        return None
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
        want = str(meta["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"OSV snapshot {path}: its sidecar {side.name} cannot be read: not checked"
    if sha256_file(path) != want:
        return (f"OSV snapshot {path}: sha256 differs from the one recorded when it was fetched "
                f"({side.name}): altered or replaced, not used")
    return None


class OsvSnapshotSource(VulnerabilitySource):
    kind = SourceKind.OSV

    def __init__(self, path: Path, shown: str | None = None) -> None:
        self.path = path
        self.shown = shown or str(path)  # how outputs name it (relative to the spec's folder)

    def check(self, packages: Sequence[Package]) -> VulnReport:
        altered = sidecar_problem(self.path)
        if altered:
            return VulnReport(SourceInfo(SourceKind.OSV, location=self.shown),
                              not_checked=(altered,))
        snap = load_snapshot(self.path)
        info = SourceInfo(SourceKind.OSV, digest=snap.digest or None, date=snap.date,
                          records=len(snap.records), location=self.shown)
        by_name: dict[str, list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]] = \
            defaultdict(list)
        for file, record in snap.records:
            if record.get("withdrawn"):
                continue
            for affected in record.get("affected", []):
                pkg = affected.get("package") or {}
                if pkg.get("ecosystem") != ECOSYSTEM or not pkg.get("name"):
                    continue
                by_name[canonicalize_name(pkg["name"])].append((file, record, affected))
        found: list[Vulnerability] = []
        not_checked = list(snap.corrupt)
        checked: list[Package] = []
        for package in packages:
            try:
                version = Version(package.version)
            except InvalidVersion:
                not_checked.append(f"vulnerabilities: {package.name}=={package.version}: "
                                   "not a valid version, not checked")
                continue
            ok = True
            seen: set[str] = set()
            for file, record, affected in by_name.get(package.name, []):
                try:
                    hit, fixed = _matches(version, affected)
                except InvalidVersion as exc:
                    ok = False
                    not_checked.append(f"vulnerabilities: {package.name}=={package.version}: "
                                       f"OSV record {file} has a version packaging cannot "
                                       f"compare ({exc}), not checked against it")
                    continue
                if not hit or record["id"] in seen:
                    continue
                seen.add(record["id"])
                label, said = record_severity(record, affected)
                found.append(Vulnerability(
                    id=str(record["id"]),
                    aliases=tuple(str(a) for a in record.get("aliases", []) if isinstance(a, str)),
                    package=package.name, version=package.version, fixed=fixed,
                    severity=label, severity_source=said,
                    summary=str(record.get("summary") or record.get("details") or "")[:300],
                    modified=str(record["modified"])))
            if ok:
                checked.append(package)
        return VulnReport(info, tuple(found), tuple(not_checked), tuple(checked))


def _matches(version: Version, affected: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    fixed: list[str] = []
    hit = False
    for v in affected.get("versions", []):
        try:
            if Version(v) == version:
                hit = True
        except InvalidVersion:
            if v == str(version):
                hit = True
    for r in affected.get("ranges", []):
        if r.get("type") not in ("ECOSYSTEM", "SEMVER"):
            continue
        events = r.get("events", [])
        fixed += [str(e["fixed"]) for e in events if "fixed" in e]
        if in_range(version, events):
            hit = True
    return hit, tuple(sorted(set(fixed), key=_sort_version))


def _sort_version(v: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(v))
    except InvalidVersion:
        return (1, v)
