"""Secrets are redacted at one boundary (issue 32, item 4): the writers take only a ``Redacted``
value, and a report is made from the audit redacted once (``RedactedAudit``), not field by field."""

from __future__ import annotations

from pathlib import Path

import pytest
from reportcases import rich_audit

from auditor import redaction
from auditor.model import AuditResult
from auditor.outputs import append_output_text, write_output_file, write_output_text
from auditor.redaction import Redacted, UnredactedError, dump_json, redacted_text
from auditor.report import interface
from auditor.report.interface import RedactedAudit, redacted
from auditor.report.markdown import MarkdownFormatter
from auditor.report.view import build_view

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_writer_refuses_an_unredacted_value(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    for write in (lambda t: write_output_file(target, t),  # type: ignore[arg-type]
                  lambda t: write_output_text(target, t),  # type: ignore[arg-type]
                  lambda t: append_output_text(target, t, "--summary")):  # type: ignore[arg-type]
        with pytest.raises(UnredactedError, match="not redacted"):
            write(f"token = {TOKEN}\n")
    assert not target.exists()


def test_a_writer_takes_redacted_text_and_what_is_built_from_it_again_is_not(
        tmp_path: Path) -> None:
    text = redacted_text(f"token = {TOKEN}\n")
    assert isinstance(text, Redacted) and TOKEN not in text
    write_output_text(tmp_path / "out.txt", text)
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == text
    assert redacted_text(text) is text  # not redacted twice
    with pytest.raises(UnredactedError):
        write_output_text(tmp_path / "again.txt", text + TOKEN)  # type: ignore[arg-type]
    assert isinstance(dump_json({"k": TOKEN}), Redacted) and TOKEN not in dump_json({"k": TOKEN})


def _audit_with_secret() -> AuditResult:
    a = rich_audit()
    return AuditResult(a.verdict, (f"deploy key {TOKEN}", *a.reasons), a.stages, a.tool, a.inputs)


def test_a_report_redacts_the_audit_once_and_the_view_not_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    audit = _audit_with_secret()
    calls = {"tree": 0}
    tree = redaction.redact_tree

    def count_tree(value):  # type: ignore[no-untyped-def]
        calls["tree"] += 1
        return tree(value)

    monkeypatch.setattr(interface, "redact_tree", count_tree)
    clean = redacted(audit)
    assert isinstance(clean, RedactedAudit) and calls["tree"] == 1
    assert redacted(clean) is clean and calls["tree"] == 1
    view = build_view(clean)
    assert calls["tree"] == 1  # a redacted audit is not redacted again
    assert all(TOKEN not in r for r in view.reasons)
    assert any("[REDACTED]" in r for r in view.reasons)
    import auditor.report.view as view_mod

    assert not hasattr(view_mod, "redact")  # nothing in the view redacts field by field


def test_a_formatter_renders_redacted_text_from_an_unredacted_audit() -> None:
    out = MarkdownFormatter().render(_audit_with_secret())
    assert isinstance(out, Redacted)
    assert TOKEN not in out and "REDACTED" in out
