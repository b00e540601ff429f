"""audit.json: the whole audit (schema ``auditor/audit/v1``), exactly :meth:`AuditResult.to_json`.

The pipeline writes it; this formatter exists so that ``audit.json`` can be re-rendered like the
other formats. JSON escaping makes every string inert; every string (commit subjects and
messages, snippets, paths, reasons) goes through the one redacting writer,
:func:`auditor.redaction.dump_json`.
"""

from __future__ import annotations

from auditor.report.interface import Formatter, RedactedAudit
from auditor.textsafe import dump_json


class JsonFormatter(Formatter):
    filename = "audit.json"

    def document(self, audit: RedactedAudit) -> str:
        return dump_json(audit.to_json())
