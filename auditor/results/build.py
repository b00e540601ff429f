"""The build stage's data: the wheel built, the official wheel, each module, the toolchain, the
sandbox, where every file of the wheel came from and whether two builds agreed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.results.base import (
    JsonObject,
    StageData,
    obj,
    objects,
    opt_bool,
    opt_int,
    opt_obj,
    opt_str,
    str_map,
    strs,
)

# Where a failed reproducibility check leaves both builds of each differing module (in the audit
# or build folder; never in a wheel): the evidence a reviewer compares byte for byte.
KEPT_DIR = "not-reproducible"

@dataclass(frozen=True)
class BuiltWheel:
    """The wheel written into the audit directory (``file`` is its name there)."""

    file: str
    name: str
    version: str
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "name": self.name, "version": self.version,
                "sha256": self.sha256}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BuiltWheel:
        return cls(file=str(d["file"]), name=str(d["name"]), version=str(d["version"]),
                   sha256=str(d["sha256"]))


@dataclass(frozen=True)
class OfficialWheel:
    """The official wheel the overlay starts from; name and version once it was unpacked."""

    file: str
    path: str
    name: str | None
    version: str | None
    sha256: str
    expected_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "path": self.path, "name": self.name, "version": self.version,
                "sha256": self.sha256, "expected_sha256": self.expected_sha256}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OfficialWheel:
        return cls(file=str(d["file"]), path=str(d["path"]), name=opt_str(d["name"]),
                   version=opt_str(d["version"]), sha256=str(d["sha256"]),
                   expected_sha256=str(d["expected_sha256"]))


@dataclass(frozen=True)
class Abi:
    """Exported dynamic symbols of a rebuilt module against the official one."""

    missing: tuple[str, ...]
    added: tuple[str, ...]
    missing_weak: tuple[str, ...]
    #: CUDA kernels (and their ``__device_stub__`` host stubs) the official module exports and
    #: the rebuilt one hides, that no other file of the official wheel imports
    missing_kernels: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"missing": list(self.missing), "added": list(self.added),
                               "missing_weak": list(self.missing_weak)}
        if self.missing_kernels:
            out["missing_kernels"] = list(self.missing_kernels)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Abi:
        return cls(missing=strs(d["missing"]), added=strs(d["added"]),
                   missing_weak=strs(d["missing_weak"]),
                   missing_kernels=strs(d.get("missing_kernels", [])))


@dataclass(frozen=True)
class ModuleRecord:
    """One native module of the recipe: ``built`` here, ``official`` (taken from the wheel) or
    ``not-built`` (the build stopped first)."""

    name: str
    wheel_path: str
    action: str
    sha256: str | None
    official_sha256: str | None
    builder: str
    recipe_entry: str
    sources: tuple[str, ...]
    changed_sources: tuple[str, ...]
    commands: tuple[str, ...]  # as recorded ($SRC / $BUILD for the build folders)
    abi: Abi | None
    #: a built module against the official one, read statically: registered ops, exported
    #: symbols, needed libraries, GPU archs and every difference (rebuild/compare_official.py)
    official_comparison: JsonObject | None = None

    @property
    def differences_from_official(self) -> tuple[str, ...]:
        c = self.official_comparison
        return strs(c.get("differences", [])) if c is not None else ()

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "wheel_path": self.wheel_path, "action": self.action,
               "sha256": self.sha256, "official_sha256": self.official_sha256,
               "builder": self.builder, "recipe_entry": self.recipe_entry,
               "sources": list(self.sources), "changed_sources": list(self.changed_sources),
               "commands": list(self.commands),
               "abi": self.abi.to_json() if self.abi is not None else None}
        if self.official_comparison is not None:
            out["official_comparison"] = dict(self.official_comparison)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ModuleRecord:
        abi = opt_obj(d["abi"])
        return cls(name=str(d["name"]), wheel_path=str(d["wheel_path"]), action=str(d["action"]),
                   sha256=opt_str(d["sha256"]), official_sha256=opt_str(d["official_sha256"]),
                   builder=str(d["builder"]), recipe_entry=str(d["recipe_entry"]),
                   sources=strs(d["sources"]), changed_sources=strs(d["changed_sources"]),
                   commands=strs(d["commands"]),
                   abi=Abi.from_json(abi) if abi is not None else None,
                   official_comparison=opt_obj(d.get("official_comparison")))


@dataclass(frozen=True)
class Toolchain:
    """The toolchain found (``nvcc``/``cc`` versions) against the recipe's ``expected`` one;
    ``differences`` and ``programs`` once it was looked for (a build was needed)."""

    nvcc: str | None
    cc: str | None
    expected: Mapping[str, str | None]
    matches: bool | None
    differences: tuple[str, ...] | None = None
    programs: JsonObject | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nvcc": self.nvcc, "cc": self.cc, "expected": dict(self.expected),
                               "matches": self.matches}
        if self.differences is not None:
            out["differences"] = list(self.differences)
        if self.programs is not None:
            out["programs"] = dict(self.programs)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Toolchain:
        return cls(nvcc=opt_str(d["nvcc"]), cc=opt_str(d["cc"]), expected={str(k): opt_str(v) for k, v in obj(d["expected"]).items()},
                   matches=opt_bool(d["matches"]),
                   differences=strs(d["differences"]) if "differences" in d else None,
                   programs=opt_obj(d.get("programs")))


@dataclass(frozen=True)
class LeftOut:
    """A file of the bundle kept out of the build tree (a binary, a symbolic link, or a native source
    this target never compiles)."""

    path: str
    reason: str
    size: int
    sha256: str
    commit: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "size": self.size,
                "sha256": self.sha256, "commit": self.commit}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LeftOut:
        return cls(path=str(d["path"]), reason=str(d["reason"]), size=int(d["size"]),
                   sha256=str(d["sha256"]), commit=opt_str(d["commit"]))


@dataclass(frozen=True)
class PythonFiles:
    """The audited Python files the overlay put into the wheel, by what happened to them."""

    replaced: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    not_packaged: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"replaced": list(self.replaced), "added": list(self.added),
                "dropped": list(self.dropped), "not_packaged": list(self.not_packaged)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> PythonFiles:
        return cls(replaced=strs(d["replaced"]), added=strs(d["added"]),
                   dropped=strs(d["dropped"]), not_packaged=strs(d["not_packaged"]))


@dataclass(frozen=True)
class ImportedBuild:
    """Where an imported build came from (``auditor audit --build-from DIR``): the folder as the
    outputs name it, the sha256 of its build record, and the auditor that wrote the record."""

    source: str
    record: str
    record_sha256: str
    tool: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "record": self.record, "record_sha256": self.record_sha256,
                "tool": dict(self.tool)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ImportedBuild:
        return cls(source=str(d["from"]), record=str(d["record"]),
                   record_sha256=str(d["record_sha256"]), tool=str_map(obj(d.get("tool", {}))))


@dataclass(frozen=True)
class BuildData(StageData):
    recipe: str
    target: str
    archs: tuple[str, ...]
    toolchain: Toolchain
    started: str
    finished: str | None = None
    wheel: BuiltWheel | None = None  # only when the build succeeded
    official_wheel: OfficialWheel | None = None
    modules: tuple[ModuleRecord, ...] = ()
    sandbox: JsonObject | None = None
    environment: Mapping[str, str] | None = None
    reproducible: bool | None = None  # None: repro switched off, or not reached
    repro: JsonObject | None = None  # the two builds compared (display only)
    origins: Mapping[str, JsonObject] = field(default_factory=dict)  # wheel path -> origin
    left_out: tuple[LeftOut, ...] = ()
    python: PythonFiles = PythonFiles()
    source_date_epoch: int | None = None
    official_differs_from_upstream: tuple[str, ...] | None = None
    imported: ImportedBuild | None = None  # built on another machine, checked and imported here

    @property
    def built(self) -> tuple[ModuleRecord, ...]:
        """The modules compiled here."""
        return tuple(m for m in self.modules if m.action == "built")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "recipe": self.recipe, "target": self.target, "archs": list(self.archs),
            "wheel": self.wheel.to_json() if self.wheel is not None else None,
            "official_wheel": (self.official_wheel.to_json() if self.official_wheel is not None
                               else None),
            "modules": [m.to_json() for m in self.modules],
            "toolchain": self.toolchain.to_json(),
            "sandbox": dict(self.sandbox) if self.sandbox is not None else None,
            "environment": dict(self.environment) if self.environment is not None else None,
            "reproducible": self.reproducible,
            "repro": dict(self.repro) if self.repro is not None else None,
            "origins": {p: dict(o) for p, o in self.origins.items()},
            "left_out": [x.to_json() for x in self.left_out],
            "python": self.python.to_json(),
            "source_date_epoch": self.source_date_epoch,
            "started": self.started, "finished": self.finished,
        }
        if self.official_differs_from_upstream is not None:
            out["official_differs_from_upstream"] = list(self.official_differs_from_upstream)
        if self.imported is not None:
            out["imported"] = self.imported.to_json()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BuildData:
        wheel, official = opt_obj(d["wheel"]), opt_obj(d["official_wheel"])
        env = opt_obj(d["environment"])
        return cls(
            recipe=str(d["recipe"]), target=str(d["target"]), archs=strs(d["archs"]),
            wheel=BuiltWheel.from_json(wheel) if wheel is not None else None,
            official_wheel=OfficialWheel.from_json(official) if official is not None else None,
            modules=tuple(ModuleRecord.from_json(m) for m in objects(d["modules"])),
            toolchain=Toolchain.from_json(obj(d["toolchain"])),
            sandbox=opt_obj(d["sandbox"]),
            environment=str_map(env) if env is not None else None,
            reproducible=opt_bool(d["reproducible"]), repro=opt_obj(d["repro"]),
            origins={str(p): obj(o) for p, o in obj(d["origins"]).items()},
            left_out=tuple(LeftOut.from_json(x) for x in objects(d["left_out"])),
            python=PythonFiles.from_json(obj(d["python"])),
            source_date_epoch=opt_int(d["source_date_epoch"]),
            started=str(d["started"]), finished=opt_str(d["finished"]),
            official_differs_from_upstream=(strs(d["official_differs_from_upstream"])
                                            if "official_differs_from_upstream" in d else None),
            imported=(ImportedBuild.from_json(obj(d["imported"])) if "imported" in d else None))
