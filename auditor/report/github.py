"""GitHub Actions output: workflow-command annotations for the log, and a step summary.

Annotations (``::error file=…,line=…,title=…::message``) are one line each; their text is redacted,
control bytes are made visible and the command syntax is escaped as the Actions runner expects
(``%``, CR and LF in the message; also ``:`` and ``,`` in properties), so a path or a message from
the bundle can never end the command early or start a new one. The step summary is report.md's
content, written for ``$GITHUB_STEP_SUMMARY``.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.model import Action, AuditResult, Finding, Verdict
from auditor.report.interface import Formatter
from auditor.report.markdown import render_view
from auditor.report.view import build_view, short
from auditor.textsafe import document_safe, redact

COMMAND = {Action.BLOCK: "error", Action.REVIEW: "warning", Action.INFO: "notice"}
VERDICT_COMMAND = {Verdict.PASS: "notice", Verdict.REVIEW: "warning", Verdict.FAIL: "error",
                   Verdict.INCOMPLETE: "error"}


def escape_data(text: str) -> str:
    out = document_safe(redact(text))
    return out.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props: str | int | None) -> str:
    parts = [f"{k}={escape_property(str(v))}" for k, v in props.items() if v not in (None, "")]
    head = f"::{kind} " + ",".join(parts) if parts else f"::{kind}"
    return f"{head}::{escape_data(message)}"


def finding_annotation(f: Finding) -> str:
    kind = "notice" if f.waived else COMMAND[f.action]
    where = f"commit {short(f.commit)}" if f.commit else "upstream code"
    text = f"{f.message} [{f.rule}; {where}]"
    if f.waived:
        text += f" (waived: {f.waiver or 'no reason given'})"
    title = f"{'waived' if f.waived else f.action.value}: {f.category.value}"
    line = f.line if f.line >= 1 else None
    end = f.end_line if line and f.end_line and f.end_line >= f.line else None
    return command(kind, text, file=f.path or None, line=line, endLine=end, title=title)


def workflow_commands(audit: AuditResult) -> list[str]:
    """The verdict, what was not checked, then every finding (blocking first)."""
    view = build_view(audit)
    out = [command(VERDICT_COMMAND[audit.verdict], "; ".join(view.reasons) or audit.verdict.value,
                   title=f"auditor verdict: {audit.verdict.value}")]
    out += [command("error", x, title="not checked") for x in view.not_checked]
    order = {Action.BLOCK: 0, Action.REVIEW: 1, Action.INFO: 2}
    ranked: Iterable[Finding] = sorted(view.findings,
                                       key=lambda f: (f.waived, order[f.action], f.path, f.line))
    out += [finding_annotation(f) for f in ranked]
    return out


def step_summary(audit: AuditResult) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY`` (the same content as report.md)."""
    return render_view(build_view(audit), heading="##")


class GithubAnnotations(Formatter):
    filename = "github-annotations.txt"

    def render(self, audit: AuditResult) -> str:
        return "\n".join(workflow_commands(audit)) + "\n"
