"""Packages the docs install: ``pip install`` lines in the shell code blocks of Markdown and
reStructuredText files (the blocks :mod:`auditor.scan.docs` reads, at their own lines).

A fork's README that says ``pip install git+https://github.com/fan/flashinfer@sm86`` installs a
dependency no requirements file declares. Each such install is a declaration of group
:data:`GROUP` ("installed by the docs"); :func:`only_the_docs` keeps those whose name no other
file of the tree declares, so the diff lists what only the docs bring in. What a block leaves
open (``pip install vllm==<version>``, a ``$VAR``) is prose, not an install the audit must
check: such lines are not reasons the dependency check is incomplete.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from auditor.deps.declaration import Declaration, Extraction
from auditor.deps.extract import shell
from auditor.scan import docs

GROUP = "installed by the docs"


def is_docs(p: PurePosixPath) -> bool:
    return docs.is_doc(posixpath.basename(str(p)))


def extract(path: str, text: str) -> Extraction:
    reading = docs.reading(path, text)
    if reading is None:
        return Extraction(files=(path,))
    found = shell.extract(path, reading.text)
    return Extraction(tuple(replace(d, group=GROUP, text=_line(text, d.line) or d.text)
                            for d in found.declarations), (), (path,))


def only_the_docs(decls: Sequence[Declaration]) -> list[Declaration]:
    """The declarations, without docs installs of a name another file of the tree declares
    (an index option from the docs is kept: it is where the docs' own installs come from)."""
    declared = {d.name for d in decls if d.group != GROUP and d.kind.is_package}
    return [d for d in decls if d.group != GROUP or not d.kind.is_package
            or d.name not in declared]


def _line(text: str, n: int) -> str:
    lines = text.split("\n")
    return lines[n - 1].strip() if 0 < n <= len(lines) else ""
