"""The Formatter interface: one audit result in, one document out; and the redacted audit every
format reads.

Secrets are redacted once, where an audit becomes a report: :func:`redacted` passes every string
of the audit (keys too) through :func:`~auditor.redaction.redact_tree` and gives a
:class:`RedactedAudit`; :meth:`Formatter.render` and :func:`~auditor.report.view.build_view` take
an audit through it (a :class:`RedactedAudit` is not redacted again), so the view and the formats
only escape. A rendering is :class:`~auditor.redaction.Redacted`: what the writers take.

The choice of formats and the factory live in :mod:`auditor.report.formats`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import ClassVar

from auditor.model import AuditResult, StageResult
from auditor.redaction import Redacted, from_redacted, redact_tree


@dataclasses.dataclass(frozen=True)
class RedactedAudit(AuditResult):
    """An :class:`~auditor.model.AuditResult` every string of which was redacted (made only by
    :func:`redacted`)."""


def redacted_stage(result: StageResult) -> StageResult:
    """One stage's result with every string in it redacted: what a document of one stage
    (``auditor scan --sarif``) is made from, as a report is made from :func:`redacted`."""
    return StageResult.from_json(result.name, redact_tree(result.to_json()))


def redacted(audit: AuditResult) -> RedactedAudit:
    """The audit with every string in it (keys too) redacted: the one pass each format reads."""
    if isinstance(audit, RedactedAudit):
        return audit
    clean = AuditResult.from_json(redact_tree(audit.to_json()))
    return RedactedAudit(**{f.name: getattr(clean, f.name)
                            for f in dataclasses.fields(AuditResult)})


class Formatter(ABC):
    #: file name inside the audit directory
    filename: ClassVar[str]

    def render(self, audit: AuditResult) -> Redacted:
        """The whole document as text, made from the redacted audit; untrusted strings escaped
        for this format."""
        return from_redacted(self.document(redacted(audit)))

    @abstractmethod
    def document(self, audit: RedactedAudit) -> str:
        """The document of an already redacted audit (escaping is the format's own)."""
