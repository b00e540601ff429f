"""Each finding's lines as a diff in report.html (issue 33 item 14): the scan records the flagged
lines with 3 lines around them, each marked added by the series or not (``Finding.context``, kept in
audit.json), and the page shows them as a diff; untrusted text stays escaped, secrets redacted."""

from __future__ import annotations

import html
import re
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from reportcases import C2, HOSTILE, SECRET, finding, rich_audit

from auditor.demo import prepare
from auditor.model import AuditResult, Finding, SourceLine
from auditor.pipeline import run_pipeline
from auditor.report import redacted
from auditor.report.html import HtmlFormatter, diff_rows
from auditor.results.audit_file import schema_problem
from auditor.scan.engine import CONTEXT_LINES, SNIPPET_WIDTH, source_context
from auditor.spec import load_spec
from auditor.stage import Options

FILE = [f"line {n}" for n in range(1, 21)]


def test_context_is_three_lines_around_the_flagged_ones_marked_by_origin() -> None:
    origins: list[str | None] = [None] * 20
    origins[9] = origins[10] = C2  # the series wrote lines 10 and 11
    ctx = source_context(FILE, 10, 11, origins)
    assert [(c.line, c.text, c.added) for c in ctx] == [
        (7, "line 7", False), (8, "line 8", False), (9, "line 9", False),
        (10, "line 10", True), (11, "line 11", True),
        (12, "line 12", False), (13, "line 13", False), (14, "line 14", False)]
    assert CONTEXT_LINES == 3


def test_context_at_the_edges_of_the_file_and_without_a_line() -> None:
    assert [c.line for c in source_context(FILE, 1, 1, None)] == [1, 2, 3, 4]
    assert [c.line for c in source_context(FILE, 20, 20, None)] == [17, 18, 19, 20]
    assert not any(c.added for c in source_context(FILE, 1, 1, None))  # upstream's file
    assert source_context(FILE, 0, 0, None) == ()  # a binary or a whole-file finding
    assert source_context(FILE, 99, 99, None) == ()
    # a long range: its first 5 lines, no context after a cut
    assert [c.line for c in source_context(FILE, 5, 15, None)] == [2, 3, 4, 5, 6, 7, 8, 9]


def test_context_is_redacted_and_cut_and_dropped_around_a_multiline_secret() -> None:
    lines = ["import os", f'api_key = "{SECRET}"', "x" * 500, "ok = 1"]
    ctx = source_context(lines, 3, 3, None)
    assert SECRET not in "".join(c.text for c in ctx)
    assert '"[REDACTED]"' in ctx[1].text
    assert ctx[2].text == "x" * SNIPPET_WIDTH + "…"
    pem = ["k = '''", "-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEAx1234567890abcdefAB",
           "qwertyuiopasdfghjkl1234567890ZXCVBNM", "-----END RSA PRIVATE KEY-----", "'''", "f()"]
    # line by line the key's body would stay: no context in such a file rather than a secret
    assert source_context(pem, 7, 7, None) == ()
    assert source_context([*pem, *FILE], 20, 20, None) == ()  # far from the key too
    assert [c.text for c in source_context(["a", "", "b", ""], 1, 1, None)] == ["a", "", "b", ""]


def test_context_round_trips_through_audit_json_and_fits_the_schema() -> None:
    f = finding(context=(SourceLine(3, "import requests", False),
                         SourceLine(4, "requests.post(URL, json=payload)", True)))
    data = f.to_json()
    assert data["context"] == [{"line": 3, "text": "import requests", "added": False},
                               {"line": 4, "text": "requests.post(URL, json=payload)",
                                "added": True}]
    assert Finding.from_json(data) == f
    assert "context" not in finding().to_json()  # absent when not recorded
    audit = rich_audit()
    scan = audit.stages["scan"]
    stages = {**audit.stages, "scan": replace(scan, findings=(f, *scan.findings[1:]))}
    doc = replace(audit, stages=stages).to_json()
    assert schema_problem(doc) is None
    doc["findings"][0]["context"][0]["added"] = "yes"
    assert schema_problem(doc) is not None
    with pytest.raises(TypeError, match="context added"):
        Finding.from_json(doc["findings"][0])


