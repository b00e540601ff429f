"""Bandit's views (``auditor.scan.banditviews``): the function bodies none of its tests can match
left out. The real bandit is run over each view and over the file, with the scanner's own tests,
and must give the same findings and errors, on hostile shapes written here (a test's word bound
by an import far away, a temporary folder spelled across two string literals or by an escape,
an identifier in a compatibility form, ...) and on real code (this project's own sources and the
rule fixtures)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from auditor.scan.bandit import BanditScanner
from auditor.scan.banditviews import bandit_view, nothing_to_match
from auditor.scan.interface import Origin, RawFinding, ScannerRun, ScanTarget

ROOT = Path(__file__).resolve().parents[2]
PAD = "".join(f"\n\ndef padding_{i}(x):\n    y = x + {i}\n    return y * 2\n" for i in range(30))

# each function marked "# B..." is one bandit reports; the padding functions are left out
HOSTILE = '''\
import os
import torch
from torch import load as fetch_weights
import subprocess as sp
from os import system as run_it
from requests import get as http_get
''' + PAD + '''

def alias_load(path):
    return fetch_weights(path)  # B614, the name bound at the top


def alias_subprocess(cmd):
    return sp.call(cmd)  # B603


def alias_system(cmd):
    run_it(cmd)  # B605


def alias_get(url):
    return http_get(url)  # B113


def scratch_two_literals():
    return open("/t" "mp/x", "w")  # B108


def scratch_after_brace(x):
    return f"{x}/t" "mp/y"  # B108: the text after the brace starts a constant


def scratch_hex_escape():
    return "/\\x74mp/z"  # B108


def scratch_octal_escape():
    return "/var/\\164mp/z"  # B108


def scratch_continued():
    return "/dev/s\\
hm/w"  # B108 on the line above


def imports_inside(data):
    import pickle as pk
    return len(data)


def uses_an_alias_bound_in_another_function(data):
    return pk.loads(data)  # B301: bandit's aliases are the file's


class Holder:
    X = eval("1")  # B307 in a class body

    def method(self, p):
        return fetch_weights(p)  # B614


def default_argument(x=eval("2")):  # B307 in the header
    return x


def nested():
    def inner(c):
        os.system(c)  # B605
    return inner
'''

# a compatibility form of "eval": Python reads it as eval, bandit too
NFKC = ("def run(code):\n    return \uff45\uff56\uff41\uff4c(code)  # B307\n"
        + "\n\ndef described():\n    \"\"\"Caf\u00e9 \u00d7 2.\"\"\"\n    return 2\n" + PAD)

# no ``import torch`` or ``import yaml``: a ``load`` cannot be B614's or B506's, but a ``load``
# an import binds to pickle's is B301's
NO_TORCH = "import json\n\n\ndef read(f):\n    return json.load(f)\n" + PAD
PICKLE_LOAD = ("from pickle import load\n\n\ndef unpickle(f):\n    return load(f)  # B301\n"
               + PAD)

BIDI = PAD + '\n\ndef f():\n    return "\u202e"  # B613 reads the raw lines\n'

BROKEN = PAD + "\n\ndef g(:\n    pass\n"

# bandit reads bytes under their coding declaration: such a file is given whole
LATIN = "# -*- coding: latin-1 -*-\n" + PAD


# none of what any test needs, anywhere: bandit is not given these
QUIET = "import json\n\n\ndef f(x):\n    return json.dumps(x)  # loads nothing\n" + PAD
QUIET_BROKEN = "def g(:\n    return 1\n"  # but bandit says it cannot parse it


def target(path: str, text: str) -> ScanTarget:
    return ScanTarget(key=f"b:{path}", path=path, origin=Origin.BUNDLE,
                      sha256=hashlib.sha256(text.encode()).hexdigest(), family="python", text=text)


def found(run: ScannerRun) -> dict[str, list[tuple[str, int, int, str]]]:
    def row(f: RawFinding) -> tuple[str, int, int, str]:
        return (f.rule, f.line, f.end_line, f.message)
    return {k: sorted(map(row, v)) for k, v in run.findings.items()}


def both_ways(targets: list[ScanTarget], tmp_path: Path) -> tuple[ScannerRun, ScannerRun]:
    viewed = BanditScanner(views=True).scan(targets, tmp_path / "views")
    whole = BanditScanner(views=False).scan(targets, tmp_path / "whole")
    return viewed, whole


def test_hostile_shapes_same_findings_with_views(tmp_path: Path) -> None:
    targets = [target("hostile.py", HOSTILE), target("nfkc.py", NFKC), target("bidi.py", BIDI),
               target("broken.py", BROKEN), target("no_torch.py", NO_TORCH),
               target("pickle_load.py", PICKLE_LOAD), target("latin.py", LATIN),
               target("torch_too.py", "import torch\n" + NO_TORCH),
               target("quiet.py", QUIET), target("quiet_broken.py", QUIET_BROKEN)]
    viewed, whole = both_ways(targets, tmp_path)
    assert found(viewed) == found(whole)
    assert {k: v.reason for k, v in viewed.errors.items()} == \
        {k: v.reason for k, v in whole.errors.items()}
    assert set(whole.errors) == {"b:broken.py", "b:quiet_broken.py"}
    assert found(viewed)["b:quiet.py"] == []
    # bandit read the views (written by a process of their own) and the whole files
    staged = tmp_path / "views" / "bandit" / "t" / "b"
    assert "y * 2" not in (staged / "hostile.py").read_text()
    assert "y * 2" in (staged / "bidi.py").read_text()
    assert "y * 2" in (staged / "latin.py").read_text()
    assert "y * 2" in (tmp_path / "whole" / "bandit" / "t" / "b" / "hostile.py").read_text()
    assert sorted(p.name for p in staged.iterdir()) == sorted(t.path for t in targets)  # no temp
    # every marked line is one bandit reports
    marked = {n - ("above" in line) for n, line in enumerate(HOSTILE.split("\n"), start=1)
              if "# B" in line}
    lines = {f[1] for f in found(whole)["b:hostile.py"]}
    assert marked <= lines, sorted(marked - lines)
    assert any("b307" in f[0] for f in found(whole)["b:nfkc.py"])
    assert any("b613" in f[0] for f in found(whole)["b:bidi.py"])
    assert any("b301" in f[0] for f in found(whole)["b:pickle_load.py"])


def test_views_leave_out_what_cannot_match() -> None:
    view = bandit_view(HOSTILE)
    assert view is not None
    lines, original = view.split("\n"), HOSTILE.split("\n")
    assert len(lines) == len(original)
    assert "y * 2" not in view  # every padding body left out
    for n, line in enumerate(original):
        if "# B" in line:
            assert lines[n] == line  # every function with a finding kept
    # a compatibility form keeps its function; the padding of that file still goes
    nfkc = bandit_view(NFKC)
    assert nfkc is not None and "\uff45\uff56\uff41\uff4c(code)" in nfkc and "y * 2" not in nfkc
    assert "Caf\u00e9" not in nfkc  # other text outside ASCII is no reason to keep a body
    no_torch = bandit_view(NO_TORCH)
    assert no_torch is not None and "json.load" not in no_torch
    pickle_load = bandit_view(PICKLE_LOAD)
    assert pickle_load is not None and "return load(f)  # B301" in pickle_load
    assert "json.load" in (bandit_view("import torch\n" + NO_TORCH) or "")
    assert bandit_view(BIDI) is None  # B613 reads the raw file
    assert bandit_view(BROKEN) is None  # bandit's own syntax error, as before
    assert bandit_view("X = 1\n") is None  # no function: nothing to leave out


def test_files_no_test_can_match_in_are_not_given_to_bandit(tmp_path: Path) -> None:
    assert nothing_to_match(QUIET) and nothing_to_match(PAD)
    assert not nothing_to_match(QUIET_BROKEN)  # bandit reports it cannot parse it
    for text in (HOSTILE, NFKC, BIDI, PICKLE_LOAD, NO_TORCH, "X = '/t' 'mp'\n",
                 "print('\\x2ftmp')\n", "os.chmod(p, 0o777)\n", "t.extractall()\n",
                 "from x import load\n", "s.listen()\n"):
        assert not nothing_to_match(text), text
    # the views' own process says which, and only of the files it was given
    files = {"a/quiet.py": QUIET, "a/hostile.py": HOSTILE, "b/pad.py": PAD,
             "b/latin.py": LATIN, "b/broken.py": QUIET_BROKEN}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    how = BanditScanner()._rewrite_as_views(tmp_path, sorted(files))
    assert {rel for rel, h in how.items() if h == "N"} == {"a/quiet.py", "b/pad.py"}
    assert how["b/latin.py"] == "W"  # bandit reads another text
    assert how["a/hostile.py"] in ("V", "W") and set(how) == set(files)
    assert (tmp_path / "b/pad.py").read_text(encoding="utf-8") == PAD  # left as it is


def test_bandits_side_by_side_over_shares_answer_as_one(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.scan import staging

    targets = [target("hostile.py", HOSTILE), target("nfkc.py", NFKC), target("bidi.py", BIDI),
               target("broken.py", BROKEN), target("pickle_load.py", PICKLE_LOAD),
               target("quiet.py", QUIET), target("quiet_broken.py", QUIET_BROKEN)]
    one = BanditScanner().scan(targets, tmp_path / "one")
    monkeypatch.setattr(staging, "SHARE_MIN", 1)
    viewed: list[list[str]] = []
    banditted: list[list[str]] = []
    real_views, real_run = BanditScanner._rewrite_as_views, BanditScanner._run

    def views(self, root, rels):  # noqa: ANN001, ANN202 - the real method, its shares noted
        viewed.append(rels)
        return real_views(self, root, rels)

    def run(self, root, rels):  # noqa: ANN001, ANN202
        banditted.append(rels)
        return real_run(self, root, rels)

    monkeypatch.setattr(BanditScanner, "_rewrite_as_views", views)
    monkeypatch.setattr(BanditScanner, "_run", run)
    shared = BanditScanner(processes=2).scan(targets, tmp_path / "two")
    assert len(viewed) == 2 and sorted(sum(viewed, [])) == sorted(f"b/{t.path}" for t in targets)
    # the quiet file is not given to bandit; the rest shared again
    assert len(banditted) == 2 and "b/quiet.py" not in sum(banditted, [])
    assert found(shared) == found(one) and any(found(one).values())
    assert {k: v.reason for k, v in shared.errors.items()} == \
        {k: v.reason for k, v in one.errors.items()} != {}


@pytest.mark.parametrize("where", ["auditor", "policies", "tests/scan"])
def test_real_code_same_findings_with_views(where: str, tmp_path: Path) -> None:
    files = sorted((ROOT / where).rglob("*.py"))
    targets = [target(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in files]
    assert targets
    viewed, whole = both_ways(targets, tmp_path)
    assert found(viewed) == found(whole)
    assert {k: v.reason for k, v in viewed.errors.items()} == \
        {k: v.reason for k, v in whole.errors.items()}
    assert any(found(whole).values())  # the code has findings to compare
    assert sum(bandit_view(t.text) is not None for t in targets) > len(targets) // 4
