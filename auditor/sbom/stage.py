"""The sbom stage (not built yet: it says so and reports incomplete)."""

from __future__ import annotations

from auditor.errors import NotBuiltError
from auditor.model import StageResult
from auditor.stage import Context, Stage


class SbomStage(Stage):
    name = "sbom"
    needs = ("verify",)

    def run(self, ctx: Context) -> StageResult:
        raise NotBuiltError("auditor sbom is not built yet")
