"""The scan cache's key covers every module that can change an answer and auditor's version: a bug
fixed in gating, staging or an output parser must not keep serving the old answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import auditor
from auditor.scan import cache


def test_the_key_covers_the_scan_modules_and_their_helpers() -> None:
    names = {p.relative_to(Path(auditor.__file__).parent).as_posix()
             for p in cache.covered_files()}
    for module in ("scan/gating.py", "scan/staging.py", "scan/semgrep.py", "scan/bandit.py",
                   "scan/plan.py", "scan/prefilter.py", "scan/taintviews.py",
                   "scan/banditviews.py", "scan/diffslice.py", "scan/pyast.py",
                   "scan/slicecache.py", "scan/pool.py", "scan/cache.py", "scan/interface.py",
                   "textsafe.py"):
        assert module in names, module


def test_a_changed_module_or_version_changes_every_key(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    files = cache.covered_files()
    base = cache.digest_of(auditor.__version__, files)
    assert cache.digest_of(auditor.__version__ + "+1", files) != base
    # the same files with one parser changed (a copy of the package: the tree is not touched)
    pkg = Path(auditor.__file__).resolve().parent
    copy = tmp_path / "auditor"
    shutil.copytree(pkg, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "_PACKAGE", copy)
    copied = cache.covered_files()
    assert cache.digest_of(auditor.__version__, copied) == base
    (copy / "scan" / "gating.py").write_text(
        (copy / "scan" / "gating.py").read_text(encoding="utf-8") + "\n# fixed\n",
        encoding="utf-8")
    assert cache.digest_of(auditor.__version__, copied) != base
    # and the key itself takes it
    monkeypatch.setattr(cache, "code_digest", lambda: "other")
    key = cache.cache_key("a.py", "0" * 64, "semgrep", "1.0", "opts")
    monkeypatch.undo()
    assert key != cache.cache_key("a.py", "0" * 64, "semgrep", "1.0", "opts")
