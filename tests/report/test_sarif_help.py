"""SARIF rule help and review.unsigned findings shown as what they are (issue 33 items 7 and 13).

- every rule has a ``helpUri`` (absolute, to its page under docs/rules, which exists) and
  ``help.markdown`` (the page), a ``shortDescription`` that is a sentence, and the driver an
  ``informationUri``; the log validates against the SARIF 2.1.0 schema with URI formats checked;
- a ``review.unsigned.<area>`` finding (commit null, inherited false) covering hunks in several
  files and commits is located at every hunk in SARIF, listed hunk by hunk in report.md, and never
  called "upstream" in report.md or the GitHub annotations.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from reportcases import C1, C2, C3, finding, rich_audit

from auditor.model import Action, AuditResult, Category, Severity, compute_verdict
from auditor.report.github import workflow_commands
from auditor.report.markdown import MarkdownFormatter
from auditor.report.sarif import SarifFormatter
from auditor.review.areas import ReviewArea
from auditor.review.coverage import HunkRef, compute
from auditor.review.signoffs import ReviewVerdict, SignOff
from auditor.review.stage import review_result
from auditor.rules_doc import HOMEPAGE

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "tests" / "schemas" / "sarif-schema-2.1.0.json"

HUNKS = (
    HunkRef("h-shm", "d1" * 8, "engine/shm.py", C1, "other", 1, 12, 12),
    HunkRef("h-server", "d2" * 8, "engine/server.py", C2, "other", 21, 27, 1),
    HunkRef("h-transport", "d3" * 8, "engine/transport.py", C3, "other", 1, 10, 10),
    HunkRef("h-blob", "d4" * 8, "engine/_C.so", C3, "other", 0, 0, 1),
    HunkRef("d5" * 8, "d5" * 32, "engine/util.py", C1, "other", 3, 4, 2),
    HunkRef("h-req", "d6" * 8, "requirements.txt", C2, "dependencies", 2, 5, 1),
)
AREAS = (ReviewArea("dependencies", "Dependencies", ("requirements*.txt",), ()),
         ReviewArea("other", "Everything else", ("**",), ()))


def _audit() -> AuditResult:
    """The rich audit plus a review stage (real coverage code) and findings of every family."""
    base = rich_audit()
    # well-formed, as a reviews file gives it (the report reads the audit back: a malformed
    # sign-off would not survive that)
    signed = SignOff(reviewer="alice", hunk="d5" * 8, digest="d5" * 32, path="engine/util.py",
                     verdict=ReviewVerdict.OK, note="", date="2026-11-30")
    review = review_result(compute(HUNKS, AREAS, [signed]), required=True, file="reviews.toml")
    extra = (
        finding(rule="provenance.executable-bit", category=Category.PROVENANCE,
                severity=Severity.LOW, action=Action.REVIEW, path="scripts/run.sh", line=0,
                scanner="verify", fingerprint="7" * 32, snippet=""),
        finding(rule="filesystem.bandit.b103-chmod-permissive", category=Category.FILESYSTEM,
                severity=Severity.MEDIUM, action=Action.REVIEW, path="engine/shm.py", line=9,
                scanner="bandit", fingerprint="8" * 32),
        finding(rule="network.python.http-client", line=14, fingerprint="9" * 32,
                also=("network.bandit.b310-urlopen",)),
    )
    stages = dict(base.stages)
    stages["review"] = review
    stages["scan"] = replace(stages["scan"], findings=(*stages["scan"].findings, *extra))
    verdict, reasons = compute_verdict(stages.values())
    return replace(base, verdict=verdict, reasons=reasons, stages=stages)


@pytest.fixture(scope="module")
def audit() -> AuditResult:
    return _audit()


@pytest.fixture(scope="module")
def sarif(audit: AuditResult) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SarifFormatter().render(audit))
    return doc


def test_the_log_validates_with_uri_formats_checked(sarif: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4

    def no_network(uri: str) -> Resource:
        raise AssertionError(f"schema validation tried to fetch {uri}")

    registry = Registry(retrieve=no_network).with_resource(  # type: ignore[call-arg]
        schema["id"], Resource.from_contents(schema, default_specification=DRAFT4))
    checker = jsonschema.Draft4Validator.FORMAT_CHECKER
    assert "uri" in checker.checkers  # jsonschema[format-nongpl] checks absolute URIs
    validator = jsonschema.Draft4Validator(schema, registry=registry, format_checker=checker)
    errors = sorted(validator.iter_errors(sarif), key=str)
    assert not errors, errors[0]


def test_every_rule_has_a_page_help_and_a_sentence(sarif: dict[str, Any]) -> None:
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == HOMEPAGE
    rules = driver["rules"]
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {r["id"] for r in rules}
    for r in rules:
        uri = r["helpUri"]
        assert uri.startswith(HOMEPAGE + "docs/rules/") and uri.endswith(".md"), r["id"]
        page = ROOT / uri[len(HOMEPAGE):]
        assert page.is_file(), uri
        assert r["help"]["markdown"] == page.read_text(encoding="utf-8")
        short = r["shortDescription"]["text"]
        assert short.endswith(".") and not short.startswith(f"{r['properties']['category']}: ")
        assert r["id"] not in short
    by_id = {r["id"]: r for r in rules}
    assert by_id["network.python.http-client"]["helpUri"].endswith(
        "/docs/rules/network.python.http-client.md")
    assert by_id["filesystem.bandit.b103-chmod-permissive"]["helpUri"].endswith(
        "/docs/rules/filesystem.bandit.b103-chmod-permissive.md")
    unsigned = by_id["review.unsigned.other"]
    assert unsigned["helpUri"].endswith("/docs/rules/review.unsigned.md")
    assert "signed off" in unsigned["shortDescription"]["text"]
    assert "auditor review sign" in unsigned["help"]["markdown"]


def test_unsigned_result_is_located_at_every_unreviewed_hunk(sarif: dict[str, Any]) -> None:
    (res,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "review.unsigned.other"]
    places = [(loc["physicalLocation"]["artifactLocation"]["uri"],
               loc["physicalLocation"].get("region", {}).get("startLine"))
              for loc in res["locations"]]
    assert places == [("engine/shm.py", 1), ("engine/server.py", 21),
                      ("engine/transport.py", 1), ("engine/_C.so", None)]  # util.py is signed
    assert res["properties"]["hunks"] == 4 and res["properties"]["commit"] is None
    assert "4 hunk(s)" in res["message"]["text"] and "3 commit(s)" in res["message"]["text"]


def test_markdown_lists_the_hunks_and_never_says_upstream(audit: AuditResult) -> None:
    md = MarkdownFormatter().render(audit)
    rows = [line for line in md.splitlines() if "review.unsigned.other" in line and "|" in line]
    assert rows and all("upstream" not in row for row in rows)
    assert "4 hunk(s), 24 line(s) in 4 file(s) from 3 commit(s)" in rows[0]
    section = md[md.index("## Unreviewed hunks"):]
    for hunk in ("h-shm", "h-server", "h-transport", "h-blob", "h-req"):
        assert f"`{hunk}`" in section
    assert f"`{'d5' * 8}`" not in section
    assert re.search(r"engine/server\.py:21-27", section)
    assert "upstream code \\(inherited\\)" in md  # the inherited finding still is upstream's


def test_html_lists_the_hunks_and_never_says_upstream(audit: AuditResult) -> None:
    from auditor.report.html import HtmlFormatter

    page = HtmlFormatter().render(audit)
    card = page[page.index('rule <code>review.unsigned.other</code>'):]
    card = card[:card.index("</article>")]
    assert "upstream" not in card and "unreviewed hunks of the series" in card
    for hunk in ("h-shm", "h-server", "h-transport", "h-blob"):
        assert f"<code>{hunk}</code>" in card
    assert "d5" * 8 not in card and "engine/server.py:21-27" in card


def test_github_annotation_lists_the_hunks_and_no_file(audit: AuditResult) -> None:
    lines = [line for line in workflow_commands(audit)
             if "review.unsigned.other" in line and "unreviewed hunks" in line]
    assert len(lines) == 1
    (line,) = lines
    assert "upstream" not in line and "file=" not in line
    assert "engine/shm.py:1-12" in line and "engine/_C.so" in line
    assert "unreviewed hunks of the series" in line


def test_a_merged_finding_says_what_its_waiver_covers(audit: AuditResult,
                                                      sarif: dict[str, Any]) -> None:
    (res,) = [r for r in sarif["runs"][0]["results"]
              if r["ruleId"] == "network.python.http-client"]
    assert res["properties"]["also"] == ["network.bandit.b310-urlopen"]
    md = MarkdownFormatter().render(audit)
    (row,) = [line for line in md.splitlines() if "network.python.http-client" in line
              and line.startswith("|")]
    assert "9" * 32 in row and "a waiver of this fingerprint covers them" in row
    (line,) = [x for x in workflow_commands(audit) if "network.python.http-client;" in x]
    assert "a waiver of this finding covers them" in line
