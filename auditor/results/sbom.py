"""The sbom stage's data: the CycloneDX document, the provenance statement and the OpenVEX
document it wrote."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.results.base import StageData, obj, opt_obj


@dataclass(frozen=True)
class SbomDocument:
    file: str  # its name in the audit directory
    serial: str
    components: int
    commits: int
    valid: bool  # checked against the CycloneDX 1.6 schema

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "serial": self.serial, "components": self.components,
                "commits": self.commits, "valid": self.valid}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SbomDocument:
        return cls(file=str(d["file"]), serial=str(d["serial"]), components=int(d["components"]),
                   commits=int(d["commits"]), valid=bool(d["valid"]))


@dataclass(frozen=True)
class ProvenanceDocument:
    file: str
    subject: str  # the built wheel's file name
    digest: str  # its sha256

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "subject": self.subject, "digest": self.digest}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ProvenanceDocument:
        return cls(file=str(d["file"]), subject=str(d["subject"]), digest=str(d["digest"]))


@dataclass(frozen=True)
class VexRecord:
    """``vex.openvex.json``: one statement per known vulnerability the deps stage found."""

    file: str
    id: str  # the document's @id
    statements: int
    counts: Mapping[str, int]  # statements by status (not_affected, affected, ...)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "id": self.id, "statements": self.statements,
                "counts": dict(self.counts)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VexRecord:
        return cls(file=str(d["file"]), id=str(d["id"]), statements=int(d["statements"]),
                   counts={str(k): int(v) for k, v in obj(d["counts"]).items()})


@dataclass(frozen=True)
class SbomData(StageData):
    sbom: SbomDocument | None  # None when the stage failed before writing it
    provenance: ProvenanceDocument | None  # only for a wheel built here
    built: bool
    vex: VexRecord | None = None  # only when the deps stage ran

    def to_json(self) -> dict[str, Any]:
        return {"sbom": self.sbom.to_json() if self.sbom is not None else None,
                "provenance": self.provenance.to_json() if self.provenance is not None else None,
                "built": self.built,
                "vex": self.vex.to_json() if self.vex is not None else None}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SbomData:
        sbom, prov = opt_obj(d["sbom"]), opt_obj(d["provenance"])
        vex = opt_obj(d.get("vex"))  # audit.json files written before VEX have none
        return cls(sbom=SbomDocument.from_json(obj(sbom)) if sbom is not None else None,
                   provenance=ProvenanceDocument.from_json(prov) if prov is not None else None,
                   built=bool(d["built"]),
                   vex=VexRecord.from_json(vex) if vex is not None else None)
