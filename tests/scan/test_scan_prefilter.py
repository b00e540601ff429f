"""The per-rule prefilter (metadata.prefilter): what it admits, that the rules it gates keep every
fixture finding when auditor runs semgrep with it, and how the rules document is rewritten."""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path
from typing import Any

import pytest
from test_scan_rules import ANNOTATION_RE, needs_semgrep

from auditor.scan import rules as rules_mod
from auditor.scan.gating import Staging, gated_rules, stage_by_gates
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.prefilter import Prefilter, _call_re, called, has_word, parse_groups
from auditor.scan.semgrep import SemgrepScanner

GATED = {m.id: m for m in rules_mod.load_rule_meta().values() if m.prefilter}


def target(rel: str, text: str) -> ScanTarget:
    return ScanTarget(key=f"b:{rel}", path=rel, origin=Origin.BUNDLE,
                      sha256=hashlib.sha256(text.encode()).hexdigest(), family="python", text=text)


def test_the_costly_taint_rules_are_gated() -> None:
    assert {"prompt-logging.python.request-content-sent", "obfuscation.python.exec-decoded",
            "prompt-logging.python.request-content-logged",
            "secret-access.python.secret-exfiltration",
            "unsafe-deserialization.python.untrusted-channel"} <= set(GATED)


def test_words_are_whole_identifiers() -> None:
    assert has_word("t = threading.Thread()\nx = s.read()", "read")
    assert not has_word("t = threading.Thread()\nalready = 1", "read")
    assert not has_word("x = sock.recv_into(b)", "recv")
    assert has_word("recv", "recv") and has_word("(recv)", "recv")
    pf = Prefilter((("torch+load",), ("::",)))
    assert pf.admits("from torch import load\ny = x[::-1]")
    assert pf.admits("import torch\nload = 1\ny = x[:  # keep\n   :-1]")
    assert not pf.admits("import torch\ny = x[::-1]")  # no 'load'
    assert not pf.admits("from torch import load\ny = x[:1]")


def test_punctuation_items_stay_linear_on_comment_banners() -> None:
    """A line of many '#' after a colon once took seconds per file (exponential backtracking)."""
    import time

    text = "def f():\n    " + "#" * 60 + "\n    return 1\n" * 200
    start = time.process_time()
    assert not Prefilter((("::",),)).admits(text)
    assert time.process_time() - start < 1.0


def test_a_called_word_is_the_word_in_a_file_and_a_call_at_a_sink() -> None:
    pf = Prefilter((("prompt",), ("info(", "requests")), sink=1)
    assert pf.admits("prompt = 1\ninfo = 2")  # a file: the word alone
    called = ["logger.info(x)", "(logger.info)(x)", "logger.info \\\n    (x)",
              "(logger.info  # why\n (x))", "requests.post(x)"]
    for own in called:
        assert pf.admits_at_sink(own, ""), own
    for own in ["info = x", "self.info", "return info", "loginfo(x)", "x.information(y)"]:
        assert not pf.admits_at_sink(own, ""), own
    # a name an import of the word binds, called or not: semgrep resolves it
    assert pf.admits_at_sink("say(x)", "from logging import info as say")
    assert Prefilter((("a",),)).admits_at_sink("anything", "")  # no sink group: every function


def test_called_is_the_look_behind_pattern_on_every_spelling() -> None:
    """:func:`called` (the word's letters searched first, the character before checked by hand)
    answers as the pattern with its look-behind does, on calls, near misses, words inside longer
    identifiers, calls split by comments and continuations, and a match that starts inside a
    comment of an earlier, refused one."""
    pieces = ["open", "xopen", "open_", "_open", "opener", "(", ")", " ", "\n", "\\\n",
              "# open(\n", "#\n", "\t", ".", "é", "1", "=", "'open('"]
    texts = {"", "open", "open(", "(open)(x)", "xopen # open(\n (", "f.open ( x )",
             "open\\\n  (x)", "open # c\n(", "éopen(", "1open(", "open)(", "openopen("}
    rnd = random.Random(7)
    for _ in range(4000):
        texts.add("".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 7))))
    for text in sorted(texts):
        for word in ("open", "o", "run"):
            assert called(text, word) == (_call_re(word).search(text) is not None), (text, word)


@pytest.mark.parametrize("raw", [[], [[]], ["exec"], [["ex ec"]], [["a+"]], [[1]], "exec",
                                 [["a+b("]], [["1a("]], [["a(b"]]])
def test_malformed_prefilters_are_refused(raw: object) -> None:
    assert parse_groups(raw) is None


