"""The waiver stanzas `auditor waive` writes, and the policy functions the pipeline applies to every
stage (issue 33 items 5 and 6): written stanzas load back and match their finding whatever its
path or reason holds; applying waivers twice changes nothing; unused waivers are named."""

from __future__ import annotations

import datetime as dt
import fnmatch
from pathlib import Path

import pytest

from auditor.errors import InputError
from auditor.model import Action, AuditResult, Category, Finding, Severity, StageResult, StageStatus
from auditor.policy import Waiver, apply_waivers, load_waivers, unused_waivers
from auditor.waive import (
    WaiverRequest,
    check_waivers_text,
    find_findings,
    glob_literal,
    waiver_text,
)

TODAY = dt.date(2026, 12, 1)


def _f(rule: str = "network.python.requests", path: str = "engine/a.py",
       fp: str = "ab" * 16, **kw: object) -> Finding:
    base: dict[str, object] = dict(rule=rule, category=Category.NETWORK, severity=Severity.HIGH,
                                   action=Action.BLOCK, path=path, line=3, commit="c" * 40,
                                   message="outbound", scanner="semgrep", fingerprint=fp)
    base.update(kw)
    return Finding(**base)  # type: ignore[arg-type]


def _audit(*findings: Finding) -> AuditResult:
    from auditor.model import Verdict

    return AuditResult(Verdict.FAIL, (), {"scan": StageResult("scan", StageStatus.OK,
                                                              findings=findings)})


def _req(*fps: str, reason: str = "ok", expires: dt.date = TODAY) -> WaiverRequest:
    return WaiverRequest(fingerprints=fps, reason=reason, owner="sec@example.org",
                         expires=expires)


@pytest.mark.parametrize("path", ["engine/a.py", "odd/[x]*?.py", "sp ace/ü.py", 'q"uote\\.py'])
def test_a_stanza_loads_back_and_matches_only_its_finding(path: str, tmp_path: Path) -> None:
    f = _f(path=path)
    other = _f(path=path.replace(".py", "X.py"), fp=f.fingerprint)
    text = waiver_text(_audit(f), _req(f.fingerprint, reason='says "hi"\nand more'),
                       today=TODAY)
    file = tmp_path / "w.toml"
    file.write_text(text, encoding="utf-8")
    (w,) = load_waivers(file)
    assert w.matches(f) and w.reason == 'says "hi"\nand more'
    assert fnmatch.fnmatch(path, glob_literal(path))
    assert not w.matches(other)  # the path is a glob that matches only itself


def test_requests_are_checked() -> None:
    f = _f()
    audit = _audit(f, _f(fp="ab" * 8 + "cd" * 8, rule="network.python.urlopen"))
    with pytest.raises(InputError, match="empty"):
        waiver_text(audit, _req(f.fingerprint, reason="  "), today=TODAY)
    with pytest.raises(InputError, match="in the past"):
        waiver_text(audit, _req(f.fingerprint, expires=TODAY - dt.timedelta(days=1)),
                    today=TODAY)
    with pytest.raises(InputError, match="no finding"):
        waiver_text(audit, _req("0" * 32), today=TODAY)
    with pytest.raises(InputError, match="names 2 findings"):
        find_findings(audit, ["abababab"])  # a prefix both fingerprints share
    expired = _f(rule="policy.waiver-expired", fp="ee" * 16, category=Category.POLICY)
    with pytest.raises(InputError, match="renew or remove"):
        find_findings(_audit(expired), [expired.fingerprint])


def test_check_waivers_text_refuses_a_stanza_that_would_not_match() -> None:
    f = _f()
    with pytest.raises(InputError, match="would not match"):
        check_waivers_text(waiver_text(_audit(f), _req(f.fingerprint), today=TODAY), "t",
                           [_f(fp="00" * 16)])


def test_apply_waivers_twice_changes_nothing() -> None:
    live = Waiver("network.python.requests", "engine/*", "*", "ok", "o", TODAY)
    old = Waiver("network.python.urlopen", "engine/*", "*", "old", "o", TODAY - dt.timedelta(1))
    found = [_f(), _f(rule="network.python.urlopen", fp="cd" * 16)]
    once = apply_waivers(found, [live, old], today=TODAY)
    assert apply_waivers(once, [live, old], today=TODAY) == once
    assert [f.rule for f in once].count("policy.waiver-expired") == 1


def test_unused_waivers_name_what_matches_nothing() -> None:
    shown = _f(also=("network.bandit.b310-urlopen",))
    used = Waiver(shown.rule, shown.path, shown.fingerprint, "ok", "o", TODAY)
    merged_rule = Waiver("network.bandit.b310-urlopen", "engine/a.py", "*", "ok", "o", TODAY)
    stale = Waiver("network.python.requests", "engine/gone.py", "*", "old", "o", TODAY)
    expired_but_matching = Waiver(shown.rule, "engine/*", "*", "x", "o", TODAY - dt.timedelta(9))
    out = unused_waivers([shown], [used, merged_rule, stale, expired_but_matching])
    assert [(f.rule, f.path, f.action) for f in out] == [
        ("policy.waiver-unused", "engine/gone.py", Action.INFO)]
    assert "engine/gone.py" in out[0].message and "matches no finding" in out[0].message
    assert "not every stage" in unused_waivers([], [stale], partial=True)[0].message
