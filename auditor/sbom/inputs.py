"""Typed, defensive views of what the deps and build stages hand to the SBOM.

The other stages publish plain JSON ``details``; this module turns the agreed keys into frozen
dataclasses and records, as one line each, whatever is missing or malformed, so the SBOM can say
what it could not describe instead of silently leaving it out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from auditor.model import StageResult, StageStatus

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


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value).strip()
        return text or None
    return None


def _strs(value: Any) -> tuple[str, ...]:
    """A list of strings (or of {path: ...} objects, or of argv lists) as display strings."""
    if value is None:
        return ()
    if isinstance(value, (str, int)):
        return (str(value),)
    out: list[str] = []
    if isinstance(value, Sequence):
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, Sequence):
                import shlex

                out.append(shlex.join(str(x) for x in item))
            elif isinstance(item, Mapping):
                label = _str(item.get("path")) or _str(item.get("name")) or _str(item.get("file"))
                digest = sha256_or_none(item.get("sha256"))
                if label:
                    out.append(f"{label} sha256:{digest}" if digest else label)
    return tuple(out)


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
    kind: str
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
    pinned: bool | None = None  # as the deps stage judged it (a full sha, or a URL hash)
    location: str | None = None  # "file:line" of the declaration


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


def _wheel(raw: Any, what: str, problems: list[str]) -> Wheel | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.append(f"build: {what} is not an object")
        return None
    name, version, file = _str(raw.get("name")), _str(raw.get("version")), _str(raw.get("file"))
    digest = sha256_or_none(raw.get("sha256"))
    missing = [k for k, v in (("name", name), ("version", version), ("file", file),
                              ("sha256", digest)) if v is None]
    if missing:
        problems.append(f"build: {what} lacks a valid {', '.join(missing)}")
        return None
    assert name and version and file and digest
    return Wheel(file=file, name=name, version=version, sha256=digest)


def _epoch(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def read_build(result: StageResult | None) -> BuildInfo:
    """The build stage's outcome; a missing or not-requested stage is ``status`` None / so."""
    if result is None:
        return BuildInfo(None, None, None, (), {}, None, None, None, None)
    if result.status is StageStatus.NOT_REQUESTED:
        return BuildInfo(result.status, None, None, (), {}, None, None, None, None)
    d = result.details
    problems: list[str] = []
    wheel = _wheel(d.get("wheel"), "wheel", problems)
    official = _wheel(d.get("official_wheel"), "official_wheel", problems)
    modules: list[Module] = []
    raw_modules = d.get("modules") or []
    if not isinstance(raw_modules, Sequence) or isinstance(raw_modules, str):
        problems.append("build: modules is not a list")
        raw_modules = []
    for i, m in enumerate(raw_modules):
        if not isinstance(m, Mapping):
            problems.append(f"build: modules[{i}] is not an object")
            continue
        path = _str(m.get("wheel_path")) or _str(m.get("name"))
        if path is None:
            problems.append(f"build: modules[{i}] has no wheel_path")
            continue
        digest = sha256_or_none(m.get("sha256"))
        if digest is None:
            problems.append(f"build: module {path} has no valid sha256")
        modules.append(Module(name=_str(m.get("name")) or path, wheel_path=path,
                              action=_str(m.get("action")) or "unknown", sha256=digest,
                              builder=_str(m.get("builder")), sources=_strs(m.get("sources")),
                              commands=_strs(m.get("commands")),
                              changed_sources=_strs(m.get("changed_sources"))))
    toolchain = d.get("toolchain") if isinstance(d.get("toolchain"), Mapping) else {}
    repro = d.get("reproducible")
    return BuildInfo(
        status=result.status, wheel=wheel, official_wheel=official, modules=tuple(modules),
        toolchain=dict(toolchain or {}), source_date_epoch=_epoch(d.get("source_date_epoch")),
        started=d.get("started"), finished=d.get("finished"),
        reproducible=repro if isinstance(repro, bool) else None, problems=tuple(problems))


def _waiver(raw: Mapping[str, Any]) -> tuple[bool, str | None]:
    w = raw.get("waived")
    reason = _str(raw.get("waiver"))
    if isinstance(w, Mapping):
        return True, _str(w.get("reason")) or reason
    if isinstance(w, str):
        return bool(w.strip()), w.strip() or reason
    return bool(w), reason


