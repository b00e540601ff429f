"""Secrets are redacted at one boundary (issue 32, item 4), read from the sources: ``redact(`` and
``redact_tree(`` are called only in :mod:`auditor.redaction` (its helpers for the sites that must
redact first: a cut, a hash) and in the boundary modules below. Anywhere else a value reaches the
output through one of them: the writers (``Redacted`` only), the console (``console_safe``), the
formatters' ``redacted(audit)``, a review packet's ``redacted_plan``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import auditor
from auditor.outputs import write_audit_file, write_stdout
from auditor.redaction import (
    UnredactedError,
    cut,
    cut_utf8,
    last_lines,
    redacted_lines,
    split_redacted,
)

PKG = Path(auditor.__file__).resolve().parent

#: module -> why it may redact (the boundary, kept to these)
BOUNDARY = {
    "redaction.py": "the detectors, dump_json, redacted_text, and cut/last_lines/fingerprint_input",
    "textsafe.py": "console_safe (the console's one function) and excerpt (redacts, then cuts)",
    "report/interface.py": "redacted(audit) and redacted_stage: the one pass a document reads",
    "review/packets.py": "redacted_plan: the one pass a review packet reads",
}
NAMES = {"redact", "redact_tree"}

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _calls(path: Path) -> list[int]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
                else None
            if name in NAMES:
                out.append(node.lineno)
    return out


def test_redact_is_called_only_at_the_boundary() -> None:
    stray = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).as_posix()
        if rel not in BOUNDARY and (lines := _calls(p)):
            stray[rel] = lines
    assert not stray, (f"redact()/redact_tree() called outside the boundary: {stray}; let the "
                       "value reach a boundary that redacts (see auditor/redaction.py), or use "
                       "a helper there (cut, last_lines, fingerprint_input) before a cut or hash")


def test_the_boundary_modules_exist_and_redact() -> None:
    for rel in BOUNDARY:
        assert _calls(PKG / rel), rel  # an entry that no longer redacts is removed from the list


def test_a_cut_redacts_before_it_cuts() -> None:
    text = f"key {TOKEN} tail"
    for shown in (cut(text, 12), cut(text, 12, "…"), cut(text, 12, lambda n: f"+{n}"),
                  cut_utf8(text, 12)):
        assert TOKEN[:8] not in shown and shown.startswith("key [REDACT")
    key = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"] * 8)
           + "\n-----END RSA PRIVATE KEY-----")
    assert not any("QUJD" in line for line in last_lines(key, 3))  # the tail of a key alone
    assert all("QUJD" not in row for row in split_redacted(key))
    assert redacted_lines(key.split("\n")) is None  # spans lines: not shown line by line
    assert redacted_lines(["a = 1", f"t = {TOKEN}"]) == ["a = 1", "t = [REDACTED]"]


def test_the_audit_folder_writer_and_stdout_take_only_redacted_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for write in (lambda t: write_audit_file(tmp_path / "x.md", t),  # type: ignore[arg-type]
                  lambda t: write_stdout(t)):  # type: ignore[arg-type]
        with pytest.raises(UnredactedError):
            write(f"token {TOKEN}\n")
    assert not (tmp_path / "x.md").exists() and capsys.readouterr().out == ""


def test_a_build_error_tail_is_redacted_whole_before_its_last_lines_are_kept() -> None:
    from types import SimpleNamespace

    from auditor.rebuild.builders import BuildFailed, NvccBuilder

    key = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"] * 9)
           + "\n-----END RSA PRIVATE KEY-----")
    res = SimpleNamespace(returncode=1, stdout="", stderr=f"{key}\nerror: token {TOKEN}\n")
    sandbox = SimpleNamespace(kind="fake", fixed_root=None, run=lambda *a, **k: res)
    req = SimpleNamespace(module=SimpleNamespace(name="m"), placeholders={}, env={}, build_dir=None,
                          writable=(), readable=(), umask=0o22, timeout=1, root=None)
    cmd = SimpleNamespace(argv=("nvcc", "-c"), cwd=None, display=lambda p: "nvcc -c")
    builder = NvccBuilder.__new__(NvccBuilder)
    with pytest.raises(BuildFailed) as caught:
        builder._run(req, sandbox, cmd, [])  # type: ignore[arg-type]
    assert "QUJD" not in caught.value.message and TOKEN not in caught.value.message
    assert "[REDACTED]" in caught.value.message
