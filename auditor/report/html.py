"""report.html: one self-contained page (inline CSS and JS, no external assets, printable).

The same content as report.md, plus count tiles at the top, a per-commit view of the series (diff
stats, findings), every finding as a card with its severity and its lines shown as a diff with the
context the scan recorded (lines the series added marked ``+``, the flagged ones highlighted), and
relative links to the files the audit wrote beside the page (SBOM, provenance, unit, wheel). A
small inline script filters the cards by category, action and commit; without it every card is
simply shown. A Content Security Policy forbids any load from outside the file and allows only
the one inline script, by hash. Untrusted text is escaped by jinja2's autoescape after control
bytes are made visible.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, StrictUndefined

from auditor.model import Category, Finding
from auditor.report.html_template import SCRIPT, STYLE, TEMPLATE
from auditor.report.interface import Formatter, RedactedAudit
from auditor.report.view import (
    ReportView,
    as_list,
    as_map,
    as_text,
    build_view,
    decl_text,
    dep_text,
    diff_details,
    exposure_text,
    finding_state,
    module_groups,
    origin_counts,
    origin_words,
    reproducible_word,
    short,
    snippet_lines,
    stats_text,
    vulnerabilities,
)
from auditor.textsafe import document_safe


def _t(value: Any) -> str:
    """Untrusted text (of the redacted audit) with control bytes visible (autoescape does the
    HTML)."""
    return document_safe(as_text(value))


@dataclass(frozen=True)
class Tile:
    label: str
    value: str
    kind: str  # css class suffix: block, review, notchecked, commits
    href: str  # the section it sums up


def tiles(v: ReportView) -> list[Tile]:
    """The counts at the top: blocking and to-review findings (not waived), requested checks that
    did not run, and series commits with findings."""
    dirty = sum(1 for c in v.commits if c.findings)
    return [Tile("block", str(v.counts.block), "block", "#findings"),
            Tile("review", str(v.counts.review), "review", "#findings"),
            Tile("not checked", str(len(v.not_checked)), "notchecked", "#not-checked"),
            Tile("commits with findings", f"{dirty} of {len(v.commits)}", "commits", "#series")]


@dataclass(frozen=True)
class DiffRow:
    line: int  # 0 when unknown
    mark: str  # "+" a line the series added, " " context it left as it was, "" origin unknown
    text: str
    flagged: bool  # one of the finding's own lines


def diff_rows(f: Finding) -> list[DiffRow]:
    """The finding's lines as a diff: its recorded context (the flagged lines and 3 around
    them, each marked added or not), else its snippet alone with the origin unknown."""
    if not f.context:
        return [DiffRow(n, "", text, hl) for n, text, hl in snippet_lines(f)]
    end = f.end_line if f.end_line and f.end_line >= f.line else f.line
    return [DiffRow(c.line, "+" if c.added else " ", c.text.rstrip("\r"),
                    f.line <= c.line <= end) for c in f.context]


@dataclass(frozen=True)
class Artifact:
    label: str
    name: str
    href: str  # relative to the page: the file sits beside report.html in the audit directory


def _plain_name(value: Any) -> str | None:
    """A file name of the audit directory, or None for anything that is not one (a path, a
    dot file, a name with control characters): only such names become links."""
    name = as_text(value)
    if (not name or len(name) > 255 or name.startswith(".") or "/" in name or "\\" in name
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in name)):
        return None
    return name


def artifacts(v: ReportView) -> list[Artifact]:
    """The files the stages say they wrote into the audit directory, with relative links."""
    found: list[tuple[str, str | None]] = []
    sbom = v.sbom.data if v.sbom is not None else None
    if sbom is not None:
        found += [("SBOM (CycloneDX)", sbom.sbom.file if sbom.sbom else None),
                  ("provenance (in-toto)", sbom.provenance.file if sbom.provenance else None)]
    unit = v.unit.data if v.unit is not None else None
    if unit is not None:
        found += [("systemd unit", unit.unit), ("environment file example", unit.env_example)]
    build = v.build.data if v.build is not None else None
    if build is not None:
        found.append(("wheel", build.wheel.file if build.wheel else None))
    out = []
    for label, value in found:
        name = _plain_name(value)
        if name is not None:
            out.append(Artifact(label, name, quote(name, safe="")))
    return out


def _env() -> Environment:
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["t"] = _t
    env.filters["short"] = short
    env.filters["dep"] = dep_text
    env.filters["decl"] = decl_text
    env.globals.update(as_list=as_list, as_map=as_map, state=finding_state,
                       diff_rows=diff_rows, reproducible_word=reproducible_word,
                       stats_text=stats_text, diff_details=diff_details,
                       module_groups=module_groups, origin_counts=origin_counts,
                       exposure_text=exposure_text, vulnerabilities=vulnerabilities,
                       origin_words=origin_words)
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
                            script=SCRIPT, csp=csp, tiles=tiles(v), artifacts=artifacts(v))


class HtmlFormatter(Formatter):
    filename = "report.html"

    def document(self, audit: RedactedAudit) -> str:
        return render_html(build_view(audit))