def read_deps(result: StageResult | None) -> DepsInfo:
    """The deps stage's outcome; declarations of one package are merged, keeping every place."""
    if result is None or result.status is StageStatus.NOT_REQUESTED:
        return DepsInfo(None if result is None else result.status)
    d = result.details
    problems: list[str] = []

    def items(key: str) -> list[Mapping[str, Any]]:
        raw = d.get(key)
        if raw is None:
            problems.append(f"deps: no {key} list")
            return []
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            problems.append(f"deps: {key} is not a list")
            return []
        good = [x for x in raw if isinstance(x, Mapping)]
        if len(good) != len(raw):
            problems.append(f"deps: {len(raw) - len(good)} entries of {key} are not objects")
        return good

    Key = tuple[str, str | None, str | None, str, str | None]
    merged: dict[Key, list[str]] = {}
    names: dict[Key, str] = {}  # the first spelling of each package's name
    indexes: list[str] = []
    lock = d.get("lock") if isinstance(d.get("lock"), Mapping) else None
    locked = _lock_dependencies(lock, problems) if lock is not None else []
    # with a lock, the lock is what is shipped; else the deployed declarations (all of them
    # for an audit written before the deployed surface existed)
    declared = [] if lock is not None else items("deployed" if "deployed" in d else "bundle")
    for dep in declared:
        kind = (_str(dep.get("kind")) or "pypi").lower()
        url = _str(dep.get("url"))
        if kind == "index":
            _add_index(indexes, _str(dep.get("name")), url)
            continue
        name = _str(dep.get("name"))
        if name is None:
            problems.append(f"deps: a {kind} dependency without a name "
                            f"({dep.get('file')}:{dep.get('line')})")
            continue
        # "pin" as agreed; the deps stage also writes it as "version", and a VCS ref pins too
        pin = _str(dep.get("pin")) or _str(dep.get("version"))
        if pin is None and kind == "vcs":
            pin = _str(dep.get("ref"))
        key = (str(canonicalize_name(name)), pin, url, kind, _str(dep.get("specifier")))
        names.setdefault(key, name)
        where = _str(dep.get("file"))
        loc = f"{where}:{dep.get('line')}" if where and dep.get("line") is not None else where
        merged.setdefault(key, [])
        if loc and loc not in merged[key]:
            merged[key].append(loc)
    deps = tuple(locked) + tuple(
        Dependency(name=names[key], pin=key[1], url=key[2], kind=key[3], specifier=key[4],
                   locations=tuple(locs)) for key, locs in merged.items())
    if lock is not None:
        for dep in items("bundle"):
            if (_str(dep.get("kind")) or "").lower() == "index":
                _add_index(indexes, _str(dep.get("name")), _str(dep.get("url")))

    fetches = []
    for f in items("cmake_fetches"):
        name = _str(f.get("name"))
        if name is None:
            problems.append("deps: a CMake fetch without a name")
            continue
        where = _str(f.get("file"))
        fetches.append(CmakeFetch(name=name, repository=_str(f.get("repository")),
                                  tag=_str(f.get("tag")), url=_str(f.get("url")),
                                  hash=_str(f.get("hash")),
                                  pinned=f.get("pinned") if isinstance(f.get("pinned"), bool)
                                  else None,
                                  location=(f"{where}:{f.get('line')}" if where and
                                            f.get("line") is not None else where)))
    for ix in d.get("indexes") or []:
        if isinstance(ix, Mapping):
            _add_index(indexes, _str(ix.get("option")), _str(ix.get("url")))

    vulns = []
    for v in items("vulnerabilities"):
        vid, pkg = _str(v.get("id")), _str(v.get("package"))
        if vid is None or pkg is None:
            problems.append("deps: a vulnerability without an id or package")
            continue
        fixed = v.get("fixed")
        waived, waiver = _waiver(v)
        if not waived:
            waived, waiver = _waived_by_finding(result, vid, pkg)
        vulns.append(Vulnerability(
            id=vid, aliases=tuple(a for a in _strs(v.get("aliases")) if a != vid), package=pkg,
            version=_str(v.get("version")),
            fixed=(_strs(fixed) if not isinstance(fixed, str) else (fixed,)),
            severity=_str(v.get("severity")), waived=waived, waiver=waiver,
            summary=_str(v.get("summary")), severity_source=_str(v.get("severity_source"))))
    source = d.get("source") if isinstance(d.get("source"), Mapping) else {}
    return DepsInfo(status=result.status, dependencies=deps, indexes=tuple(indexes),
                    cmake_fetches=tuple(fetches), vulnerabilities=tuple(vulns),
                    vuln_source={k: str(val) for k, val in (source or {}).items()
                                 if val is not None and not isinstance(val, (dict, list))},
                    problems=tuple(problems))


def _lock_dependencies(lock: Mapping[str, Any], problems: list[str]) -> list[Dependency]:
    """The packages of ``deps.lock`` (name, version, hashes, the lock's line)."""
    raw = lock.get("packages")
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        problems.append("deps: lock.packages is not a list")
        return []
    label = _str(lock.get("path")) or "lock"
    out = []
    for p in raw:
        name = _str(p.get("name")) if isinstance(p, Mapping) else None
        if name is None:
            problems.append("deps: a lock entry without a name")
            continue
        assert isinstance(p, Mapping)
        url = _str(p.get("url"))
        hashes = tuple(h for h in _strs(p.get("hashes")) if ":" in h)
        where = f"{label}:{p.get('line')}" if p.get("line") is not None else label
        out.append(Dependency(name=name, specifier=None, pin=_str(p.get("version")), url=url,
                              kind="url" if url else "pypi", locations=(where,), hashes=hashes,
                              locked=True))
    return out


def _add_index(indexes: list[str], option: str | None, url: str | None) -> None:
    if url is None:
        return
    text = f"{option} {url}" if option else url
    if text not in indexes:
        indexes.append(text)


def _waived_by_finding(result: StageResult, vid: str, package: str) -> tuple[bool, str | None]:
    """The deps stage waives its vulnerability *findings*; find the one about ``vid``."""
    word = re.compile(rf"(?<![\w-]){re.escape(vid)}(?![\w-])")
    for f in result.findings:
        if "vulnerab" in f.rule and word.search(f.message) and package.lower() in f.message.lower():
            if f.waived:
                return True, f.waiver
    return False, None
