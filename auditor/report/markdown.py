"""report.md: fits a pull-request comment (placeholder until the reports issue lands)."""

from __future__ import annotations

from auditor.model import AuditResult
from auditor.report.interface import Formatter


class MarkdownFormatter(Formatter):
    filename = "report.md"

    def render(self, audit: AuditResult) -> str:
        lines = [f"# Audit: {audit.verdict.value}", ""]
        lines += [f"- {r}" for r in audit.reasons]
        lines += ["", "| stage | status |", "|---|---|"]
        lines += [f"| {n} | {s.status.value} |" for n, s in audit.stages.items()]
        return "\n".join(lines) + "\n"
