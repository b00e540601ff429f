"""What the terminal shows: a one-screen summary of an audit, or of one stage."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from auditor.model import AuditResult, StageResult
from auditor.textsafe import redact, terminal_safe

_COLOURS = {"PASS": "green", "REVIEW": "yellow", "FAIL": "red", "INCOMPLETE": "magenta",
            "ok": "green", "failed": "red", "incomplete": "magenta", "not-requested": "dim"}


def _safe(text: str) -> str:
    return escape(terminal_safe(redact(text)))


def print_stage(console: Console, result: StageResult) -> None:
    colour = _COLOURS.get(result.status.value, "")
    console.print(f"[bold]{result.name}[/bold]: [{colour}]{result.status.value}[/{colour}]")
    for r in result.reasons:
        console.print(f"  [red]✗[/red] {_safe(r)}")
    for r in result.not_checked:
        console.print(f"  [magenta]not checked:[/magenta] {_safe(r)}")
    counted = [f for f in result.findings if f.counts]
    for f in counted[:20]:
        sha = (f.commit or "upstream")[:10]
        console.print(f"  [{_COLOURS.get('FAIL' if f.action.value == 'block' else 'REVIEW')}]"
                      f"{f.action.value}[/] {_safe(f.category.value)} {_safe(f.path)}:{f.line} "
                      f"({sha}) {_safe(f.message)}")
    if len(counted) > 20:
        console.print(f"  … and {len(counted) - 20} more")


def print_summary(console: Console, audit: AuditResult, out: Path) -> None:
    colour = _COLOURS[audit.verdict.value]
    console.rule(f"[{colour}]verdict: {audit.verdict.value}[/{colour}]")
    for r in audit.reasons[:12]:
        console.print(f"  • {_safe(r)}")
    for name, st in audit.stages.items():
        c = _COLOURS.get(st.status.value, "")
        n = len([f for f in st.findings if f.counts])
        console.print(f"  {name:<7} [{c}]{st.status.value}[/{c}]" + (f"  {n} findings" if n else ""))
    console.print(f"reports in [bold]{escape(str(out))}[/bold] (report.md, report.html, audit.json)")
