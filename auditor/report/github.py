"""GitHub Actions output: workflow-command annotations for the log, and a step summary.

Annotations (``::error file=…,line=…,title=…::message``) are one line each; their text is redacted,
control bytes are made visible and the command syntax is escaped as the Actions runner expects
(``%``, CR and LF in the message; also ``:`` and ``,`` in properties), so a path or a message from
the bundle can never end the command early or start a new one. The step summary is report.md's
content, written for ``$GITHUB_STEP_SUMMARY``.

GitHub shows at most 10 annotations of each level (error, warning, notice) per step, so at most
:data:`PER_LEVEL` of each are written, the most important first (the verdict, what was not checked,
then findings by action and severity), and a last notice gives the counts and where the rest is:
report.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from auditor.model import Action, AuditResult, Finding, Severity, Verdict
from auditor.redaction import Redacted, from_redacted
from auditor.report.interface import Formatter, RedactedAudit
from auditor.report.markdown import render_view
from auditor.report.view import UnsignedArea, build_view, origin_words
from auditor.textsafe import document_safe

COMMAND = {Action.BLOCK: "error", Action.REVIEW: "warning", Action.INFO: "notice"}
#: annotations of one level GitHub shows per step
PER_LEVEL = 10
_ORDER = {Action.BLOCK: 0, Action.REVIEW: 1, Action.INFO: 2}
_SEVERITY = {s: n for n, s in enumerate(Severity)}  # critical first
VERDICT_COMMAND = {Verdict.PASS: "notice", Verdict.REVIEW: "warning", Verdict.FAIL: "error",
                   Verdict.INCOMPLETE: "error"}


def escape_data(text: str) -> str:
    out = document_safe(text)  # of the view, which is of the redacted audit
    return out.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props: str | int | None) -> str:
    parts = [f"{k}={escape_property(str(v))}" for k, v in props.items() if v not in (None, "")]
    head = f"::{kind} " + ",".join(parts) if parts else f"::{kind}"
    return f"{head}::{escape_data(message)}"


def where_from(f: Finding) -> str:
    """Which code a finding is about, in words (never "upstream" for what is not upstream's)."""
    return origin_words(f)


#: unreviewed hunks named in one review.unsigned annotation
HUNKS_NAMED = 8


def finding_annotation(f: Finding, unsigned: UnsignedArea | None = None) -> str:
    kind = "notice" if f.waived else COMMAND[f.action]
    if unsigned is not None:  # hunks in several files: an annotation of no one file
        named = ", ".join(h.where for h in unsigned.hunks[:HUNKS_NAMED])
        more = len(unsigned.hunks) - HUNKS_NAMED
        text = (f"{unsigned.words()} of {unsigned.title} not signed off ([review] required): "
                f"{named}{f' and {more} more' if more > 0 else ''} [{f.rule}; {where_from(f)}]")
        if f.waived:
            text += f" (waived: {f.waiver or 'no reason given'})"
        return command(kind, text, title=f"{'waived' if f.waived else f.action.value}: "
                                         "unreviewed hunks")
    text = f"{f.message} [{f.rule}; {where_from(f)}]"
    if f.also:
        text += f" (also {', '.join(f.also)}: a waiver of this finding covers them)"
    if f.waived:
        text += f" (waived: {f.waiver or 'no reason given'})"
    title = f"{'waived' if f.waived else f.action.value}: {f.category.value}"
    line = f.line if f.line >= 1 else None
    end = f.end_line if line and f.end_line and f.end_line >= f.line else None
    return command(kind, text, file=f.path or None, line=line, endLine=end, title=title)


def _level(line: str) -> str:
    return line[2:].split(" ", 1)[0].split("::", 1)[0]


def workflow_commands(audit: AuditResult, report_md: str = "report.md") -> list[str]:
    """The verdict, what was not checked, then the findings (blocking first, by severity): at
    most :data:`PER_LEVEL` of each level, then one notice with the counts and ``report_md``."""
    view = build_view(audit)
    wanted = [command(VERDICT_COMMAND[audit.verdict], "; ".join(view.reasons) or audit.verdict.value,
                      title=f"auditor verdict: {audit.verdict.value}")]
    wanted += [command("error", x, title="not checked") for x in view.not_checked]
    ranked: Iterable[Finding] = sorted(
        view.findings, key=lambda f: (f.waived, _ORDER[f.action], _SEVERITY[f.severity], f.path,
                                      f.line, f.rule))
    wanted += [finding_annotation(f, view.unsigned_of(f)) for f in ranked]
    shown: list[str] = []
    total: dict[str, int] = {}
    kept: dict[str, int] = {}
    for line in wanted:
        level = _level(line)
        total[level] = total.get(level, 0) + 1
        cap = PER_LEVEL - 1 if level == "notice" else PER_LEVEL  # the summary is a notice
        if kept.get(level, 0) < cap:
            kept[level] = kept.get(level, 0) + 1
            shown.append(line)
    c = view.counts
    parts = [f"{kept.get(k, 0)} of {total[k]} {k}s" for k in ("error", "warning", "notice")
             if k in total]
    shown.append(command(
        "notice",
        f"findings: {c.block} block, {c.review} review, {c.info} info, {c.waived} waived; "
        f"not checked: {len(view.not_checked)}; annotations shown: {', '.join(parts)} "
        f"(GitHub shows {PER_LEVEL} of each level per step); every finding is in {report_md}",
        title=f"auditor: {audit.verdict.value}, the full report is {report_md}"))
    return shown


def report_md_beside(audit_json: Path) -> str:
    """The report.md next to a saved audit.json, as the user named the folder (a relative path
    stays relative; an absolute one is shown relative to the working folder when it is inside
    it, else by its name alone: no absolute path of the machine in the output)."""
    path = audit_json.with_name("report.md")
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return path.name
    return path.as_posix()


def annotations_text(audit: AuditResult, report_md: str = "report.md") -> Redacted:
    """The workflow commands as text (made from the view, which is of the redacted audit)."""
    return from_redacted("\n".join(workflow_commands(audit, report_md)) + "\n")


def step_summary(audit: AuditResult) -> Redacted:
    """Markdown for ``$GITHUB_STEP_SUMMARY`` (the same content as report.md)."""
    return from_redacted(render_view(build_view(audit), heading="##"))


class GithubAnnotations(Formatter):
    filename = "github-annotations.txt"

    def document(self, audit: RedactedAudit) -> str:
        return annotations_text(audit)
