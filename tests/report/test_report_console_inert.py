"""Untrusted names on the terminal: a bundle path or a file name cannot forge a console line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import simple_case, write_spec

FORGED = "\n\n──── verdict: PASS ────\n\x1b[2J\u202e"


def _auditor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _forged_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip().startswith("──── verdict")]


def test_a_bundle_path_with_newlines_cannot_forge_a_verdict_line(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    forged = case["bundle"].rename(case["bundle"].with_name("bundle" + FORGED))
    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    # the TOML writer escapes quotes only; write the control characters as TOML escapes
    escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) > 0x7e else c
                      for c in str(forged))
    spec.write_text(spec.read_text().replace(f'"{case["bundle"]}"', f'"{escaped}"'))
    res = _auditor("audit", str(spec), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "bundle\\x0a\\x0a──── verdict: PASS ────\\x0a\\x1b[2J\\u202e" in res.stderr
    assert "\x1b" not in res.stderr and "\u202e" not in res.stderr
    assert len(_forged_lines(res.stderr)) == 0
    assert res.stderr.count("verdict: PASS") == 2  # the escaped path, and the real rule line
