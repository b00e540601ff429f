"""What the SBOM describes of the deps and build stages, taken from their typed results.

The deps stage's :class:`~auditor.results.deps.DepsData` and the build stage's
:class:`~auditor.results.build.BuildData` are narrowed here to what the CycloneDX document and the
provenance statement name; whatever the SBOM cannot describe (a module without a digest, an
official wheel never unpacked) is recorded as one line each, so the SBOM says what it leaves out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from auditor.model import StageResult, StageStatus
from auditor.results.build import BuildData
from auditor.results.deps import DeclarationRecord, DepsData, Kind, LockRecord

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def sha256_or_none(value: Any) -> str | None:
    """A lower-case 64-hex digest, accepting ``sha256:`` / ``SHA256=`` prefixes; else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    for prefix in ("sha256:", "sha256="):
        if text.lower().startswith(prefix):
            text = text[len(prefix):]
    text = text.lower()
    return text if SHA256_RE.match(text) else None


def _text(value: str | None) -> str | None:
    """``value`` without surrounding blanks; None when nothing is left."""
    return (value.strip() or None) if value is not None else None


@dataclass(frozen=True)
class Wheel:
    file: str
    name: str
    version: str
    sha256: str


@dataclass(frozen=True)
class Module:
    name: str
    wheel_path: str
    action: str  # "built" | "official"
    sha256: str | None
    builder: str | None
    sources: tuple[str, ...]
    commands: tuple[str, ...]
    changed_sources: tuple[str, ...] = ()  # the sources the series changed (why it was built)
    #: how the built module differs from the official one (ops, symbols, needed libraries, archs)
    differs_from_official: tuple[str, ...] = ()


@dataclass(frozen=True)
class BuildInfo:
    status: StageStatus | None  # None: the stage did not run at all
    wheel: Wheel | None
    official_wheel: Wheel | None
    modules: tuple[Module, ...]
    toolchain: Mapping[str, Any]
    source_date_epoch: int | None
    started: Any
    finished: Any
    reproducible: bool | None
    problems: tuple[str, ...] = ()

    @property
    def built(self) -> bool:
        return self.wheel is not None


@dataclass(frozen=True)
class Dependency:
    name: str
    specifier: str | None
    pin: str | None
    url: str | None
    kind: Kind
    locations: tuple[str, ...]  # "file:line" of every declaration
    hashes: tuple[str, ...] = ()  # "alg:hex" (from the lock)
    locked: bool = False  # the component comes from [deps] lock


@dataclass(frozen=True)
class CmakeFetch:
    name: str
    repository: str | None
    tag: str | None
    url: str | None
    hash: str | None  # as written, e.g. "SHA256=ab12..."
    pinned: bool  # as the deps stage judged it (a full sha, or a URL hash)
    commit: str | None  # the tag when it is a full commit sha
    location: str  # "file:line" of the declaration


@dataclass(frozen=True)
class Vulnerability:
    id: str
    aliases: tuple[str, ...]
    package: str
    version: str | None
    fixed: tuple[str, ...]
    severity: str | None
    waived: bool
    waiver: str | None
    summary: str | None = None
    severity_source: str | None = None


@dataclass(frozen=True)
class DepsInfo:
    status: StageStatus | None
    dependencies: tuple[Dependency, ...] = ()
    indexes: tuple[str, ...] = ()
    cmake_fetches: tuple[CmakeFetch, ...] = ()
    vulnerabilities: tuple[Vulnerability, ...] = ()
    vuln_source: Mapping[str, str] = field(default_factory=dict)  # kind, digest, date, location
    problems: tuple[str, ...] = ()
    looked_up: bool = False  # the stage gave its result (its vulnerabilities can be judged)


def read_build(result: StageResult | None) -> BuildInfo:
    """The build stage's outcome; a missing or not-requested stage is ``status`` None / so."""
    if result is None:
        return BuildInfo(None, None, None, (), {}, None, None, None, None)
    data = result.data_as(BuildData)
    if data is None:  # not requested, or crashed before it had anything
        return BuildInfo(result.status, None, None, (), {}, None, None, None, None)
    problems: list[str] = []
    wheel = _built_wheel(data)
    official = None
    if data.official_wheel is not None:
        o = data.official_wheel
        if o.name is None or o.version is None:
            missing = [k for k, v in (("name", o.name), ("version", o.version)) if v is None]
            problems.append(f"build: official_wheel lacks a valid {', '.join(missing)}")
        else:
            official = Wheel(file=o.file, name=o.name, version=o.version, sha256=o.sha256)
    modules = []
    for m in data.modules:
        digest = sha256_or_none(m.sha256)
        if digest is None:
            problems.append(f"build: module {m.wheel_path} has no valid sha256")
        modules.append(Module(name=m.name, wheel_path=m.wheel_path, action=m.action,
                              sha256=digest, builder=_text(m.builder), sources=m.sources,
                              commands=m.commands, changed_sources=m.changed_sources,
                              differs_from_official=m.differences_from_official))
    return BuildInfo(
        status=result.status, wheel=wheel, official_wheel=official, modules=tuple(modules),
        toolchain=data.toolchain.to_json(), source_date_epoch=data.source_date_epoch,
        started=data.started, finished=data.finished, reproducible=data.reproducible,
        problems=tuple(problems))


