"""The one interface for vulnerability data: :class:`VulnerabilitySource`, and its values.

A source is asked about exactly pinned PyPI packages and answers with a :class:`VulnReport`: the
vulnerabilities found, one line per package (or per source) it could not check, and a
:class:`SourceInfo` saying which advisory data was used (kind, digest, date, record count).
A source never raises for bad data: what it could not check is data, and makes the stage
incomplete.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class SourceKind(StrEnum):
    OSV = "osv"
    PIP_AUDIT = "pip-audit"
    NONE = "none"


@dataclass(frozen=True)
class Package:
    name: str  # canonical
    version: str  # the exact pin


@dataclass(frozen=True)
class Vulnerability:
    id: str
    aliases: tuple[str, ...]
    package: str
    version: str
    fixed: tuple[str, ...]
    severity: str | None  # critical|high|medium|low when the record says, else None
    severity_source: str | None  # what the record gave: "GHSA: MODERATE", a CVSS vector, ...
    summary: str
    modified: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "aliases": list(self.aliases), "package": self.package,
                "version": self.version, "fixed": list(self.fixed), "severity": self.severity,
                "severity_source": self.severity_source, "summary": self.summary,
                "modified": self.modified}


@dataclass(frozen=True)
class SourceInfo:
    kind: SourceKind
    digest: str | None = None  # sha256 of the snapshot (see the osv module for how)
    date: str | None = None  # newest `modified` among the records
    records: int | None = None
    location: str | None = None  # snapshot path or service URL

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "digest": self.digest, "date": self.date,
                "records": self.records, "location": self.location}


@dataclass(frozen=True)
class VulnReport:
    source: SourceInfo
    vulnerabilities: tuple[Vulnerability, ...] = ()
    not_checked: tuple[str, ...] = ()
    checked: tuple[Package, ...] = ()


class VulnerabilitySource(ABC):
    """Known vulnerabilities of exactly pinned PyPI packages."""

    kind: SourceKind

    @abstractmethod
    def check(self, packages: Sequence[Package]) -> VulnReport:
        """Look every package up; a package that could not be looked up is in ``not_checked``."""


class NoSource(VulnerabilitySource):
    """``deps.vulns = "none"``: deliberately not checked, and said so (fail closed)."""

    kind = SourceKind.NONE

    def check(self, packages: Sequence[Package]) -> VulnReport:
        return VulnReport(SourceInfo(SourceKind.NONE),
                          not_checked=("vulnerabilities: not checked (deps.vulns = none)",))
