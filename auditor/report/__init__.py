"""Report formatters (Markdown, HTML, JSON, SARIF) and the writer of the audit directory's reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from auditor.model import AuditResult
from auditor.report.interface import Formatter

if TYPE_CHECKING:
    from auditor.stage import Context


def formatters() -> list[Formatter]:
    from auditor.report.markdown import MarkdownFormatter

    return [MarkdownFormatter()]


def write_reports(audit: AuditResult, out_dir: Path, ctx: Context | None = None) -> None:
    for fmt in formatters():
        (out_dir / fmt.filename).write_text(fmt.render(audit), encoding="utf-8")
