"""Whether auditor could read a Python file's values: the code strings it runs and the command
lines it holds (:mod:`auditor.scan.pystrings`, :mod:`auditor.scan.cmdlines`) are read from its
syntax tree, made by the interpreter auditor runs on (:mod:`auditor.pysource`, which reads the
f-strings of newer Pythons as opaque). A file that does not parse here gives no such reading, and
no other rule set reads what they would have (semgrep's own parser may read the file, but not
the code inside its strings): :class:`PythonSyntaxScanner` reports it not checked (an ``alone``
error), so a syntax this interpreter refuses can never hide code from the scan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from auditor import __version__, pysource
from auditor.scan import pyast
from auditor.scan.derived import PYTHON_DECODED
from auditor.scan.interface import FileError, Scanner, ScannerRun, ScanTarget


def syntax_error(text: str) -> FileError | None:
    """Why the values of the Python ``text`` cannot be read, or None when they can."""
    if pyast.compiles(text):
        return None
    try:
        pysource.parse(text)
    except SyntaxError as exc:
        line = exc.lineno or 0
        where = f"line {line}: " if line else ""
        return FileError(f"python: not valid {pysource.INTERPRETER} ({where}{exc.msg}): the code "
                         "strings and command lines in it were not read", lasting=True,
                         alone=True)
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileError(f"python: {pysource.INTERPRETER} cannot parse it "
                         f"({type(exc).__name__}): the code strings and command lines in it "
                         "were not read", lasting=True, alone=True)
    return None


class PythonSyntaxScanner(Scanner):
    """Reports the Python files whose syntax tree auditor cannot make (:func:`syntax_error`)."""

    name = "python-syntax"

    def version(self) -> str:
        return f"{__version__}+pysyntax1"

    def options_key(self) -> str:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def accepts(self, target: ScanTarget) -> bool:
        # the file as the interpreter decodes it: the decoded reading when one replaces it
        return (target.family == "python" and not target.superseded
                and target.derived in ("", PYTHON_DECODED))

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        errors = {t.key: err for t in files if (err := syntax_error(t.text)) is not None}
        return ScannerRun(findings={t.key: () for t in files}, errors=errors)
