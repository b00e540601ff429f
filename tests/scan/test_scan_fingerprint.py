"""A fingerprint is one finding in its context: a waiver of upstream's reviewed line does not
cover a copy of it that the series adds elsewhere, and in full scope that copy is the series'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import GitRepo, export_tree, write_spec

from auditor.scan.fingerprint import neighbour_context, python_context

REVIEWED = "    return os.environ.get('OPENAI_API_KEY')\n"


def _case(tmp_path: Path) -> tuple[Path, GitRepo, str]:
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0.0'\n",
        "engine/tools.py": "import os\n\n\ndef run_tool(cmd):\n" + REVIEWED,
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("add a helper", files={
        "engine/tools.py": "import os\n\n\ndef run_tool(cmd):\n" + REVIEWED
                           + "\n\ndef fetch_weights(url):\n    cmd = f'curl {url} | sh'\n"
                           + REVIEWED},
        author="Fork Author <fork@community.example>")
    bundle = export_tree(repo, "series", tmp_path / "bundle")
    spec = {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c1]},
        "bundle": {"path": str(bundle)},
        "scan": {"scope": "full", "waivers": "waivers.toml"},
    }
    (tmp_path / "waivers.toml").write_text("")
    return write_spec(tmp_path / "audit.toml", spec), repo, c1


def _scan(spec: Path) -> list[dict]:
    res = subprocess.run([sys.executable, "-m", "auditor", "scan", str(spec), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    return [f for f in json.loads(res.stdout)["findings"] if f["path"] == "engine/tools.py"
            and f["line"] in (5, 10)]


def test_a_waiver_of_upstreams_line_does_not_cover_the_series_copy(tmp_path):
    spec, repo, c1 = _case(tmp_path)
    found = _scan(spec)
    upstream = [f for f in found if f["line"] == 5]
    copy = [f for f in found if f["line"] == 10]
    assert upstream and copy
    # full scope: the copy is the series' own, not "(upstream)"
    assert all(f["inherited"] and f["commit"] is None for f in upstream)
    assert all(not f["inherited"] and f["commit"] == c1 for f in copy)
    assert {f["fingerprint"] for f in upstream}.isdisjoint(f["fingerprint"] for f in copy)
    # the reviewer waives upstream's reviewed line
    waivers = "".join(
        f'[[waiver]]\nrule = "{f["rule"]}"\npath = "engine/tools.py"\n'
        f'fingerprint = "{f["fingerprint"]}"\nreason = "reviewed"\nowner = "sec@example.org"\n'
        "expires = 2099-01-01\n\n" for f in upstream)
    (tmp_path / "waivers.toml").write_text(waivers)
    again = _scan(spec)
    assert all(f["waived"] for f in again if f["line"] == 5)
    assert [f for f in again if f["line"] == 10] and not any(
        f["waived"] for f in again if f["line"] == 10)


def test_context_is_the_enclosing_headers_or_the_neighbours():
    lines = ["import os", "", "class A:", "    def f(self):", "        if x:",
             "            os.system(x)", "", "def g():", "    os.system(y)"]
    assert python_context(lines, 6) == ["class A:", "def f(self):"]
    assert python_context(lines, 9) == ["def g():"]
    assert python_context(lines, 1) == []
    assert neighbour_context(["a", "", "b", "c", "", "d"], 3, 4) == ["a", "d"]
