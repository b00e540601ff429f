"""bandit's trigger words are read from the installed bandit at run time, not copied: every name
its tests look for has a word, the words follow bandit's own data, and anything unexpected (another
version, a plugin that no longer spells a word of ours) falls back to whole files."""

from __future__ import annotations

import hashlib

import pytest

from auditor.scan import banditwords
from auditor.scan.bandit import TESTS, BanditScanner
from auditor.scan.interface import Origin, ScanTarget

bandit = pytest.importorskip("bandit")


def test_every_name_a_test_needs_has_a_word() -> None:
    from bandit.blacklists import calls
    from bandit.plugins import injection_shell

    t = banditwords.triggers()
    assert t is not None and t.version == bandit.__version__
    names = {n for e in calls.gen_blacklist()["Call"] if e["id"] in TESTS for n in e["qualnames"]}
    shell = injection_shell.gen_config("shell_injection")
    names |= {n for key in ("subprocess", "shell", "no_shell") for n in shell[key]}
    assert names and {tuple(n.split(".")) for n in names} <= set(t.names)
    for name in names:
        assert set(name.split(".")) & t.words, name
    assert {"pickle", "marshal", "system", "subprocess", "exec", "eval", "requests", "load",
            "listen", "exec_command", "shell"} <= t.words
    assert "/tmp" in t.tmp_dirs and t.tmp_re.search("x = '/dev/shm/a'")
    assert t.tmp_start_re.search("x = '/va' 'r/tmp'")


def test_another_version_or_a_changed_plugin_reads_files_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert banditwords.triggers("0.0.1") is None
    banditwords.triggers.cache_clear()
    monkeypatch.setattr(banditwords.inspect, "getsource", lambda _obj: "def plugin(): pass\n")
    try:
        assert banditwords.triggers() is None
        scanner = BanditScanner()
        text = "def f():\n    return 1\n"
        t = ScanTarget(key="b:a.py", path="a.py", origin=Origin.BUNDLE,
                       sha256=hashlib.sha256(text.encode()).hexdigest(), family="python",
                       text=text)
        assert not scanner._views_sound()
        assert [r.how.value for r in scanner.plan([t]).readings["b:a.py"]] == ["whole"]
    finally:
        monkeypatch.undo()
        banditwords.triggers.cache_clear()
    assert banditwords.triggers() is not None


def test_a_word_is_a_part_of_its_name() -> None:
    assert banditwords.word_of("pickle.loads") == "pickle"
    assert banditwords.word_of("os.system") == "system"
    assert banditwords.word_of("six.moves.urllib.request.urlopen") == "urllib"
