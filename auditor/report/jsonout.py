"""audit.json: the whole audit (schema ``auditor/audit/v1``), exactly :meth:`AuditResult.to_json`.

The pipeline writes it; this formatter exists so that ``audit.json`` can be re-rendered like the
other formats. JSON escaping makes every string inert; snippets keep their text verbatim except that
secrets are redacted.
"""

from __future__ import annotations

import json
from dataclasses import replace

from auditor.model import AuditResult
from auditor.report.interface import Formatter
from auditor.report.view import clean_finding


def redacted(audit: AuditResult) -> AuditResult:
    """The same audit with every finding's free text redacted."""
    stages = {name: replace(st, findings=tuple(clean_finding(f) for f in st.findings))
              for name, st in audit.stages.items()}
    return replace(audit, stages=stages)


class JsonFormatter(Formatter):
    filename = "audit.json"

    def render(self, audit: AuditResult) -> str:
        return json.dumps(redacted(audit).to_json(), indent=2, ensure_ascii=False) + "\n"
