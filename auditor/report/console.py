"""What the terminal shows: a one-screen summary of an audit, or of one stage.

Every untrusted string goes through :func:`~auditor.textsafe.console_safe`: redacted, every control
or format character (newline, CR, ESC, BEL, OSC 8 hyperlinks, bidi overrides, zero-width
characters) made a visible escape so it stays on its own line, and its rich markup escaped.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from auditor.model import AuditResult, Finding, StageResult, StageStatus, compute_verdict
from auditor.report.view import build_view, clean_finding, short
from auditor.textsafe import console_safe

_COLOURS = {"PASS": "green", "REVIEW": "yellow", "FAIL": "red", "INCOMPLETE": "magenta",
            "ok": "green", "failed": "red", "incomplete": "magenta", "not-requested": "dim",
            "block": "red", "review": "yellow", "info": "blue", "waived": "dim"}
#: findings listed per stage or summary before "… and N more"
MAX_FINDINGS = 20


def safe(text: object) -> str:
    """The console boundary for untrusted text (see :func:`auditor.textsafe.console_safe`)."""
    return console_safe(text)


def _finding_line(f: Finding) -> str:
    state = "waived" if f.waived else f.action.value
    # which commit brought it: a series commit, upstream code, or nothing to say (a unit file,
    # a dependency, the audit itself)
    where = short(f.commit) if f.commit else "upstream" if f.inherited else None
    loc = safe(f.path or "(no file)") + (f":{f.line}" if f.line >= 1 else "")
    label = f" ({safe(where)})" if where else ""
    return f"  [{_COLOURS[state]}]{state:<6}[/] {safe(f.category.value)} {loc}{label} {safe(f.message)}"


def _findings(console: Console, findings: list[Finding], limit: int = MAX_FINDINGS) -> None:
    ranked = sorted(findings, key=lambda f: (f.waived, ("block", "review", "info")
                                             .index(f.action.value), f.path, f.line))
    for f in ranked[:limit]:
        console.print(_finding_line(f))
    if len(ranked) > limit:
        console.print(f"  … and {len(ranked) - limit} more")


def print_stage(console: Console, result: StageResult) -> None:
    """The stage's verdict first (what its exit code says), then why, then its findings."""
    verdict, _ = compute_verdict([result])
    colour = _COLOURS[verdict.value]
    counted = [f for f in result.findings if f.counts]
    counts = ", ".join(f"{n} {word}" for n, word in (
        (sum(f.action.value == "block" for f in counted), "blocking"),
        (sum(f.action.value == "review" for f in counted), "to review")) if n)
    said = {StageStatus.FAILED: "FAIL", StageStatus.INCOMPLETE: "INCOMPLETE"}.get(result.status)
    ran = f"checks {result.status.value}" if said and said != verdict.value else ""
    tail = "; ".join(x for x in (counts, ran) if x)
    console.print(f"[bold]{result.name}[/bold]: [{colour}]{verdict.value}[/{colour}]"
                  + (f" ({tail})" if tail else ""))
    for r in result.reasons:
        console.print(f"  [red]✗[/red] {safe(r)}")
    for r in result.not_checked:
        console.print(f"  [magenta]not checked:[/magenta] {safe(r)}")
    _findings(console, [clean_finding(f) for f in result.findings])


def print_summary(console: Console, audit: AuditResult, out: Path) -> None:
    view = build_view(audit)
    colour = _COLOURS[audit.verdict.value]
    console.rule(f"[{colour}]verdict: {audit.verdict.value}[/{colour}]")
    for r in view.reasons[:12]:
        console.print(f"  • {safe(r)}")
    if len(view.reasons) > 12:
        console.print(f"  … and {len(view.reasons) - 12} more reasons in report.md")
    if view.not_checked:
        console.print("[bold magenta]not checked[/bold magenta] (nothing here is reported clean):")
        for x in view.not_checked[:12]:
            console.print(f"  [magenta]![/magenta] {safe(x)}")
    for line in view.stages:
        c = _COLOURS.get(line.status.value, "")
        text = line.summary if line.status is not StageStatus.NOT_REQUESTED else "not requested"
        console.print(f"  {line.name:<7} [{c}]{line.status.value:<13}[/{c}] {safe(text)}")
    dirty = [cv for cv in view.commits if cv.counts.total]
    if view.commits:
        console.print(f"series: {len(view.commits)} commit(s), {len(dirty)} with findings")
        for cv in dirty[:MAX_FINDINGS]:
            console.print(f"  {cv.index:>3}. {safe(short(cv.sha))} {safe(cv.subject[:60])} — "
                          f"{cv.counts.words()}")
    blocking = [f for f in view.findings if f.counts and f.action.value == "block"]
    if blocking:
        console.print(f"blocking findings ({len(blocking)}; all findings are in report.md):")
        _findings(console, blocking, limit=10)
    console.print(f"reports in [bold]{safe(out)}[/bold] (report.md, report.html, "
                  "findings.sarif, audit.json)")
