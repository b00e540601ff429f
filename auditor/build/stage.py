"""The build stage (not built yet: it says so and reports incomplete)."""

from __future__ import annotations

from auditor.errors import NotBuiltError
from auditor.model import StageResult
from auditor.stage import Context, Stage


class BuildStage(Stage):
    name = "build"
    needs = ("verify",)

    def run(self, ctx: Context) -> StageResult:
        raise NotBuiltError("auditor build is not built yet")
