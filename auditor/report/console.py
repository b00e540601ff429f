"""What the terminal shows: a one-screen summary of an audit, or of one stage.

Every untrusted string goes through :func:`~auditor.textsafe.console_safe`: redacted, every control
or format character (newline, CR, ESC, BEL, OSC 8 hyperlinks, bidi overrides, zero-width
characters) made a visible escape so it stays on its own line, and its rich markup escaped.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from auditor.model import (
    AuditResult,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    compute_verdict,
)
from auditor.report.view import Counts, StageLine, build_view, clean_finding, short
from auditor.textsafe import console_safe

_COLOURS = {"PASS": "green", "REVIEW": "yellow", "FAIL": "red", "INCOMPLETE": "magenta",
            "ok": "green", "failed": "red", "incomplete": "magenta", "not-requested": "dim",
            "block": "red", "review": "yellow", "info": "blue", "waived": "dim"}
#: findings listed per stage or summary before "… and N more"
MAX_FINDINGS = 20


def safe(text: object) -> str:
    """The console boundary for untrusted text (see :func:`auditor.textsafe.console_safe`)."""
    return console_safe(text)


def location(f: Finding) -> str:
    """``path:line``, or the path alone when the finding has no line (a binary, a whole file)."""
    return safe(f.path or "(no file)") + (f":{f.line}" if f.line >= 1 else "")


def finding_line(f: Finding) -> str:
    """One finding on one line (markup in it is the console's own; its text is made safe)."""
    state = "waived" if f.waived else f.action.value
    # which commit brought it: a series commit, upstream code, or nothing to say (a unit file,
    # a dependency, the audit itself)
    where = short(f.commit) if f.commit else "upstream" if f.inherited else None
    label = f" ({safe(where)})" if where else ""
    return (f"  [{_COLOURS[state]}]{state:<6}[/] {safe(f.category.value)} {location(f)}{label} "
            f"{safe(f.message)}")


def _findings(console: Console, findings: list[Finding], limit: int = MAX_FINDINGS) -> None:
    ranked = sorted(findings, key=lambda f: (f.waived, ("block", "review", "info")
                                             .index(f.action.value), f.path, f.line))
    for f in ranked[:limit]:
        console.print(finding_line(f))
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


#: the summary's height at most (one screen), and what it lists before "… and K more — see
#: report.md"
SCREEN = 40
SUMMARY_BLOCKING = 10
SUMMARY_NOT_CHECKED = 6
SUMMARY_FAILED = 4
#: a stage's status word on its row: "ran" when it ran to the end (its counts follow), whatever it
#: found — "ok" beside blocking findings would read as "nothing wrong"
_STAGE_WORD = {StageStatus.OK: "ran", StageStatus.FAILED: "FAILED",
               StageStatus.INCOMPLETE: "incomplete", StageStatus.NOT_REQUESTED: "not requested"}


def stage_done(result: StageResult) -> str:
    """The progress line's word for a stage that has run: ``ran (1 block, 1 review)``,
    ``incomplete (…)`` or ``FAILED (…)`` — never "ok" beside findings."""
    colour = {"ok": "green", "failed": "red", "incomplete": "yellow"}.get(result.status.value, "")
    word = _STAGE_WORD[result.status]
    counts = Counts.of(result.findings)
    extra = f" ({counts.words()})" if counts.total else ""
    return f"[{colour}]{word}[/{colour}]{extra}" if colour else word + extra


def _stage_row(line: StageLine) -> str:
    word = _STAGE_WORD[line.status]
    c = _COLOURS.get(line.status.value, "")
    counts = line.counts.words() if line.counts.total else "no findings"
    if line.status is StageStatus.NOT_REQUESTED:
        what = "by the spec"
    elif line.status is StageStatus.OK:
        what = f"{counts} · {line.summary.removesuffix(f'; findings: {line.counts.words()}')}"
    else:  # why is in the failed / not checked lists above
        what = f"{counts} · see above"
    return f"  {line.name:<7} [{c}]{word:<13}[/{c}] {safe(what)}"


def _more(left: int, what: str) -> str:
    return f"  … and {left} more {what} — see report.md"


def _one(console: Console, markup: str) -> list[Text]:
    """A line cut with an ellipsis at the terminal's width (whole in a CI log)."""
    text = Text.from_markup(markup)
    if not console.soft_wrap:
        text.truncate(console.width, overflow="ellipsis")
    return [text]


def _wrapped(console: Console, markup: str, max_lines: int | None = None) -> list[Text]:
    """A paragraph as the terminal shows it, continuation lines indented, at most ``max_lines``
    lines (the last cut with an ellipsis); one line in a CI log."""
    text = Text.from_markup(markup)
    if console.soft_wrap:
        return [text]
    indent = 4 if console.width > 20 else 0
    lines = list(text.wrap(console, console.width - indent))
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1].rstrip()
        lines[-1].truncate(console.width - indent - 1)
        lines[-1].append("…")
    for line in lines[1:]:
        line.rstrip()
        line.pad_left(indent)
    return lines


