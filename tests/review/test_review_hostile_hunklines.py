"""Packets show each hunk line on its own line (issue 30 item 17): escaping is applied per line,
so newlines stay line breaks, while CR, ESC, BEL, NUL and Unicode line separators inside a line
are shown as escapes; the ``@@`` line's function context is escaped too and cannot end the fence."""

from __future__ import annotations

import re
from pathlib import Path

from support import GitRepo, export_tree, write_spec

from auditor.review.commands import plan
from auditor.spec import load_spec
from auditor.stage import Options

CODE = "".join(f"line_{i} = {i}\n" for i in range(1, 8))
NEW = ("def f():\n    a = 1\n    b = 2\r\n    c = '\x1b[2Jx'\n    d = '\u2028' # sep\n"
       "    e = '\x07\x0c'\n" + CODE)


def _packets(tmp_path: Path) -> tuple[str, str]:
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", files={"a.py": "def f():\n    a = 0\n" + CODE,
                               "b.py": "def g():\n" + CODE + "    pass\n"})
    repo.tag("v1")
    repo.checkout("s", new=True)
    c1 = repo.commit("change", files={"a.py": NEW,
                                      "b.py": "def g():\n" + CODE + "    return 1  # new\n"})
    spec = write_spec(tmp_path / "audit.toml", {
        "engine": {"profile": "vllm", "version": "1"},
        "upstream": {"repo": str(repo.path), "ref": "v1"},
        "patches": {"ref": "s", "commits": [c1]},
        "bundle": {"path": str(export_tree(repo, "s", tmp_path / "b"))},
        "review": {"file": "reviews/"},
    })
    plan(load_spec(spec), ["ann"], tmp_path / "out", scan=False, options=Options())
    out = tmp_path / "out"
    return (out / "packet-ann.md").read_text(), (out / "packet-ann.html").read_text()


def test_each_hunk_line_is_its_own_line(tmp_path: Path) -> None:
    md, html = _packets(tmp_path)
    assert "\\x0a" not in md and "\\x0a" not in html
    fences = re.findall(r"(`{3,})diff\n(.*?)\n\1\n", md, flags=re.S)
    assert len(fences) == 2
    body_a = next(b for _, b in fences if "a = 1" in b)
    lines = body_a.split("\n")
    assert lines[0].startswith("@@")
    assert "-    a = 0" in lines and "+    a = 1" in lines
    assert "+    b = 2\\x0d" in lines  # the CR inside the line, shown
    assert "+    c = '\\x1b[2Jx'" in lines
    assert "+    d = '\\u2028' # sep" in lines
    assert "+    e = '\\x07\\x0c'" in lines
    assert " line_1 = 1" in lines  # context lines kept as lines too
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u2028]", md + html)
    # in HTML each line is its own span
    assert "<span class=\"add\">+    a = 1</span>" in html
    assert "<span class=\"del\">-    a = 0</span>" in html


def test_the_function_context_of_the_header_cannot_close_the_fence() -> None:
    # git here runs without function context (auditor's sealed git), so the header is built as
    # git would print it with one
    from auditor.review.hunks import Hunk, HunkKind
    from auditor.review.packets import _diff_html, _header, fence

    h = Hunk(id="x", digest="d", path="c.py", commit="c" * 40, kind=HunkKind.TEXT, start=1,
             end=2, added=1, removed=1, header="@@ -1,2 +1,2 @@ def h():  # `````` \x1b[31m\u2028",
             text="-a\n+b")
    header = _header(h)
    assert "\x1b" not in header and "\u2028" not in header and "\\x1b" in header
    assert len(fence(header + "\n-a\n+b")) == 7
    assert "\x1b" not in _diff_html(h)
