"""The scan stage's data: what was scanned, by which scanners, and what the rule sets covered."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.model import Scope
from auditor.results.base import JsonObject, StageData, obj, objects, opt_str, str_map, strs


@dataclass(frozen=True)
class CacheTally:
    hits: int
    misses: int
    scanned: Mapping[str, int]  # scanner -> files it scanned (the misses)

    def to_json(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "scanned": dict(self.scanned)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CacheTally:
        return cls(hits=int(d["hits"]), misses=int(d["misses"]),
                   scanned={str(k): int(v) for k, v in obj(d["scanned"]).items()})


@dataclass(frozen=True)
class ScanData(StageData):
    scope: Scope
    checked_files: tuple[str, ...]
    skipped: tuple[str, ...]
    scanners: Mapping[str, str]  # name -> version
    ruleset: str | None
    cache: CacheTally | None  # None with --reproducible: how many answers came from the cache
    # is a fact of the run, not of the result
    coverage: Mapping[str, tuple[str, ...]]  # path -> the rule sets that read it
    uncovered: tuple[JsonObject, ...]  # {"path", "language", "lines"}
    notes: tuple[str, ...]
    # with --explain: path -> the readings that ran, grouped (target, scanner, reading, reason,
    # note, rules: auditor.scan.plan.explained); None: not asked for
    readings: Mapping[str, tuple[JsonObject, ...]] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"scope": self.scope.value, "checked_files": list(self.checked_files),
               "skipped": list(self.skipped), "scanners": dict(self.scanners),
               "ruleset": self.ruleset, "cache": self.cache.to_json() if self.cache is not None else None,
               "coverage": {p: list(labels) for p, labels in self.coverage.items()},
               "uncovered": [dict(u) for u in self.uncovered], "notes": list(self.notes)}
        if self.readings is not None:
            out["readings"] = {p: [dict(r) for r in rows] for p, rows in self.readings.items()}
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ScanData:
        return cls(scope=Scope(d["scope"]), checked_files=strs(d["checked_files"]),
                   skipped=strs(d["skipped"]), scanners=str_map(d["scanners"]),
                   ruleset=opt_str(d["ruleset"]), cache=(CacheTally.from_json(obj(d["cache"]))
                                                      if d.get("cache") is not None else None),
                   coverage={str(p): strs(v) for p, v in obj(d["coverage"]).items()},
                   uncovered=objects(d["uncovered"]), notes=strs(d["notes"]),
                   readings={str(p): objects(v) for p, v in obj(d["readings"]).items()}
                   if "readings" in d else None)
