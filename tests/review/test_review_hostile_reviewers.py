"""``review plan --reviewers N`` makes at most one packet per hunk (issue 30 item 24): a huge N
(or one so large that its names would not fit in memory) writes packets only for the reviewers
who get a hunk, and says so; N < 1 is still a usage error before any work."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_review_cli import cli

from auditor.errors import InputError
from auditor.review.plan import reviewer_names


def _plan(case: dict[str, Any], count: str) -> tuple[dict[str, Any], str]:
    code, out, err = cli("review", "plan", str(case["spec"]), "--no-scan", "--json",
                         "--out", str(case["tmp"] / "packets"), "--reviewers", count)
    assert code == 0, err
    return json.loads(out), " ".join(err.split())


@pytest.mark.parametrize("count", ["100000", str(10**15)])
def test_reviewers_are_capped_at_the_hunk_count(case: dict[str, Any], count: str) -> None:
    data, err = _plan(case, count)
    hunks = data["hunks_total"]
    assert 1 <= hunks < 100
    assert 1 <= len(data["reviewers"]) <= hunks
    assert all(r["hunks"] for r in data["reviewers"])  # no empty packet
    files = sorted(p.name for p in (case["tmp"] / "packets").iterdir())
    assert len(files) == 2 * len(data["reviewers"]) + 1 and "plan.json" in files
    assert f"--reviewers {count}" in err and f"{len(data['reviewers'])} packet(s)" in err


def test_a_count_below_the_hunk_count_is_kept(case: dict[str, Any]) -> None:
    data, err = _plan(case, "2")
    assert len(data["reviewers"]) == 2 and "note:" not in err


@pytest.mark.parametrize("count", ["0", "-5"])
def test_a_count_below_one_is_a_usage_error(case: dict[str, Any], count: str) -> None:
    code, _, err = cli("review", "plan", str(case["spec"]), "--no-scan",
                       "--out", str(case["tmp"] / "packets"), "--reviewers", count)
    assert code == 2 and "--reviewers N" in err
    assert not (case["tmp"] / "packets").exists()


def test_reviewer_names_cap():
    assert reviewer_names(10**18, (), hunks=3) == ("reviewer-1", "reviewer-2", "reviewer-3")
    assert reviewer_names(5, (), hunks=0) == ("reviewer-1",)
    with pytest.raises(InputError):
        reviewer_names(0, (), hunks=3)
