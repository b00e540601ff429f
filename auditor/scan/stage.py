"""The scan stage (not built yet: it says so and reports incomplete)."""

from __future__ import annotations

from auditor.errors import NotBuiltError
from auditor.model import StageResult
from auditor.stage import Context, Stage


class ScanStage(Stage):
    name = "scan"
    needs = ("verify",)

    def run(self, ctx: Context) -> StageResult:
        raise NotBuiltError("auditor scan is not built yet")
