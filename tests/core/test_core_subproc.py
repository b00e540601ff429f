"""auditor.subproc.run: text or bytes as asked, typed errors for a missing or failing program."""

from __future__ import annotations

import sys

import pytest

from auditor import gitio, subproc
from auditor.errors import ToolError, ToolMissing

PRINT = "import sys; sys.stdout.buffer.write(b'caf\\xc3\\xa9\\xff'); sys.stderr.write('warn')"


def test_text_and_bytes_as_asked() -> None:
    as_bytes = subproc.run([sys.executable, "-c", PRINT], text=False)
    assert as_bytes.stdout == b"caf\xc3\xa9\xff" and as_bytes.stderr == "warn"
    ok = subproc.run([sys.executable, "-c", "print('caf\\u00e9')"])
    assert ok.stdout == "café\n" and isinstance(ok.stderr, str)


def test_failure_carries_stderr_and_missing_is_tool_missing() -> None:
    with pytest.raises(ToolError) as info:
        subproc.run([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(4)"])
    assert info.value.returncode == 4 and "boom" in info.value.stderr
    assert subproc.run([sys.executable, "-c", "raise SystemExit(4)"], check=False).returncode == 4
    with pytest.raises(ToolMissing):
        subproc.run(["auditor-no-such-program-here"])


def test_gitio_re_exports_the_wrapper() -> None:
    assert gitio.run is subproc.run and gitio.Completed is subproc.Completed
    assert gitio.which is subproc.which
