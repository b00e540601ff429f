"""The deps stage (not built yet: it says so and reports incomplete)."""

from __future__ import annotations

from auditor.errors import NotBuiltError
from auditor.model import StageResult
from auditor.stage import Context, Stage


class DepsStage(Stage):
    name = "deps"
    needs = ("verify",)

    def run(self, ctx: Context) -> StageResult:
        raise NotBuiltError("auditor deps is not built yet")
