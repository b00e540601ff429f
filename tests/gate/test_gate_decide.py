"""The gate's decision on constructed audits: what is carried, what counts, verdicts, outputs."""

from __future__ import annotations

import json
from pathlib import Path

from gatecases import audit, check_golden, finding, sha
from typed_results import decl, deps_data, vuln

from auditor.gate.compare import compare_deps, compare_findings
from auditor.gate.render import gate_markdown, range_diff_lines
from auditor.gate.result import GATE_SCHEMA, decide
from auditor.gate.run import write_gate
from auditor.model import Action, StageResult, StageStatus, Verdict, exit_code_for

A, B, C = sha("a1"), sha("b1"), sha("c1")
A2, B2, D2 = sha("a2"), sha("b2"), sha("d2")
ORJSON = decl("orjson", specifier="==3.10.0", file="")
OLD_COMMITS = [(A, "add helper", "pa"), (B, "spawn worker", "pb"), (C, "old feature", "pc")]


def baseline():  # type: ignore[no-untyped-def]
    return audit("v1.0.0", OLD_COMMITS, [finding("f1", B), finding("f9", C, Action.INFO)],
                 deps=deps_data(added=(ORJSON,)))


def test_gate_decide_unchanged_rebase_passes_and_keeps_reviews() -> None:
    new = audit("v2.0.0", [(A2, "add helper", "pa"), (B2, "spawn worker", "pb"),
                           (sha("c2"), "old feature", "pc")],
                [finding("f1", B2), finding("f9", sha("c2"), Action.INFO)],
                deps=deps_data(added=(ORJSON,)))
    assert new.verdict is Verdict.REVIEW  # on its own the new audit needs review...
    g = decide(baseline(), new)
    assert g.verdict is Verdict.PASS  # ...but the baseline reviewed exactly that finding
    assert exit_code_for(g.verdict) == 0
    assert [m.kind.value for m in g.series] == ["unchanged"] * 3
    assert {f.fingerprint[:2] for f in g.findings.carried} == {"f1", "f9"}
    assert g.findings.new == () and g.deps.empty
    assert any("carried" in r for r in g.reasons)


def test_gate_decide_changed_patch_with_new_finding_fails() -> None:
    new = audit("v2.0.0", [(A2, "add helper", "pa"), (B2, "spawn worker", "pb-changed"),
                           (D2, "new thing", "pd")],
                [finding("f1", B2), finding("f2", B2, Action.BLOCK,
                                            category=__import__("auditor.model").model.Category
                                            .UNSAFE_DESERIALIZATION),
                 finding("f3", D2, Action.REVIEW)],
                deps=deps_data(added=(ORJSON, decl("requests", specifier=">=2")),
                              vulnerabilities=(vuln("OSV-1", "requests", "2.0",
                                                    fixed=["2.1"]),)))
    g = decide(baseline(), new)
    assert g.verdict is Verdict.FAIL and exit_code_for(g.verdict) == 1
    assert [(m.kind.value, m.new.subject if m.new else m.old.subject) for m in g.series] == [
        ("unchanged", "add helper"), ("changed", "spawn worker"), ("added", "new thing"),
        ("dropped", "old feature")]  # as git range-diff: left-over old commits come last
    assert sorted(f.fingerprint[:2] for f in g.findings.new) == ["f2", "f3"]
    assert [f.fingerprint[:2] for f in g.findings.carried] == ["f1"]
    assert [f.fingerprint[:2] for f in g.findings.resolved] == ["f9"]
    assert [d.name for d in g.deps.added] == ["requests"]
    assert [v.id for v in g.deps.vulnerabilities] == ["OSV-1"]
    assert any("1 blocking finding" in r for r in g.reasons)


def test_gate_decide_new_review_finding_is_review() -> None:
    new = audit("v2.0.0", [(A2, "add helper", "pa")], [finding("f7", A2)])
    g = decide(baseline(), new)
    assert g.verdict is Verdict.REVIEW
    assert exit_code_for(g.verdict) == 1
    from auditor.model import FailOn

    assert exit_code_for(g.verdict, FailOn.BLOCK) == 0


