"""The gate's outputs: gate.md (a pull-request comment), gate.json, and the range-diff on stderr.

A gate result is made of the two audits redacted (:func:`~auditor.gate.result.decide`), so
like the reports every untrusted string (subjects, paths, messages) is only escaped for its
target: Markdown via :func:`auditor.report.markdown.md`, the terminal via
:func:`auditor.report.console.safe` (which redacts too: the console's one boundary).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from auditor.gate.compare import DepsDiff, decl_text
from auditor.gate.match import CommitMatch, MatchKind, counts
from auditor.gate.result import GateResult
from auditor.model import Finding
from auditor.redaction import Redacted, from_redacted
from auditor.report.console import finding_line, safe
from auditor.report.markdown import VERDICT_MARK, code, finding_row, md, table
from auditor.report.view import clean_finding, short, vulnerabilities
from auditor.textsafe import dump_json

_COLOUR = {MatchKind.UNCHANGED: "green", MatchKind.CHANGED: "yellow", MatchKind.ADDED: "cyan",
           MatchKind.DROPPED: "red"}


def gate_json(g: GateResult) -> Redacted:
    return dump_json(g.to_json())


def _side(e: Any) -> tuple[str, str]:
    return (str(e.index), short(e.sha, 7)) if e is not None else ("-", "-------")


def _subject(m: CommitMatch) -> str:
    side = m.new or m.old
    return side.subject if side is not None else ""


def range_diff_lines(series: Sequence[CommitMatch]) -> list[tuple[CommitMatch, str]]:
    """``git range-diff``-style lines: ``1: abc1234 = 1: def5678 subject`` (text, unescaped)."""
    width = max((len(str(e.index)) for m in series for e in (m.old, m.new) if e), default=1)
    out = []
    for m in series:
        (oi, osha), (ni, nsha) = _side(m.old), _side(m.new)
        subject = _subject(m)
        text = f"{oi:>{width}}: {osha} {m.kind.mark} {ni:>{width}}: {nsha} {subject}"
        if m.subject_changed and m.old is not None:
            text += f"  (was: {m.old.subject})"
        out.append((m, text))
    return out


def print_gate(console: Console, g: GateResult) -> None:
    colour = {"PASS": "green", "REVIEW": "yellow", "FAIL": "red", "INCOMPLETE": "magenta"}
    c = counts(g.series)
    console.rule(f"range-diff against the baseline: {c['unchanged']} unchanged, {c['changed']} "
                 f"changed, {c['added']} new, {c['dropped']} dropped")
    for m, text in range_diff_lines(g.series):
        console.print(f"[{_COLOUR[m.kind]}]{safe(text)}[/]")
    if not g.series_known:
        console.print("[magenta]the series could not be compared (a side recorded no commits)[/]")
    console.print(f"findings: {len(g.findings.new)} new, {len(g.findings.carried)} carried as "
                  f"reviewed, {len(g.findings.resolved)} gone since the baseline")
    for f in sorted(g.findings.new, key=lambda f: (f.waived, f.action.value, f.path))[:20]:
        console.print("  new" + finding_line(clean_finding(f)))
    if len(g.findings.new) > 20:
        console.print(f"  … and {len(g.findings.new) - 20} more in gate.md")
    d = g.deps
    if not d.empty:
        console.print(f"dependencies since the baseline: {len(d.added)} added, {len(d.removed)} "
                      f"removed, {len(d.changed)} changed, {len(d.vulnerabilities)} new "
                      "vulnerabilit(ies)")
    v = g.verdict.value
    console.rule(f"[{colour[v]}]gate verdict: {v}[/{colour[v]}]")
    for r in g.reasons[:12]:
        console.print(f"  • {safe(r)}")


def _findings_of(g: GateResult, m: CommitMatch) -> tuple[list[Finding], list[Finding]]:
    sha = m.new.sha if m.new else None
    new = [f for f in g.findings.new if sha is not None and f.commit == sha]
    carried = [f for f in g.findings.carried if sha is not None and f.commit == sha]
    return new, carried


def gate_markdown(g: GateResult) -> Redacted:
    """gate.md, made of the gate result's values (of the two audits redacted by :func:`decide`)."""
    return from_redacted(_gate_markdown(g))


