"""The unit stage's data: the rendered (or checked) unit and what systemd-analyze said of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.results.base import StageData, opt_obj, opt_str, strs


@dataclass(frozen=True)
class ExposureScore:
    score: float
    label: str

    def to_json(self) -> dict[str, Any]:
        return {"score": self.score, "label": self.label}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExposureScore:
        return cls(score=float(d["score"]), label=str(d["label"]))


@dataclass(frozen=True)
class UnitVerify:
    ok: bool
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "warnings": list(self.warnings)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UnitVerify:
        return cls(ok=bool(d["ok"]), warnings=strs(d["warnings"]))


@dataclass(frozen=True)
class UnitData(StageData):
    unit: str  # the unit's file name in the audit directory (its path for ``unit check``)
    env_example: str | None
    key_mode: str | None
    profile: str
    exposure: ExposureScore | None  # None when systemd-analyze could not measure it
    exposure_threshold: float
    verify: UnitVerify | None

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.unit, "env_example": self.env_example, "key_mode": self.key_mode,
                "profile": self.profile,
                "exposure": self.exposure.to_json() if self.exposure is not None else None,
                "exposure_threshold": self.exposure_threshold,
                "verify": self.verify.to_json() if self.verify is not None else None}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UnitData:
        exposure, verify = opt_obj(d["exposure"]), opt_obj(d["verify"])
        return cls(unit=str(d["unit"]), env_example=opt_str(d["env_example"]),
                   key_mode=opt_str(d["key_mode"]), profile=str(d["profile"]),
                   exposure=ExposureScore.from_json(exposure) if exposure is not None else None,
                   exposure_threshold=float(d["exposure_threshold"]),
                   verify=UnitVerify.from_json(verify) if verify is not None else None)
