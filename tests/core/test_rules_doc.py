"""docs/rules: one page per rule, generated from the rules' metadata and fixtures (issue 33 item 13).

The committed pages must be exactly what :mod:`auditor.rules_doc` writes: after adding or changing a
rule, run ``python -m auditor.rules_doc docs/rules``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from auditor.model import Category
from auditor.rules_doc import HOMEPAGE, catalogue, fixture_examples, page_for, pages, sentence
from auditor.scan.bandit import TESTS
from auditor.scan.rules import FIXTURES_DIR, load_rule_meta

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "rules"


def test_committed_pages_are_what_the_generator_writes() -> None:
    want = pages()
    have = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")}
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    stale = sorted(n for n in set(want) & set(have) if want[n] != have[n])
    assert not (missing or extra or stale), (
        f"docs/rules is out of date (missing {missing[:5]}, extra {extra[:5]}, stale {stale[:5]}):"
        " run `python -m auditor.rules_doc docs/rules`")


def test_every_semgrep_rule_has_its_own_page_with_a_hostile_and_a_benign_example() -> None:
    examples = fixture_examples(FIXTURES_DIR)
    for rule_id in load_rule_meta():
        doc = page_for(rule_id)
        assert doc is not None and doc.id == rule_id
        assert doc.hostile and doc.benign, f"{rule_id}: its fixture needs a ruleid and an ok line"
        assert doc.hostile == examples[rule_id]["ruleid"][0]
        page = pages()[f"{rule_id}.md"]
        for heading in ("## What it finds", "## Why it matters for an inference server",
                        "## Examples", "## How to waive"):
            assert heading in page, (rule_id, heading)
        assert "auditor waive" in page


def test_every_rule_id_the_stages_make_finds_a_page() -> None:
    for test_id, (category, short) in TESTS.items():
        rule = f"{category.value}.bandit.{test_id.lower()}-{short}"
        doc = page_for(rule)
        assert doc is not None and doc.id == rule and doc.hostile and doc.benign, (
            f"{rule}: give bandit's {test_id} its examples in auditor/rules_doc.py _BANDIT")
    for rule, page in (("provenance.executable-bit", "provenance"),
                       ("review.unsigned.kernels", "review.unsigned"),
                       ("review.concern", "review.concern"), ("review.blocker", "review.blocker"),
                       ("policy.waiver-unused", "policy.waiver-unused"),
                       ("policy.waiver-expired", "policy.waiver-expired"),
                       ("dependency.vulnerable", "dependency"), ("build.bundle-binary", "build"),
                       ("service.no-new-privileges", "service"),
                       ("obfuscation.builtin.encoded-literal", "obfuscation.builtin"),
                       ("network.somewhere.new-rule", "network")):
        doc = page_for(rule)
        assert doc is not None and doc.id == page, rule
    for cat in Category:
        assert page_for(cat.value) is not None


def test_review_pages_say_what_they_are() -> None:
    unsigned = pages()["review.unsigned.md"]
    assert "no reviewer signed off" in unsigned and "auditor review sign" in unsigned
    assert "not a finding in upstream code" in unsigned


def test_titles_are_sentences() -> None:
    for doc in catalogue().values():
        code_first = re.match(r"\S*[._(*]", doc.title) is not None  # torch.load …
        assert doc.title.endswith(".") and (code_first or not doc.title[0].islower()), doc.id
        assert "$" not in doc.title, doc.id  # no semgrep metavariables
        assert not doc.title.startswith(f"{doc.category}: ") if doc.category else True
    assert sentence("outbound request ($CALL). More text.") == "Outbound request (…)."


def test_homepage_is_the_projects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["urls"]["Homepage"] == HOMEPAGE
    assert HOMEPAGE.startswith("https://") and HOMEPAGE.endswith("/")
