"""Not-checked reasons the approved baseline already had are carried; a new one counts.

Pure tests on hand-built audits: the deps stage's one "unpinned deployed" reason is compared by
its list, other reasons by their text with line numbers left out.
"""

from __future__ import annotations

from gatecases import audit, sha
from typed_results import decl, deps_data

from auditor.gate.carry import reason_key
from auditor.gate.render import gate_markdown
from auditor.gate.result import decide
from auditor.model import StageResult, StageStatus, Verdict
from auditor.results import Crashed
from auditor.results.deps import UnpinnedRecord

SERIES = [(sha("a1"), "docker: sm86 kernels", "p" * 40)]
SERIES_REBASED = [(sha("b1"), "docker: sm86 kernels", "p" * 40)]


def deps_stage(names: list[str], *, first_line: int = 1, extra: tuple[str, ...] = ()
               ) -> StageResult:
    listed = tuple(UnpinnedRecord(decl(n, specifier=">=1", file="requirements/common.txt",
                                       line=first_line + i), "not pinned to one version (>=1)")
                   for i, n in enumerate(names))
    reason = (f"vulnerabilities of {len(names)} unpinned deployed requirement(s) not checked "
              f"({', '.join(names)}): give [deps] lock")
    return StageResult("deps", StageStatus.INCOMPLETE,
                       deps_data(unpinned_deployed=listed),
                       not_checked=(reason, *extra))


def pair(old: StageResult, new: StageResult):
    base = audit("v0.10.0", SERIES, [], extra={"deps": old})
    new_audit = audit("v0.10.1", SERIES_REBASED, [], extra={"deps": new})
    return base, new_audit


def test_an_unchanged_rebase_with_the_same_reasons_passes() -> None:
    base, new = pair(deps_stage(["numpy", "regex"], extra=("setup.py:657: x is computed",)),
                     deps_stage(["numpy", "regex"], first_line=5,
                                extra=("setup.py:661: x is computed",)))
    assert new.verdict is Verdict.INCOMPLETE
    g = decide(base, new)
    assert g.verdict is Verdict.PASS, g.reasons
    assert len(g.not_checked.carried) == 2 and g.not_checked.new == ()
    assert any("2 not-checked reason(s) accepted in the baseline" in r for r in g.reasons)
    md = gate_markdown(g)
    assert "## Not checked, accepted in the baseline" in md
    assert g.to_json()["not_checked"]["carried"][0]["stage"] == "deps"


def test_a_new_unpinned_requirement_makes_the_reason_new() -> None:
    base, new = pair(deps_stage(["numpy", "regex"]), deps_stage(["numpy", "regex", "fasttok"]))
    g = decide(base, new)
    assert g.verdict is Verdict.INCOMPLETE
    assert [s for s, _ in g.not_checked.new] == ["deps"]
    assert "fasttok" in g.not_checked.new[0][1]


def test_fewer_unpinned_requirements_are_still_accepted() -> None:
    base, new = pair(deps_stage(["numpy", "regex"]), deps_stage(["numpy"]))
    assert decide(base, new).verdict is Verdict.PASS


def test_a_new_reason_of_another_kind_is_new() -> None:
    base, new = pair(deps_stage(["numpy"]),
                     deps_stage(["numpy"], extra=("vulnerabilities: the OSV snapshot is 40 days "
                                                  "old",)))
    g = decide(base, new)
    assert g.verdict is Verdict.INCOMPLETE
    assert [r for _, r in g.not_checked.new] == ["vulnerabilities: the OSV snapshot is 40 days old"]


def test_a_stage_crash_is_never_carried() -> None:
    crash = StageResult("deps", StageStatus.INCOMPLETE, Crashed("boom"),
                        not_checked=("stage crashed: boom",))
    base, new = pair(crash, crash)
    assert decide(base, new).verdict is Verdict.INCOMPLETE


def test_reason_keys_leave_out_line_numbers_only() -> None:
    assert reason_key("docker/Dockerfile:385: pip install argument '$X'") == reason_key(
        "docker/Dockerfile:390: pip install argument '$X'")
    assert reason_key("a.txt:3: x") != reason_key("b.txt:3: x")
    assert reason_key("x at requirements.txt:2 and 3 more") == reason_key(
        "x at requirements.txt:9 and 1 more")
