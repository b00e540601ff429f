"""Packets from a hostile series: code, paths and subjects stay inert in Markdown and HTML."""

from __future__ import annotations

import re
from pathlib import Path

from support import GitRepo, export_tree, write_spec

from auditor.model import Action, Category, Finding, Severity
from auditor.review.commands import plan
from auditor.review.packets import Findings, attach_findings, packet_html, packet_markdown
from auditor.spec import load_spec
from auditor.stage import Options

EVIL_CODE = ("x = 1\n````\n</pre><script>alert(1)</script>\n\x1b]8;;http://evil\x07hi\n"
             "[click](javascript:alert(1))\n")


def test_hostile_series_is_inert_in_packets(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", files={"a.py": "a = 0\n"})
    repo.tag("v1")
    repo.checkout("s", new=True)
    c1 = repo.commit("<img src=x onerror=alert(1)> [x](javascript:y) \x1b[2J",
                     files={"evil`<b>.py": EVIL_CODE, "a.py": "a = 1\n"})
    spec = write_spec(tmp_path / "audit.toml", {
        "engine": {"profile": "vllm", "version": "1"},
        "upstream": {"repo": str(repo.path), "ref": "v1"},
        "patches": {"ref": "s", "commits": [c1]},
        "bundle": {"path": str(export_tree(repo, "s", tmp_path / "b"))},
        "review": {"file": "reviews/"},
    })
    loaded = load_spec(spec)
    assert loaded.review is not None and loaded.review.folder
    p, written = plan(loaded, ["ann"], tmp_path / "out", scan=False, options=Options())
    md = (tmp_path / "out" / "packet-ann.md").read_text()
    html = (tmp_path / "out" / "packet-ann.html").read_text()
    assert "\x1b" not in md and "\x1b" not in html and "\x07" not in md
    # the diff sits in a fence longer than the four backticks inside it
    assert "`````diff" in md
    outside = re.sub(r"`````diff.*?\n`````\n", "", md, flags=re.S)
    assert not re.search(r"(?<!\\)<(script|img)|(?<!\\)\]\(javascript", outside)
    assert "\\<img src=x" in outside  # the subject is there, escaped
    assert "<script>" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html
    assert len(written) == 3

    # a finding on the hostile file is shown on its hunk, escaped
    h = next(h for h in p.series.hunks if h.path.startswith("evil"))
    f = Finding(rule="network.x", category=Category.NETWORK, severity=Severity.HIGH,
                action=Action.BLOCK, path=h.path, line=3, commit=c1,
                message="<script>bad</script>", scanner="semgrep", fingerprint="f" * 32)
    found = attach_findings(p.series.hunks, [f], "test")
    assert found.by_hunk[h.digest] == (f,)
    packet = p.packets[0]
    assert "&lt;script&gt;bad" in packet_html(p, packet, found, "audit.toml")
    assert "\\<script\\>bad" in packet_markdown(p, packet, found, "audit.toml")
    assert Findings({}, "x").by_hunk == {}