def page_with(*findings: Finding) -> str:
    audit = rich_audit()
    scan = audit.stages["scan"]
    stages = {**audit.stages, "scan": replace(scan, findings=findings)}
    return HtmlFormatter().render(redacted(replace(audit, stages=stages)))


def card(page: str, fid: str = "f1") -> str:
    m = re.search(rf'<article class="finding[^"]*" id="{fid}".*?</article>', page, re.S)
    assert m
    return m.group(0)


def rows_of(card_html: str) -> list[tuple[str, str, str, str]]:
    return re.findall(r'<span class="row([^"]*)"><span class="ln">(\d+)</span>'
                      r'<span class="mk">([+ ]?)</span>(.*?)</span>', card_html)


def test_the_card_shows_the_context_as_a_diff() -> None:
    f = finding(line=4, end_line=4, context=(
        SourceLine(2, "import requests", False), SourceLine(3, "", True),
        SourceLine(4, "requests.post(URL, json=payload)", True),
        SourceLine(5, "return None", False)))
    c = card(page_with(f))
    assert rows_of(c) == [("", "2", " ", "import requests"), (" add", "3", "+", ""),
                          (" add hl", "4", "+", "requests.post(URL, json=payload)"),
                          ("", "5", " ", "return None")]
    assert "lines 2–5 · <strong>+</strong> added by the series" in c


def test_without_context_the_snippet_alone_is_shown() -> None:
    f = finding(line=4, snippet="requests.post(URL)\n")
    assert diff_rows(f)[0].mark == ""
    c = card(page_with(f))
    assert '<pre class="snippet"><span class="hl"><span class="ln">4</span>requests.post(URL)' in c
    assert "added by the series" not in c


def test_hostile_context_stays_inert() -> None:
    f = finding(line=2, end_line=2, context=(
        SourceLine(1, HOSTILE, True), SourceLine(2, f'token = "{SECRET}"', True)))
    page = page_with(f)
    c = card(page)
    assert "<script>alert(1)" not in page and "\x1b" not in page
    assert SECRET not in page
    text = html.unescape(re.sub(r"<[^>]+>", "", c))
    assert "<script>alert(1)</script>" in text  # shown, as text
    assert "[REDACTED]" in text


@pytest.fixture(scope="module")
def demo_audit(tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    """The demo's real scan (real git blame, semgrep, bandit) on its series."""
    root = tmp_path_factory.mktemp("demo-context") / "example"
    spec = load_spec(prepare(root))
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as work:
        mp.setenv("AUDITOR_CACHE", str(tmp_path_factory.getbasetemp() / "auditor-cache"))
        mp.setenv("SEMGREP_ENABLE_VERSION_CHECK", "0")
        (Path(work) / "out").mkdir()
        audit, _ = run_pipeline(spec, Options(), ["scan"], Path(work) / "out", Path(work))
    return audit


@pytest.mark.slow
def test_the_demo_findings_carry_their_context(demo_audit: AuditResult) -> None:
    """server.py's prompt log is one line the series added into upstream's function: the lines
    around it are upstream's (unmarked); shm.py is a new file (every line added)."""
    log = next(f for f in demo_audit.findings
               if f.rule == "prompt-logging.python.request-content-logged")
    assert [(c.line, c.added) for c in log.context] == [
        (log.line + d, d == 0) for d in range(-CONTEXT_LINES, CONTEXT_LINES + 1)]
    assert "logger.info(" in log.context[CONTEXT_LINES].text
    leak = next(f for f in demo_audit.findings if f.path == "tinyllm/shm.py")
    assert leak.context and all(c.added for c in leak.context)
    page = HtmlFormatter().render(redacted(demo_audit))
    assert re.search(r'<span class="row add hl"><span class="ln">\d+</span><span class="mk">\+'
                     r'</span>    logger\.info\(&#34;prompt for', page)
    assert schema_problem(demo_audit.to_json()) is None
