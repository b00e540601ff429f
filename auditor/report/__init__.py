"""Report formatters (Markdown, HTML, SARIF, JSON, GitHub) and the writer of an audit's reports.

Reports are made only from the :class:`~auditor.model.AuditResult` (what ``audit.json`` holds),
never by re-running a stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from auditor.model import AuditResult
from auditor.report.interface import Formatter, ReportFormat, formatter_for

if TYPE_CHECKING:
    from auditor.stage import Context

#: what ``auditor audit`` writes next to audit.json (which the pipeline writes itself)
AUDIT_FORMATS: tuple[ReportFormat, ...] = (ReportFormat.MARKDOWN, ReportFormat.HTML,
                                           ReportFormat.SARIF)


def formatters() -> list[Formatter]:
    return [formatter_for(f) for f in AUDIT_FORMATS]


def write_reports(audit: AuditResult, out_dir: Path, ctx: Context | None = None) -> None:
    """report.md, report.html and findings.sarif into ``out_dir``."""
    for fmt in formatters():
        (out_dir / fmt.filename).write_text(fmt.render(audit), encoding="utf-8")


__all__ = ["AUDIT_FORMATS", "Formatter", "ReportFormat", "formatter_for", "formatters",
           "write_reports"]