def _built_wheel(data: BuildData) -> Wheel | None:
    w = data.wheel
    return Wheel(file=w.file, name=w.name, version=w.version, sha256=w.sha256) if w else None


def read_deps(result: StageResult | None) -> DepsInfo:
    """The deps stage's outcome; declarations of one package are merged, keeping every place."""
    if result is None or result.status is StageStatus.NOT_REQUESTED:
        return DepsInfo(None if result is None else result.status)
    data = result.data_as(DepsData)
    if data is None:
        return DepsInfo(result.status, problems=("deps: the stage gave no result (it stopped "
                                                 "before reading any dependency)",))
    problems: list[str] = []
    indexes: list[str] = []
    # with a lock, the lock is what is shipped; else the deployed declarations
    if data.lock is not None:
        deps = _lock_dependencies(data.lock)
        for d in data.bundle:
            if d.kind is Kind.INDEX:
                _add_index(indexes, _text(d.name), _text(d.url))
    else:
        deps = _declared(data.deployed, indexes, problems)
    fetches = tuple(CmakeFetch(name=f.name, repository=_text(f.repository), tag=_text(f.tag),
                               url=_text(f.url), hash=_text(f.hash), pinned=f.pinned,
                               commit=f.commit, location=f"{f.file}:{f.line}") for f in data.cmake_fetches)
    for ix in data.indexes:
        _add_index(indexes, _text(ix.option), _text(ix.url))
    vulns = tuple(Vulnerability(
        id=v.id, aliases=tuple(a for a in v.aliases if a != v.id), package=v.package,
        version=_text(v.version), fixed=v.fixed, severity=_text(v.severity), waived=v.waived,
        waiver=v.waiver, summary=_text(v.summary), severity_source=_text(v.severity_source))
        for v in data.vulnerabilities)
    source = {k: str(val) for k, val in data.source.to_json().items() if val is not None}
    return DepsInfo(status=result.status, dependencies=deps, indexes=tuple(indexes),
                    cmake_fetches=fetches, vulnerabilities=vulns, vuln_source=source,
                    problems=tuple(problems), looked_up=True)


_Key = tuple[str, str | None, str | None, Kind, str | None]


def _declared(decls: tuple[DeclarationRecord, ...], indexes: list[str],
              problems: list[str]) -> tuple[Dependency, ...]:
    """The declarations as components: one per package, pin, URL, kind and specifier."""
    merged: dict[_Key, list[str]] = {}
    names: dict[_Key, str] = {}  # the first spelling of each package's name
    for d in decls:
        if d.kind is Kind.INDEX:
            _add_index(indexes, _text(d.name), _text(d.url))
            continue
        name = _text(d.name)
        if name is None:
            problems.append(f"deps: a {d.kind.value} dependency without a name "
                            f"({d.file}:{d.line})")
            continue
        key = (str(canonicalize_name(name)), d.version_pin, _text(d.url), d.kind,
               _text(d.specifier))
        names.setdefault(key, name)
        loc = f"{d.file}:{d.line}"
        places = merged.setdefault(key, [])
        if loc not in places:
            places.append(loc)
    return tuple(Dependency(name=names[key], pin=key[1], url=key[2], kind=key[3],
                            specifier=key[4], locations=tuple(locs))
                 for key, locs in merged.items())


def _lock_dependencies(lock: LockRecord) -> tuple[Dependency, ...]:
    """The packages of ``deps.lock`` (name, version, hashes, the lock's line)."""
    return tuple(Dependency(name=p.name, specifier=None, pin=_text(p.version), url=_text(p.url),
                            kind=Kind.URL if _text(p.url) else Kind.PYPI,
                            locations=(f"{lock.path or 'lock'}:{p.line}",),
                            hashes=tuple(h for h in p.hashes if ":" in h), locked=True)
                 for p in lock.packages)


def _add_index(indexes: list[str], option: str | None, url: str | None) -> None:
    if url is None:
        return
    text = f"{option} {url}" if option else url
    if text not in indexes:
        indexes.append(text)
