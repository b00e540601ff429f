"""The Formatter interface (one audit result in, one document out) and the choice of formats."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from typing import ClassVar, assert_never

from auditor.model import AuditResult


class Formatter(ABC):
    #: file name inside the audit directory
    filename: ClassVar[str]

    @abstractmethod
    def render(self, audit: AuditResult) -> str:
        """The whole document as text; untrusted strings escaped for this format."""


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
