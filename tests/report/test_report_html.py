"""report.html: one self-contained file with the per-commit view, filterable findings and snippets."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from reportcases import C1, C2, C3, Doc, rich_audit

from auditor.report.html import HtmlFormatter, script_hash
from auditor.report.html_template import SCRIPT

HTML = HtmlFormatter().render(rich_audit())


def parsed() -> Doc:
    d = Doc()
    d.feed(HTML)
    d.close()
    return d


def test_report_html_well_formed() -> None:
    d = parsed()
    assert not d.errors, d.errors[:5]
    assert d.stack == []


def test_report_html_self_contained() -> None:
    d = parsed()
    for tag, attrs in d.elements:
        assert "src" not in attrs, tag
        if tag == "a":  # within the page, or a file beside it in the audit directory
            href = attrs.get("href") or ""
            assert href.startswith("#") or re.fullmatch(r"[A-Za-z0-9._%-]+", href), attrs
        assert tag != "link"
    assert "@import" not in HTML and "url(" not in HTML
    assert "http://" not in HTML and "https://" not in HTML
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', HTML)
    assert csp
    policy = html.unescape(csp.group(1))
    assert "default-src 'none'" in policy
    assert f"script-src '{script_hash(SCRIPT)}'" in policy
    assert f"<script>{SCRIPT}</script>" in HTML  # the hash covers exactly the inline script
    assert "@media print" in HTML


def test_report_html_per_commit_view() -> None:
    for i, (sha, subject) in enumerate([(C1, "Refactor server options"),
                                        (C2, "Add usage statistics"),
                                        (C3, "Faster tokenizer loading")], 1):
        m = re.search(rf'<div class="commit (\w+)" id="c{i}">\s*<h3>{i}\. <code>{sha[:10]}</code> '
                      rf'{subject}</h3>', HTML)
        assert m, subject
    assert 'class="commit clean" id="c1"' in HTML and "clean: no findings" in HTML
    assert 'class="commit dirty" id="c2"' in HTML
    assert 'class="commit looked" id="c3"' in HTML
    assert "+20 −2 in 2 file(s)" in HTML  # diff stats of commit 2


def test_report_html_filterable_findings_visible_without_js() -> None:
    d = parsed()
    cards = [a for t, a in d.elements if t == "article"]
    assert len(cards) == len(rich_audit().findings)
    assert all(not a.get("hidden") and "hidden" not in a for a in cards)  # shown without JS
    assert {a["data-action"] for a in cards} == {"block", "review", "waived"}
    assert {a["data-commit"] for a in cards} == {C2, C3, "none"}
    assert {a["data-category"] for a in cards} == {"network", "secret-access", "process-exec",
                                                   "filesystem", "dependency"}
    form = [a for t, a in d.elements if t == "form"]
    assert form and "hidden" in form[0]  # the filter bar appears only when the script runs
    selects = [a["name"] for t, a in d.elements if t == "select"]
    assert selects == ["category", "action", "commit"]


def test_report_html_snippet_line_highlighted_and_redacted() -> None:
    m = re.search(r'<pre class="snippet">(.*?)</pre>', HTML[HTML.index('id="f2"'):], re.S)
    assert m
    assert '<span class="hl"><span class="ln">2</span>hf = os.environ[&#39;HF_TOKEN&#39;]' \
           '</span>' in m.group(1)
    assert '<span class="hl"><span class="ln">3</span>api_key = &#34;[REDACTED]&#34;</span>' \
        in m.group(1)
    assert "sk-live" not in HTML


def test_report_html_same_content_as_markdown() -> None:
    for text in ("GHSA-xxxx-yyyy-zzzz", "CVE-2026-0001", "exposure 1.3 OK",
                 "reproducible (two builds identical)", "engine-1.0.0-cp311-linux_x86_64.whl",
                 "Every requested check ran.", "fixed name in /tmp",
                 "upstream behaviour, tracked upstream", "orjson ==3.10.0 (requirements.txt)",
                 "fastapi ==0.110.0 -&gt; ==0.111.0"):
        assert text in HTML, text


def test_report_html_filter_script_runs(tmp_path: Path) -> None:
    """The inline filter, run by node against a tiny stand-in for the page's DOM."""
    import json
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    cards = [{"category": "network", "action": "block", "commit": "c1"},
             {"category": "dependency", "action": "review", "commit": "none"},
             {"category": "network", "action": "waived", "commit": "none"}]
    harness = """
const cards = CARDS.map(d => ({d, hidden: false, getAttribute(n) { return this.d[n.slice(5)]; }}));
function sel(name) { return {name, value: "", handlers: [],
  addEventListener(e, f) { this.handlers.push(f); }}; }
const selects = [sel("category"), sel("action"), sel("commit")];
const bar = {hidden: true, querySelectorAll: () => selects};
const shown = {textContent: ""};
globalThis.document = {
  getElementById: id => ({filters: bar, shown: shown})[id],
  querySelectorAll: q => q === ".finding" ? cards : []};
SCRIPT
const out = [bar.hidden, shown.textContent];
selects[0].value = "network"; selects[0].handlers.forEach(f => f());
out.push(shown.textContent, cards.map(c => c.hidden));
selects[2].value = "none"; selects[2].handlers.forEach(f => f());
out.push(shown.textContent, cards.map(c => c.hidden));
console.log(JSON.stringify(out));
""".replace("CARDS", json.dumps(cards)).replace("SCRIPT", SCRIPT)
    script = tmp_path / "harness.js"
    script.write_text(harness)
    res = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [False, "3", "2", [False, True, False],
                                      "1", [True, True, False]]


def test_report_html_stage_names_never_break_mid_word() -> None:
    """Table cells wrap anywhere (long paths); the stage and status cells must not ("ver-ify")."""
    rows = re.findall(r'<tr><td class="([^"]*)">(\w+)</td><td class="([^"]*)">', HTML)
    assert {name for _, name, _ in rows} >= {"verify", "scan", "sbom"}
    for name_cls, _, status_cls in rows:
        assert "word" in name_cls.split() and "word" in status_cls.split()
    rule = re.search(r"td\.word[^{]*\{([^}]*)\}", HTML)
    assert rule and "white-space: nowrap" in rule.group(1)
