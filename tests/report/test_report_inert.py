"""Untrusted text (commit subjects, author names, paths, messages, snippets, waiver reasons) comes
out inert in every format, and a secret in a snippet is redacted everywhere."""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from reportcases import SECRET, hostile_audit
from rich.console import Console

from auditor.report.console import print_stage, print_summary
from auditor.report.github import step_summary, workflow_commands
from auditor.report.html import HtmlFormatter
from auditor.report.markdown import MarkdownFormatter
from auditor.report.sarif import SarifFormatter

AUDIT = hostile_audit()


class Tags(HTMLParser):
    """Every start tag and attribute of a document, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    p = Tags()
    p.feed(html)
    p.close()
    return p.tags


def console_text(fn, *args, terminal: bool) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    fn(Console(file=buf, force_terminal=terminal, width=200, color_system="standard"
               if terminal else None), *args)
    return buf.getvalue()


def outputs() -> dict[str, str]:
    return {
        "md": MarkdownFormatter().render(AUDIT),
        "html": HtmlFormatter().render(AUDIT),
        "sarif": SarifFormatter().render(AUDIT),
        "github": "\n".join(workflow_commands(AUDIT)),
        "github-summary": step_summary(AUDIT),
        "console": console_text(print_summary, AUDIT, Path("out"), terminal=True),
        "console-stage": console_text(print_stage, AUDIT.stages["scan"], terminal=True),
    }


@pytest.mark.parametrize("fmt", list(outputs()))
def test_report_inert_secret_redacted_and_no_control_bytes(fmt: str) -> None:
    text = outputs()[fmt]
    assert SECRET not in text
    assert "sk-live" not in text
    if fmt.startswith("console"):
        # rich's own colour codes (ESC [) are fine; the bundle's OSC 8 link and BEL are not
        assert "\x1b]" not in text and "\x07" not in text and "\r" not in text
    else:
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), fmt


def test_report_inert_console_plain_has_no_escape_at_all() -> None:
    for text in (console_text(print_summary, AUDIT, Path("out"), terminal=False),
                 console_text(print_stage, AUDIT.stages["scan"], terminal=False)):
        assert "\x1b" not in text and "\x07" not in text
        assert "\\x1b]8;;" in text  # shown, visibly


@pytest.mark.parametrize("fmt", ["md", "github-summary"])
def test_report_inert_markdown_renders_no_html_or_links(fmt: str) -> None:
    text = outputs()[fmt]
    html = MarkdownIt("commonmark").enable("table").render(text)
    allowed = {"h1", "h2", "h3", "h4", "p", "ul", "li", "table", "thead", "tbody", "tr", "th",
               "td", "code", "strong", "em", "pre", "hr", "br"}
    seen = {t for t, _ in tags_of(html)}
    assert seen <= allowed, seen - allowed
    assert "<script" not in html and "<img" not in html
    assert "href" not in html
    assert "\\<script\\>" in text  # visible as text
    assert "http\\://evil.example" in text  # no autolink either


def test_report_inert_html() -> None:
    html = outputs()["html"]
    tags = tags_of(html)
    scripts = [t for t, _ in tags if t == "script"]
    assert len(scripts) == 1  # our own filter script only
    assert not [t for t, _ in tags if t in ("img", "iframe", "object", "embed", "link")]
    for _, attrs in tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), name
            assert "javascript:" not in (value or "").lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Evil &lt;img src=x onerror=alert(1)&gt;" in html
    assert '<pre class="msg">body &lt;script&gt;' in html  # the commit message body, as text


def test_report_inert_sarif() -> None:
    text = outputs()["sarif"]
    assert "<" not in text and ">" not in text  # written as \u003c / \u003e
    doc = json.loads(text)
    results = doc["runs"][0]["results"]
    messages = [r["message"]["text"] for r in results]
    assert any("\\[x\\](javascript:alert(1))" in m for m in messages)
    for m in messages:
        assert not re.search(r"(?<!\\)\[", m)  # no embedded link can form (SARIF §3.11.6)
    uri = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "engine/%3Cscript%3Ex%3C/script%3E%2Ca%3Ab.py"
    snippet = results[0]["locations"][0]["physicalLocation"]["region"]["snippet"]["text"]
    assert "\x1b" not in snippet and "[REDACTED]" in snippet


def test_report_inert_github_annotations() -> None:
    lines = workflow_commands(AUDIT)
    for line in lines:
        assert "\n" not in line and "\r" not in line
        assert line.startswith(("::error ", "::warning ", "::notice "))
    block = next(x for x in lines if "title=block%3A network" in x)
    props, _, message = block[2:].partition("::")
    assert "file=engine/<script>x</script>%2Ca%3Ab.py" in props  # , and : cannot split props
    assert ",line=1," in props
    assert "%0D%0A" not in message  # CR was made visible before escaping: \x0d
    assert "::error::pwn" in message  # inert: commands only start a line