def test_every_hostile_fixture_passes_its_rules_prefilter() -> None:
    """The cheap, offline half: a fixture with a ``# ruleid:`` line for a gated rule is admitted."""
    for path in sorted(rules_mod.FIXTURES_DIR.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            m = ANNOTATION_RE.search(line)
            if m and m.group(1) == "ruleid":
                for rid in (r.strip() for r in m.group(2).split(",")):
                    if rid in GATED:
                        assert Prefilter(GATED[rid].prefilter).admits(text), (rid, path)


def test_a_signature_sets_every_bit_a_prefilter_admits() -> None:
    """The signature looks words up in the text's identifiers (found once): never fewer than
    the whole-word test admits, and the same on ordinary code."""
    from auditor.scan.gating import prefiltered
    from auditor.scan.prefilter import signature

    metas = prefiltered(rules_mod.load_rule_meta())
    pfs = [Prefilter(m.prefilter, m.sink_group) for m in metas]
    texts = [p.read_text(encoding="utf-8") for p in sorted(rules_mod.FIXTURES_DIR.rglob("*.py"))]
    texts += ["import os\nos.execv(p, a)\n", "1os = x; run()\n", "éos.run()\n",
              "y = x[: # c\n :-1]\nexec(y)\n"]
    for text in texts:
        exact = sum(1 << i for i, pf in enumerate(pfs) if pf.admits(text))
        got = signature(text, pfs)
        assert got & exact == exact, text[:60]
        if "1os" not in text and "éos" not in text:
            assert got == exact, text[:60]


def test_gated_rules_include_only_admitted_files_and_drop_rules_with_none(
        tmp_path: Path) -> None:
    rule = GATED["unsafe-deserialization.python.untrusted-channel"]
    meta = rules_mod.load_rule_meta()
    doc = {"rules": [{"id": rule.id, "languages": ["python"], "mode": "taint"},
                     {"id": "api-exposure.python.bind-all-interfaces", "languages": ["python"]}]}
    texts = {"vllm/a.py": "import pickle\nd = pickle.loads(s.recv(9))\n", "vllm/b.py": "x = 1\n"}

    def gate(texts: dict[str, str], where: str) -> tuple[Staging, dict[str, Any]]:
        staging = stage_by_gates([target(rel, text) for rel, text in texts.items()],
                                 tmp_path / where, lambda t: t.text, meta)
        return staging, gated_rules(doc, meta, staging)

    staging, out = gate(texts, "both")
    (a_rel,) = [rel for rel, t in staging.files.items() if t.path == "vllm/a.py"]
    assert out["rules"][0]["paths"] == {"include": [f"/{a_rel.split('/')[0]}/"]}
    assert "paths" not in out["rules"][1]  # no prefilter: every file
    _, only_b = gate({"vllm/b.py": texts["vllm/b.py"]}, "b")
    assert [r["id"] for r in only_b["rules"]] == ["api-exposure.python.bind-all-interfaces"]
    # a name that would need escaping in a path pattern leaves the rule ungated
    _, odd = gate({**texts, "vllm/c[1].py": "x = 2\n"}, "odd")
    assert "paths" not in odd["rules"][0]


@needs_semgrep
def test_auditor_semgrep_with_prefilters_finds_every_fixture_line(tmp_path: Path) -> None:
    """The real semgrep, run as the scan runs it (gated), over the Python fixtures plus files the
    gated rules cannot match: every ``# ruleid:`` line of a gated rule is still reported."""
    targets = [target(p.relative_to(rules_mod.FIXTURES_DIR).as_posix(),
                      p.read_text(encoding="utf-8"))
               for p in sorted(rules_mod.FIXTURES_DIR.rglob("*.py"))]
    targets.append(target("plain/maths.py", "def add(a, b):\n    return a + b\n"))
    scanner = SemgrepScanner()
    run = scanner.scan(targets, tmp_path)
    assert not run.errors
    config = (tmp_path / "semgrep" / "rules.json").read_text(encoding="utf-8")
    assert '"include"' in config  # the run was really gated
    for t in targets:
        lines = t.text.splitlines()
        found = {(f.rule, f.line) for f in run.findings[t.key]}
        for n, line in enumerate(lines, start=1):
            m = ANNOTATION_RE.search(line)
            if not (m and m.group(1) == "ruleid"):
                continue
            for rid in (r.strip() for r in m.group(2).split(",")):
                if rid in GATED:
                    assert any(r == rid and ln in (n, n + 1) for r, ln in found), (t.path, n, rid)
    assert not any(re.match(r"^(\w|-)+\.python\.", f.rule)
                   for f in run.findings["b:plain/maths.py"])


def test_include_cover_names_whole_folders_only_when_every_candidate_is_kept() -> None:
    from auditor.scan.prefilter import include_cover

    cands = ["g1/b/a.py", "g1/b/x/c.py", "g2/b/d.py", "g2/b/e.py", "top.py"]
    assert include_cover(["g1/b/a.py", "g1/b/x/c.py", "top.py"], cands) == ["/g1/", "/top.py"]
    assert include_cover(["g1/b/a.py", "g2/b/d.py"], cands) == ["/g1/b/a.py", "/g2/b/d.py"]
    assert include_cover(["g1/b/x/c.py", "g2/b/d.py", "g2/b/e.py"], cands) == [
        "/g1/b/x/", "/g2/"]
    assert include_cover([], cands) == []


def test_staging_by_gates_lets_each_gated_rule_name_folders(tmp_path: Path) -> None:
    """Files are staged in one folder per set of prefiltered rules that admit them; a gated rule
    then lists folders (a few patterns, not one per file: semgrep's front end matches each
    pattern against every target in Python), and still exactly the files it admits."""
    meta = rules_mod.load_rule_meta()
    texts = {"vllm/chan.py": "import pickle\nd = pickle.loads(s.recv(9))\n",
             "vllm/chan2.py": "import pickle\nd = pickle.loads(sock.recv(4))\n",
             "vllm/plain.py": "x = 1\n", "vllm/plain2.py": "y = 2\n"}
    staging = stage_by_gates([target(rel, text) for rel, text in texts.items()],
                             tmp_path, lambda t: t.text, meta)
    staged = staging.files
    assert len(staged) == 4 and all((tmp_path / rel).is_file() for rel in staged)
    assert len({rel.split("/")[0] for rel in staged}) == 2  # two admission sets, two folders
    rid = "unsafe-deserialization.python.untrusted-channel"
    doc = {"rules": [{"id": rid, "languages": ["python"], "mode": "taint"}]}
    include = gated_rules(doc, meta, staging)["rules"][0]["paths"]["include"]
    assert len(include) == 1 and include[0].endswith("/")
    covered = {rel for rel in staged if f"/{rel}".startswith(include[0])}
    assert {staged[rel].path for rel in covered} == {"vllm/chan.py", "vllm/chan2.py"}
