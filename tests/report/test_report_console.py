"""The terminal summary: verdict, not-checked first, one line per stage, findings; a stage alone."""

from __future__ import annotations

import io
from pathlib import Path

from reportcases import hostile_audit, rich_audit
from rich.console import Console

from auditor.report.console import print_stage, print_summary


def render(fn, *args) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    fn(Console(file=buf, width=160, force_terminal=False, highlight=False), *args)
    return buf.getvalue()


def test_report_console_summary() -> None:
    text = render(print_summary, rich_audit(), Path("audit-out"))
    assert "verdict: FAIL" in text
    for name in ("verify", "scan", "deps", "build", "sbom", "unit"):
        assert f"  {name}" in text
    assert "2 of 3 commit(s) with findings" in text
    assert "block  network engine/telemetry.py:4 (2222222222) outbound HTTP request" in text
    assert "fixed name in /tmp" not in text  # waived findings stay out of the short list
    assert "reports in audit-out" in text


def test_report_console_not_checked_before_stages() -> None:
    text = render(print_summary, hostile_audit(), Path("o"))
    assert text.index("not checked") < text.index("  verify")
    assert "deps: osv snapshot missing" in text


def test_report_console_stage() -> None:
    st = hostile_audit().stages["deps"]
    text = render(print_stage, st)
    assert text.startswith("deps: INCOMPLETE\n")
    assert "not checked: osv snapshot missing" in text
    text = render(print_stage, rich_audit().stages["scan"])
    assert text.count("\n") == 1 + len(rich_audit().stages["scan"].findings)


def test_no_hard_wrapping_without_a_terminal(capsys) -> None:  # type: ignore[no-untyped-def]
    """In a CI log (stderr is not a terminal) a long finding line stays one line."""
    from auditor.stage import stderr_console

    line = "block  dependency " + "docker/" * 30 + "Dockerfile:380 (931f693a35) Adds the package source"
    stderr_console().print(line)
    assert capsys.readouterr().err == line + "\n"
