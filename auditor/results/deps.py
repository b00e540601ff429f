"""The deps stage's data: declarations of both trees, their diff, the lock and vulnerabilities."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from auditor.results.base import (
    JsonObject,
    StageData,
    obj,
    objects,
    opt_int,
    opt_obj,
    opt_str,
    strs,
)

#: a git ref that is a full commit sha (the only ref that pins what is fetched)
FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")


class Kind(StrEnum):
    """How a dependency is declared; kept from extraction to the SBOM."""

    PYPI = "pypi"  # a name and a version specifier, resolved through an index
    URL = "url"  # a direct URL to an archive or wheel
    VCS = "vcs"  # git+https://...@ref and friends
    CMAKE_GIT = "cmake-git"  # FetchContent_Declare / ExternalProject_Add with GIT_REPOSITORY
    CMAKE_URL = "cmake-url"  # FetchContent_Declare / ExternalProject_Add with URL
    INDEX = "index"  # --index-url, --extra-index-url, --find-links, --trusted-host

    @property
    def is_package(self) -> bool:
        return self in (Kind.PYPI, Kind.URL, Kind.VCS)

    @property
    def is_cmake(self) -> bool:
        return self in (Kind.CMAKE_GIT, Kind.CMAKE_URL)


@dataclass(frozen=True)
class DeclarationRecord:
    """One dependency declaration as the deps stage read it (``pin``: the exact version)."""

    name: str
    kind: Kind
    specifier: str
    pin: str | None
    markers: str
    url: str | None
    extras: tuple[str, ...]
    ref: str | None
    hash: str | None
    file: str
    line: int
    end_line: int
    group: str

    @property
    def version_pin(self) -> str | None:
        """The version this declaration fixes: the exact ``==`` version, or a VCS requirement's
        ref (which pins too); None when the index may choose."""
        if self.pin:
            return self.pin
        return (self.ref or None) if self.kind is Kind.VCS else None

    @property
    def pinned(self) -> bool:
        return self.version_pin is not None

    def to_json(self) -> dict[str, Any]:
        # "version" repeats the pin: the JSON contract names it both ways
        return {"name": self.name, "kind": self.kind.value, "specifier": self.specifier,
                "version": self.pin, "pin": self.pin, "markers": self.markers, "url": self.url,
                "extras": list(self.extras), "ref": self.ref, "hash": self.hash,
                "file": self.file, "line": self.line, "end_line": self.end_line,
                "group": self.group}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DeclarationRecord:
        return cls(name=str(d["name"]), kind=Kind(d["kind"]), specifier=str(d["specifier"]),
                   pin=opt_str(d["pin"]), markers=str(d["markers"]), url=opt_str(d["url"]),
                   extras=strs(d["extras"]), ref=opt_str(d["ref"]), hash=opt_str(d["hash"]),
                   file=str(d["file"]), line=int(d["line"]), end_line=int(d["end_line"]),
                   group=str(d["group"]))


@dataclass(frozen=True)
class UnpinnedRecord:
    """A deployed declaration whose vulnerabilities could not be looked up, and why."""

    decl: DeclarationRecord
    why: str

    def to_json(self) -> dict[str, Any]:
        return self.decl.to_json() | {"why": self.why}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UnpinnedRecord:
        return cls(decl=DeclarationRecord.from_json(d), why=str(d["why"]))


@dataclass(frozen=True)
class VulnRecord:
    """A known vulnerability of a looked-up version; ``waived`` when every finding it gave is."""

    id: str
    aliases: tuple[str, ...]
    package: str
    version: str
    fixed: tuple[str, ...]
    severity: str | None
    severity_source: str | None
    summary: str | None
    modified: str | None
    waived: bool = False
    waiver: str | None = None  # the waiver's reason, when waived

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "aliases": list(self.aliases), "package": self.package,
                "version": self.version, "fixed": list(self.fixed), "severity": self.severity,
                "severity_source": self.severity_source, "summary": self.summary,
                "modified": self.modified, "waived": self.waived, "waiver": self.waiver}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VulnRecord:
        return cls(id=str(d["id"]), aliases=strs(d["aliases"]), package=str(d["package"]),
                   version=str(d["version"]), fixed=strs(d["fixed"]),
                   severity=opt_str(d["severity"]), severity_source=opt_str(d["severity_source"]),
                   summary=opt_str(d["summary"]), modified=opt_str(d["modified"]),
                   waived=bool(d["waived"]), waiver=opt_str(d["waiver"]))


@dataclass(frozen=True)
class SourceRecord:
    """Where the advisories came from."""

    kind: str
    digest: str | None
    date: str | None
    records: int | None
    location: str | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "digest": self.digest, "date": self.date,
                "records": self.records, "location": self.location}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourceRecord:
        return cls(kind=str(d["kind"]), digest=opt_str(d["digest"]), date=opt_str(d["date"]),
                   records=opt_int(d["records"]), location=opt_str(d["location"]))


@dataclass(frozen=True)
class FetchRecord:
    """A CMake FetchContent/ExternalProject download of the bundle."""

    name: str
    kind: Kind  # cmake-git or cmake-url
    repository: str | None
    tag: str | None
    url: str | None
    hash: str | None
    pinned: bool  # a full commit sha, or a URL with a hash
    file: str
    line: int

    @property
    def commit(self) -> str | None:
        """The tag when it is a full commit sha (what a git fetch is pinned to), else None."""
        return self.tag if self.tag and FULL_SHA.match(self.tag) else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind.value, "repository": self.repository,
                "tag": self.tag, "url": self.url, "hash": self.hash, "pinned": self.pinned,
                "file": self.file, "line": self.line}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FetchRecord:
        return cls(name=str(d["name"]), kind=Kind(d["kind"]), repository=opt_str(d["repository"]),
                   tag=opt_str(d["tag"]), url=opt_str(d["url"]), hash=opt_str(d["hash"]),
                   pinned=bool(d["pinned"]), file=str(d["file"]), line=int(d["line"]))


@dataclass(frozen=True)
class IndexRecord:
    option: str  # --index-url, --extra-index-url, ...
    url: str | None
    file: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return {"option": self.option, "url": self.url, "file": self.file, "line": self.line}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> IndexRecord:
        return cls(option=str(d["option"]), url=opt_str(d["url"]), file=str(d["file"]),
                   line=int(d["line"]))


@dataclass(frozen=True)
class LockedRecord:
    name: str
    version: str | None
    line: int
    hashes: tuple[str, ...]  # "alg:hex"
    markers: str
    url: str | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "line": self.line,
                "hashes": list(self.hashes), "markers": self.markers, "url": self.url}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LockedRecord:
        return cls(name=str(d["name"]), version=opt_str(d["version"]), line=int(d["line"]),
                   hashes=strs(d["hashes"]), markers=str(d["markers"]), url=opt_str(d["url"]))


@dataclass(frozen=True)
class LockRecord:
    """``[deps] lock``: the exact deployed set. ``path`` as findings name it."""

    path: str
    format: str
    environment: str
    packages: tuple[LockedRecord, ...]
    indexes: tuple[JsonObject, ...]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "environment": self.environment,
                "packages": [p.to_json() for p in self.packages],
                "indexes": [dict(i) for i in self.indexes]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LockRecord:
        return cls(path=str(d["path"]), format=str(d["format"]),
                   environment=str(d["environment"]),
                   packages=tuple(LockedRecord.from_json(p) for p in objects(d["packages"])),
                   indexes=objects(d["indexes"]))


def _decls(value: Any) -> tuple[DeclarationRecord, ...]:
    return tuple(DeclarationRecord.from_json(x) for x in objects(value))


@dataclass(frozen=True)
class DeployedSplit:
    """The deployed surface and which bundle declarations are on it."""

    surface: JsonObject
    deployed: tuple[DeclarationRecord, ...]
    not_deployed: tuple[DeclarationRecord, ...]
    not_deployed_not_checked: tuple[JsonObject, ...]

    def to_json(self) -> dict[str, Any]:
        return {"surface": dict(self.surface), "deployed": [d.to_json() for d in self.deployed],
                "not_deployed": [d.to_json() for d in self.not_deployed],
                "not_deployed_not_checked": [dict(s) for s in self.not_deployed_not_checked]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DeployedSplit:
        return cls(surface=obj(d["surface"]), deployed=_decls(d["deployed"]),
                   not_deployed=_decls(d["not_deployed"]),
                   not_deployed_not_checked=objects(d["not_deployed_not_checked"]))


@dataclass(frozen=True)
class DepsData(StageData):
    upstream: tuple[DeclarationRecord, ...]
    bundle: tuple[DeclarationRecord, ...]
    added: tuple[DeclarationRecord, ...]
    removed: tuple[DeclarationRecord, ...]
    changed: tuple[JsonObject, ...]  # {name, kind, change, before, after} (display only)
    vulnerabilities: tuple[VulnRecord, ...]
    source: SourceRecord
    cmake_fetches: tuple[FetchRecord, ...]
    indexes: tuple[IndexRecord, ...]
    checked: tuple[tuple[str, str], ...]  # (name, version) looked up
    files: Mapping[str, tuple[str, ...]]  # "upstream" / "bundle" -> the files read
    upstream_not_checked: tuple[str, ...]
    split: DeployedSplit | None
    lock: LockRecord | None
    unpinned_deployed: tuple[UnpinnedRecord, ...]
    notes: tuple[str, ...]
    shell_computed: tuple[JsonObject, ...]

    @property
    def deployed(self) -> tuple[DeclarationRecord, ...]:
        """The declarations that reach the server (all of the bundle's without a surface)."""
        return self.split.deployed if self.split is not None else self.bundle

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "upstream": [d.to_json() for d in self.upstream],
            "bundle": [d.to_json() for d in self.bundle],
            "added": [d.to_json() for d in self.added],
            "removed": [d.to_json() for d in self.removed],
            "changed": [dict(c) for c in self.changed],
            "vulnerabilities": [v.to_json() for v in self.vulnerabilities],
            "source": self.source.to_json(),
            "cmake_fetches": [f.to_json() for f in self.cmake_fetches],
            "indexes": [i.to_json() for i in self.indexes],
            "checked": [{"name": n, "version": v} for n, v in self.checked],
            "files": {k: list(v) for k, v in self.files.items()},
            "upstream_not_checked": list(self.upstream_not_checked),
        }
        if self.split is not None:
            out |= self.split.to_json()
        return out | {
            "lock": self.lock.to_json() if self.lock is not None else None,
            "unpinned_deployed": [u.to_json() for u in self.unpinned_deployed],
            "notes": list(self.notes),
            "shell_computed": [dict(s) for s in self.shell_computed],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DepsData:
        lock = opt_obj(d["lock"])
        return cls(
            upstream=_decls(d["upstream"]), bundle=_decls(d["bundle"]),
            added=_decls(d["added"]), removed=_decls(d["removed"]),
            changed=objects(d["changed"]),
            vulnerabilities=tuple(VulnRecord.from_json(v) for v in objects(d["vulnerabilities"])),
            source=SourceRecord.from_json(obj(d["source"])),
            cmake_fetches=tuple(FetchRecord.from_json(f) for f in objects(d["cmake_fetches"])),
            indexes=tuple(IndexRecord.from_json(i) for i in objects(d["indexes"])),
            checked=tuple((str(c["name"]), str(c["version"])) for c in objects(d["checked"])),
            files={str(k): strs(v) for k, v in obj(d["files"]).items()},
            upstream_not_checked=strs(d["upstream_not_checked"]),
            split=DeployedSplit.from_json(d) if "surface" in d else None,
            lock=LockRecord.from_json(lock) if lock is not None else None,
            unpinned_deployed=tuple(UnpinnedRecord.from_json(u)
                                    for u in objects(d["unpinned_deployed"])),
            notes=strs(d["notes"]), shell_computed=objects(d["shell_computed"]))