def print_summary(console: Console, audit: AuditResult, out: Path) -> None:
    """One screen (at most :data:`SCREEN` lines, on 80 columns too): the verdict, the counts by
    action, why a stage failed, the blocking findings (the most severe first, then how many more),
    what was not checked, a row per stage, where the reports are. On a terminal every line is cut
    or capped to keep to the screen; report.md has everything."""
    from auditor.attest.sign import signed_lines

    view = build_view(audit)
    colour = _COLOURS[audit.verdict.value]
    by_action = Counts.of(view.findings)
    dirty = [cv for cv in view.commits if cv.counts.total]
    parts = [f"{by_action.block} block", f"{by_action.review} review", f"{by_action.info} info"]
    if by_action.waived:
        parts.append(f"{by_action.waived} waived")
    parts.append(f"{len(view.not_checked)} not checked")
    if view.commits:
        parts.append(f"{len(dirty)} of {len(view.commits)} commit(s) with findings")
    head = _one(console, "  " + " · ".join(parts))
    failed = [(line.name, p) for line in view.stages if line.status is StageStatus.FAILED
              for p in line.problems if not p.startswith("not checked: ")]
    for name, why in failed[:SUMMARY_FAILED]:
        head += _wrapped(console, f"  [red]✗[/red] {safe(name)} failed: {safe(why)}", 2)
    if len(failed) > SUMMARY_FAILED:
        head += _one(console, _more(len(failed) - SUMMARY_FAILED, "failure reason(s)"))
    blocking = sorted((f for f in view.findings if f.counts and f.action.value == "block"),
                      key=lambda f: (list(Severity).index(f.severity), f.path, f.line, f.rule))
    gaps = [_wrapped(console, f"  [magenta]![/magenta] {safe(x)}", 3)
            for x in view.not_checked[:SUMMARY_NOT_CHECKED]]
    tail = _one(console, "stages:")
    tail += [t for line in view.stages for t in _one(console, _stage_row(line))]
    tail += _wrapped(console, f"reports in [bold]{safe(out)}[/bold]: report.md (every finding), "
                              "report.html, findings.sarif, audit.json")
    signed = signed_lines(audit.tool) or []
    for i, entry in enumerate(signed):
        mark = ("[green]" if len(signed) > 1 else "[yellow]") + safe(entry) + "[/]"
        tail += _wrapped(console, mark if i == 0 else f"  {safe(entry)}", 2)
    # what is left of the screen goes to the blocking findings (a line each) and the gaps
    # (two lines are kept for what a caller adds below, such as the demo's note)
    room = SCREEN - 3 - len(head) - len(tail) - 2 * bool(blocking) - 2 * bool(gaps)
    first_gaps = sum(len(g) for g in gaps[:2])
    n_block = max(min(3, len(blocking)), min(len(blocking), SUMMARY_BLOCKING, room - first_gaps))
    room -= n_block
    shown_gaps: list[list[Text]] = []
    for g in gaps:
        if shown_gaps and len(g) > room:
            break
        shown_gaps.append(g)
        room -= len(g)

    console.rule(f"[{colour}]verdict: {audit.verdict.value}[/{colour}]")
    body = list(head)
    if blocking:
        body += _one(console, f"[bold red]blocking findings[/bold red] ({len(blocking)}):")
        body += [t for f in blocking[:n_block] for t in _one(console, finding_line(f))]
        if len(blocking) > n_block:
            body += _one(console, _more(len(blocking) - n_block, "blocking finding(s)"))
    if view.not_checked:
        body += _one(console, "[bold magenta]not checked[/bold magenta] (nothing here is "
                              "reported clean):")
        body += [t for g in shown_gaps for t in g]
        if len(view.not_checked) > len(shown_gaps):
            body += _one(console, _more(len(view.not_checked) - len(shown_gaps), "not checked"))
    for text in body + tail:
        console.print(text, no_wrap=True, overflow="ignore", crop=False)