def test_gate_decide_failed_proof_and_incomplete() -> None:
    failed = audit("v2.0.0", [(A2, "add helper", "pa")], [],
                   verify_status=StageStatus.FAILED)
    assert decide(baseline(), failed).verdict is Verdict.FAIL
    incomplete = audit("v2.0.0", [(A2, "add helper", "pa")], [], extra={
        "build": StageResult("build", StageStatus.INCOMPLETE, not_checked=("nvcc missing",))})
    g = decide(baseline(), incomplete)
    assert g.verdict is Verdict.INCOMPLETE and exit_code_for(g.verdict) == 3


def test_gate_decide_blocks_are_never_carried() -> None:
    old = audit("v1", OLD_COMMITS, [finding("fb", B, Action.BLOCK),
                                    finding("fw", B, Action.BLOCK, waived=True, waiver="ok"),
                                    finding("fi", B, Action.INFO)])
    new_findings = [finding("fb", B2, Action.BLOCK),  # still blocking: counts again
                    finding("fw", B2, Action.REVIEW),  # waived block before, review now: carried
                    finding("fi", B2, Action.REVIEW)]  # info before, review now: stricter, counts
    diff = compare_findings(old.findings, new_findings)
    assert sorted(f.fingerprint[:2] for f in diff.new) == ["fb", "fi"]
    assert [f.fingerprint[:2] for f in diff.carried] == ["fw"]
    g = decide(old, audit("v2", [(B2, "spawn worker", "pb")], new_findings))
    assert g.verdict is Verdict.FAIL
    assert any("baseline's own verdict was FAIL" in r for r in g.reasons)


def test_gate_decide_deps_compare_needs_both_sides() -> None:
    x = decl("x", "1.0")
    d = compare_deps(None, deps_data(added=(x,)))
    assert not d.compared and d.added == (x,)
    d = compare_deps(deps_data(changed=({"name": "a", "old": "1", "new": "2"},)),
                     deps_data(changed=({"name": "a", "old": "1", "new": "2"},
                                        {"name": "b", "old": "1", "new": "3"}),
                               removed=(decl("c"),)))
    assert d.compared and [x["name"] for x in d.changed] == ["b"] and len(d.removed) == 1


def test_gate_decide_outputs_golden(tmp_path: Path) -> None:
    new = audit("v2.0.0", [(A2, "add helper", "pa"), (B2, "spawn worker", "pb2"),
                           (D2, "new [x](javascript:alert(1))", "pd")],
                [finding("f1", B2), finding("f3", D2, Action.BLOCK, message="<b>bold</b> \x1b[2J")],
                deps=deps_data(added=(ORJSON,),
                              vulnerabilities=(vuln("OSV-2", "orjson", "3.10.0"),)))
    g = decide(baseline(), new, baseline_path="old/audit.json")
    write_gate(g, tmp_path)
    data = json.loads((tmp_path / "gate.json").read_text())
    assert data["schema"] == GATE_SCHEMA and data["verdict"] == "FAIL"
    assert data["series"]["counts"] == {"unchanged": 1, "changed": 1, "added": 1, "dropped": 1}
    check_golden("gate.json", (tmp_path / "gate.json").read_text())
    md = (tmp_path / "gate.md").read_text()
    check_golden("gate.md", md)
    assert md == gate_markdown(g)
    assert "<b>" not in md and "](javascript" not in md
    lines = [t for _, t in range_diff_lines(g.series)]
    assert lines[0].startswith("1: ") and " = 1: " in lines[0]
    assert " ! 2: " in lines[1] and "-: ------- > 3: " in lines[2] and " < -: -------" in lines[3]


def test_gate_decide_stderr_summary_is_inert() -> None:
    import io

    from rich.console import Console

    from auditor.gate.render import print_gate

    hostile = "evil \x1b]8;;http://x\x07link\x1b]8;;\x07 [bold]x[/bold] token=sk-abcdefghijklmnopqrstu"
    new = audit("v2.0.0", [(A2, hostile, "pz")], [finding("f5", A2, message=hostile)])
    g = decide(baseline(), new)
    buf = io.StringIO()
    print_gate(Console(file=buf, width=200, force_terminal=True, highlight=False), g)
    text = buf.getvalue()
    assert "\x1b]" not in text and "\x07" not in text
    assert "sk-abcdefghijklmnopqrstu" not in text and "[REDACTED]" in text
    assert "[bold]x[/bold]" in text  # rich markup shown as text, not applied
    data = json.loads(json.dumps(g.to_json()))
    assert "sk-abcdefghijklmnopqrstu" not in json.dumps(data)
