"""The choice of report formats and the factory from a format to its Formatter.

The registry that imports every formatter lives here, beside the CLI that offers the choice, not in
:mod:`auditor.report.interface` (which every formatter imports).
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never

from auditor.report.interface import Formatter


class ReportFormat(StrEnum):
    MARKDOWN = "md"
    HTML = "html"
    SARIF = "sarif"
    JSON = "json"
    GITHUB = "github"  # workflow-command annotations for a GitHub Actions log


def formatter_for(fmt: ReportFormat) -> Formatter:
    if fmt is ReportFormat.MARKDOWN:
        from auditor.report.markdown import MarkdownFormatter

        return MarkdownFormatter()
    if fmt is ReportFormat.HTML:
        from auditor.report.html import HtmlFormatter

        return HtmlFormatter()
    if fmt is ReportFormat.SARIF:
        from auditor.report.sarif import SarifFormatter

        return SarifFormatter()
    if fmt is ReportFormat.JSON:
        from auditor.report.jsonout import JsonFormatter

        return JsonFormatter()
    if fmt is ReportFormat.GITHUB:
        from auditor.report.github import GithubAnnotations

        return GithubAnnotations()
    assert_never(fmt)
