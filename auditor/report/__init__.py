"""Report formatters (Markdown, HTML, SARIF, JSON, GitHub) and the writer of an audit's reports.

Reports are made only from the :class:`~auditor.model.AuditResult` (what ``audit.json`` holds),
never by re-running a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.model import STAGES, AuditResult, Verdict, compute_verdict
from auditor.outputs import write_audit_file
from auditor.report.formats import ReportFormat, formatter_for
from auditor.report.interface import Formatter, RedactedAudit, redacted

if TYPE_CHECKING:
    from auditor.stage import Context

#: what ``auditor audit`` writes next to audit.json (which the pipeline writes itself)
AUDIT_FORMATS: tuple[ReportFormat, ...] = (ReportFormat.MARKDOWN, ReportFormat.HTML,
                                           ReportFormat.SARIF)


def formatters() -> list[Formatter]:
    return [formatter_for(f) for f in AUDIT_FORMATS]


@dataclass(frozen=True)
class Recomputed:
    """A saved audit with its verdict recomputed; ``stored`` is the file's verdict when it differs."""

    audit: AuditResult
    stored: Verdict | None

    @property
    def note(self) -> str | None:
        if self.stored is None:
            return None
        return (f"audit.json says {self.stored.value}, but its own findings and not-checked "
                f"reasons give {self.audit.verdict.value}: the stored verdict was replaced "
                "(was the file edited?)")


def recompute_verdict(audit: AuditResult) -> Recomputed:
    """The verdict of a saved audit recomputed from its stages (findings, not-checked reasons,
    failures) by the pipeline's own :func:`~auditor.model.compute_verdict`; a stored verdict that
    differs is replaced, and the difference is the first reason."""
    stages = [audit.stages[n] for n in STAGES if n in audit.stages]
    verdict, reasons = compute_verdict(stages)
    if verdict is audit.verdict:
        return Recomputed(audit, None)
    fixed = Recomputed(replace(audit, verdict=verdict), audit.verdict)
    return Recomputed(replace(fixed.audit, reasons=(str(fixed.note), *reasons)), audit.verdict)


def write_reports(audit: AuditResult, out_dir: Path, ctx: Context | None = None) -> None:
    """report.md, report.html and findings.sarif into ``out_dir``, made from the redacted audit."""
    clean = redacted(audit)
    for fmt in formatters():
        write_audit_file(out_dir / fmt.filename, fmt.render(clean))


def load_audit(path: Path) -> AuditResult:
    """A saved audit.json, checked against its schema; a bad file is an InputError naming it
    (exit 2). The one loader is :func:`auditor.results.audit_file.load_audit`."""
    from auditor.results.audit_file import load_audit as load

    return load(path)


def load_saved(path: Path) -> Recomputed:
    """A saved audit for re-rendering: loaded, verdict recomputed, every string redacted."""
    checked = recompute_verdict(load_audit(path))
    return Recomputed(redacted(checked.audit), checked.stored)


def check_signed(path: Path, key: Path | None = None) -> str | None:
    """A saved audit.json against its signed companion (``vsa.intoto.jsonl`` beside it), before
    it is rendered: a companion that no longer matches is a failed verification (exit 1); the
    line returned says what was checked; None when nothing beside it was signed."""
    from auditor.attest.companion import Companion, check_companion
    from auditor.attest.keys import load_verifying_key
    from auditor.attest.verify import VerificationError

    public = load_verifying_key(key) if key is not None else None
    signed = check_companion(path, public)
    if signed.state is Companion.BROKEN:
        raise VerificationError(signed.message, hint="render the audit.json that was signed, "
                                "or audit again")
    return None if signed.state is Companion.ABSENT else signed.message


def render_saved(path: Path, fmt: ReportFormat) -> str:
    """One format of a saved audit (``auditor report``): made from audit.json, nothing re-run,
    the verdict recomputed (see :func:`recompute_verdict`)."""
    return formatter_for(fmt).render(load_saved(path).audit)


__all__ = ["AUDIT_FORMATS", "Formatter", "Recomputed", "RedactedAudit", "ReportFormat",
           "check_signed",
           "formatter_for",
           "formatters", "load_audit", "load_saved", "recompute_verdict", "redacted",
           "render_saved", "write_reports"]
