"""Report formatters (Markdown, HTML, SARIF, JSON, GitHub) and the writer of an audit's reports.

Reports are made only from the :class:`~auditor.model.AuditResult` (what ``audit.json`` holds),
never by re-running a stage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.errors import InputError
from auditor.model import AuditResult
from auditor.report.formats import ReportFormat, formatter_for
from auditor.report.interface import Formatter

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


def load_audit(path: Path) -> AuditResult:
    """A saved audit.json; an unreadable or foreign file is an InputError naming it (exit 2)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not an audit.json (a JSON object is expected)")
    try:
        return AuditResult.from_json(data)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a valid audit.json ({exc})") from None


def render_saved(path: Path, fmt: ReportFormat) -> str:
    """One format of a saved audit (``auditor report``): made from audit.json, nothing re-run."""
    return formatter_for(fmt).render(load_audit(path))


def step_summary_of(path: Path) -> str:
    from auditor.report.github import step_summary

    return step_summary(load_audit(path))


__all__ = ["AUDIT_FORMATS", "Formatter", "ReportFormat", "formatter_for", "formatters",
           "load_audit", "render_saved", "step_summary_of", "write_reports"]
