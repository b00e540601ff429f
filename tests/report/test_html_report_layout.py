"""report.html's top and edges (issue 33 item 14): count tiles, the severity of every finding, links
to the files the audit wrote beside the page, and table headers that break between words only."""

from __future__ import annotations

import re
from dataclasses import replace

from reportcases import Doc, hostile_audit, rich_audit
from typed_results import build_data, built_wheel, sbom_data, unit_data

from auditor.model import AuditResult, StageResult, StageStatus
from auditor.report.html import HtmlFormatter, artifacts
from auditor.report.html_template import STYLE
from auditor.report.view import build_view


def render(audit: AuditResult) -> str:
    return HtmlFormatter().render(audit)


def tiles_of(page: str) -> dict[str, str]:
    nav = re.search(r'<nav class="tiles" id="tiles"[^>]*>(.*?)</nav>', page, re.S)
    assert nav, "no count tiles"
    return {label: n for n, label in re.findall(
        r'<span class="n">([^<]*)</span><span class="l">([^<]*)</span>', nav.group(1))}


def test_count_tiles_sit_at_the_top_with_the_counts() -> None:
    audit = rich_audit()
    page = render(audit)
    v = build_view(audit)
    tiles = tiles_of(page)
    unwaived = [f for f in audit.findings if not f.waived]
    assert tiles == {
        "block": str(sum(f.action.value == "block" for f in unwaived)),
        "review": str(sum(f.action.value == "review" for f in unwaived)),
        "not checked": "0",
        "commits with findings": f"{sum(1 for c in v.commits if c.findings)} of 3",
    }
    assert tiles["block"] == "2" and tiles["review"] == "2"
    assert tiles["commits with findings"] == "2 of 3"
    # before the reasons, the stages and the findings: the first thing a reader sees
    assert page.index('id="tiles"') < page.index("<ul>") < page.index('id="not-checked"')


def test_the_not_checked_tile_counts_what_did_not_run() -> None:
    page = render(hostile_audit())
    assert tiles_of(page)["not checked"] == "1"
    assert re.search(r'<a class="tile t-notchecked" href="#not-checked">', page)


def test_every_finding_card_shows_its_severity() -> None:
    audit = rich_audit()
    page = render(audit)
    cards = re.findall(r'<article class="finding[^"]*" id="f\d+"[^>]*>\s*<h3>(.*?)</h3>', page,
                       re.S)
    assert len(cards) == len(audit.findings)
    shown = sorted(re.search(r'<span class="sev sev-(\w+)"[^>]*>(\w+)</span>', c).groups()
                   for c in cards)
    assert shown == sorted((f.severity.value, f.severity.value) for f in audit.findings)
    # and in the per-commit list
    assert re.search(r'<li><span class="a-block">block</span> <span class="sev sev-high">high'
                     r'</span> <a href="#f\d+">network engine/telemetry.py:4</a>', page)
    for sev in ("critical", "high", "medium", "low", "info"):
        assert f".sev-{sev}" in STYLE


def test_links_to_the_files_the_audit_wrote() -> None:
    page = render(rich_audit())
    links = dict(re.findall(r'<li>([^<:]+): <a href="([^"]+)">', page))
    assert links == {
        "SBOM (CycloneDX)": "sbom.cdx.json",
        "provenance (in-toto)": "provenance.intoto.json",
        "systemd unit": "engine.service",
        "wheel": "engine-1.0.0-cp311-linux_x86_64.whl",
    }
    d = Doc()
    d.feed(page)
    hrefs = [a.get("href") or "" for tag, a in d.elements if tag == "a"]
    assert all(h.startswith("#") or "/" not in h and ":" not in h for h in hrefs)


def test_no_links_for_files_that_were_not_written() -> None:
    audit = rich_audit()
    stages = {**audit.stages, "sbom": StageResult.not_requested("sbom"),
              "unit": StageResult.not_requested("unit"),
              "build": StageResult("build", StageStatus.INCOMPLETE,
                                   not_checked=("nvcc is missing",))}
    page = render(replace(audit, stages=stages))
    assert "Files of this audit" not in page
    assert 'href="sbom.cdx.json"' not in page and ".whl\"" not in page


def test_hostile_file_names_never_become_links_out_of_the_directory() -> None:
    audit = rich_audit()
    stages = {**audit.stages,
              "build": StageResult("build", StageStatus.OK, build_data(
                  wheel=built_wheel("javascript:alert(1)//<b>x</b>.whl", "cd" * 32))),
              "unit": StageResult("unit", StageStatus.OK, unit_data("../../etc/passwd")),
              "sbom": StageResult("sbom", StageStatus.OK, sbom_data())}
    hostile = replace(audit, stages=stages)
    names = {a.label: a.href for a in artifacts(build_view(hostile))}
    assert "systemd unit" not in names and "wheel" not in names  # a path is not a file name
    stages["build"] = StageResult("build", StageStatus.OK, build_data(
        wheel=built_wheel("javascript:alert(1)<script>x</script>.whl".replace("/", ""),
                          "cd" * 32)))
    page = render(replace(audit, stages=stages))
    href = re.search(r'<li>wheel: <a href="([^"]+)">([^<]*)</a>', page)
    assert href and href.group(1) == "javascript%3Aalert%281%29%3Cscript%3Ex%3Cscript%3E.whl"
    assert href.group(2) == "javascript:alert(1)&lt;script&gt;x&lt;script&gt;.whl"
    assert "<script>x" not in page


def test_table_headers_break_between_words_only() -> None:
    """At 390 px the six-column vulnerability table squeezed its headers into "sever|ity": the
    headers keep ``overflow-wrap: anywhere`` off and wide tables scroll instead."""
    th = re.search(r"(?m)^th \{([^}]*)\}", STYLE)
    assert th, "no rule of its own for th"
    assert "overflow-wrap: normal" in th.group(1) and "word-break: normal" in th.group(1)
    page = render(rich_audit())
    assert re.search(r'<div class="scroll"><table class="vulns">\s*<thead><tr><th>id</th>', page)
    assert '<h2>Stages</h2>\n<div class="scroll"><table>' in page
    assert "@media (max-width: 600px)" in STYLE
