"""report.html: one self-contained page (inline CSS and JS, no external assets, printable).

The same content as report.md, plus a per-commit view of the series (diff stats, findings) and every
finding as a card with its snippet and the flagged line highlighted. A small inline script filters
the cards by category, action and commit; without it every card is simply shown. A Content Security
Policy forbids any load from outside the file and allows only the one inline script, by hash.
Untrusted text is escaped by jinja2's autoescape after control bytes are made visible.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from jinja2 import Environment, StrictUndefined

from auditor.model import AuditResult, Category
from auditor.report.html_template import SCRIPT, STYLE, TEMPLATE
from auditor.report.interface import Formatter
from auditor.report.view import (
    ReportView,
    as_list,
    as_map,
    as_text,
    build_view,
    dep_text,
    diff_details,
    exposure_text,
    finding_state,
    module_groups,
    origin_counts,
    reproducible_word,
    short,
    snippet_lines,
    stats_text,
    vulnerabilities,
)
from auditor.textsafe import document_safe, redact


def _t(value: Any) -> str:
    """Untrusted text, redacted and with control bytes visible (autoescape does the HTML)."""
    return document_safe(redact(as_text(value)))


def _env() -> Environment:
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["t"] = _t
    env.filters["short"] = short
    env.filters["dep"] = dep_text
    env.globals.update(as_list=as_list, as_map=as_map, state=finding_state,
                       snippet_lines=snippet_lines, reproducible_word=reproducible_word,
                       stats_text=stats_text, diff_details=diff_details,
                       module_groups=module_groups, origin_counts=origin_counts,
                       exposure_text=exposure_text, vulnerabilities=vulnerabilities)
    return env


_TEMPLATE = _env().from_string(TEMPLATE)


def script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def render_html(v: ReportView, *, title: str = "Audit report") -> str:
    findings = [f for _, group in v.by_category for f in group]
    anchors = {id(f): f"f{i}" for i, f in enumerate(findings, 1)}

    def anchor(f: Any) -> str:
        return anchors.get(id(f), "findings")

    commit_index = {c.sha: c.index for c in v.commits}
    categories = [c.value for c in Category if any(f.category is c for f in findings)]
    csp = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
           f"script-src '{script_hash(SCRIPT)}'; base-uri 'none'; form-action 'none'")
    return _TEMPLATE.render(v=v, page_title=title, findings=findings, anchor=anchor,
                            commit_index=commit_index, categories=categories, style=STYLE,
                            script=SCRIPT, csp=csp)


class HtmlFormatter(Formatter):
    filename = "report.html"

    def render(self, audit: AuditResult) -> str:
        return render_html(build_view(audit))