def _gate_markdown(g: GateResult) -> str:
    out = [f"# {VERDICT_MARK[g.verdict]} Upgrade gate: **{g.verdict.value}**", ""]
    b = g.to_json()["baseline"]
    a = g.to_json()["audit"]
    out.append(f"Baseline {md(b['upstream']['ref'] or '?')} ({md(b['verdict'])}) → "
               f"{md(a['upstream']['ref'] or '?')} ({md(a['verdict'])} on its own)")
    out.append("")
    out += [f"- {md(r)}" for r in g.reasons]
    out.append("")
    out += _series_section(g)
    out += _findings_sections(g)
    if g.not_checked.carried:
        out += ["## Not checked, accepted in the baseline", ""]
        out += [f"- {md(stage)}: {md(r)}" for stage, r in g.not_checked.carried[:200]]
        out.append("")
    out += _deps_section(g.deps)
    out.append("")
    out.append("The full audit of the new version is in report.md / report.html next to this file.")
    return "\n".join(out) + "\n"


_REVIEW = {MatchKind.UNCHANGED: "kept: reviewed in the baseline",
           MatchKind.CHANGED: "**review again**: the patch changed",
           MatchKind.ADDED: "**review**: new commit",
           MatchKind.DROPPED: "dropped"}


def _series_section(g: GateResult) -> list[str]:
    out = ["## Series (range-diff)", ""]
    if not g.series:
        return [*out, "No series commits on either side.", ""]
    rows = []
    for m in g.series:
        new, carried = _findings_of(g, m)
        review = _REVIEW[m.kind]
        if m.subject_changed and m.old is not None:
            review += f" (subject was: {md(m.old.subject)})"
        rows.append([
            f"{m.old.index}: {code(short(m.old.sha))}" if m.old else "—",
            m.kind.mark.replace(">", "\\>").replace("<", "\\<"),
            f"{m.new.index}: {code(short(m.new.sha))}" if m.new else "—",
            md(_subject(m)),
            review,
            f"{len(new)} new, {len(carried)} carried" if m.new else "—",
        ])
    out += table(["old", "", "new", "subject", "review", "findings"], rows, limit=300,
                 more="in gate.json")
    out.append("")
    return out


_FINDING_COLUMNS = ["action", "severity", "category", "location", "commit", "rule", "message"]


def _findings_sections(g: GateResult) -> list[str]:
    out: list[str] = []
    for title, findings, always in (("New findings (these count)", g.findings.new, True),
                                    ("Carried from the baseline (already reviewed)",
                                     g.findings.carried, True),
                                    ("Gone since the baseline", g.findings.resolved, False)):
        if not findings and not always:
            continue
        out += [f"## {title}", ""]
        if findings:
            out += table(_FINDING_COLUMNS, (finding_row(clean_finding(f)) for f in findings),
                         more="in gate.json")
        else:
            out.append("None.")
        out.append("")
    return out


def _deps_section(d: DepsDiff) -> list[str]:
    out = ["## Dependencies since the baseline", ""]
    if not d.compared:
        out.append("Not compared: the dependency stage did not produce data in both audits.")
        if not d.empty:
            out.append("")
    if not d.compared and d.empty:
        return out
    for label, items in (("added", [decl_text(x) for x in d.added]),
                         ("removed", [decl_text(x) for x in d.removed]),
                         ("changed", [str(c.get("name", "")) for c in d.changed])):
        out.append(f"- newly {label}: " + (", ".join(md(x) for x in items) or "none"))
    vulns = vulnerabilities(d.vulnerabilities)
    if vulns:
        out.append("")
        out += table(["id", "package", "version", "fixed in", "severity"],
                     ([md(x.id), md(x.package), md(x.version), md(x.fixed), md(x.severity)]
                      for x in vulns))
    else:
        out.append("- new known vulnerabilities: none")
    return out
