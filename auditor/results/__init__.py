"""Typed stage results: one frozen dataclass per stage for what its ``--json`` prints.

Each stage builds its :class:`~auditor.results.base.StageData` subclass; later stages, the report
and the gate read those fields, never the JSON. ``to_json`` gives exactly the object the stage
prints (``audit.json`` holds it with the keys :class:`~auditor.model.StageResult` adds);
``from_json`` reads it back from a file that passed ``docs/audit.schema.json``.
"""

from __future__ import annotations

import importlib

from auditor.results.base import Crashed, StageData

#: which module and class hold each stage's data (imported only when a stage's JSON is read)
DATA_CLASSES: dict[str, str] = {
    "verify": "auditor.results.verify:VerifyData",
    "scan": "auditor.results.scan:ScanData",
    "deps": "auditor.results.deps:DepsData",
    "build": "auditor.results.build:BuildData",
    "sbom": "auditor.results.sbom:SbomData",
    "unit": "auditor.results.unit:UnitData",
    "review": "auditor.results.review:ReviewData",
}


def data_class(stage: str) -> type[StageData]:
    """The :class:`StageData` subclass of ``stage`` (KeyError for a stage that has none)."""
    module, _, name = DATA_CLASSES[stage].partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, StageData)
    return cls


__all__ = ["DATA_CLASSES", "Crashed", "StageData", "data_class"]
