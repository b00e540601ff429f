"""Shell code blocks of Markdown and reStructuredText files read as shell at their own lines, and
the review ceiling of findings on docs (issue 29, item 4). No scanner runs here: the reading
itself, on the shapes real READMEs use."""

from __future__ import annotations

import pytest

from auditor.model import Action
from auditor.scan import derived, docs
from auditor.scan.interface import Origin, ScanTarget

README = """\
# vLLM sm86

Install the fork's build:

```bash
pip install git+https://github.com/sm86-fan/flashinfer.git@v0.2-sm86
# a comment stays a comment
export VLLM_API_KEY=<your-key>
```

1. Or the image:

   ```console
   $ docker pull sm86fan/vllm:latest
   Using default tag: latest
   (venv) $ docker run -p 8000:8000 sm86fan/vllm:latest \\
       vllm serve /m --host 0.0.0.0
   ```

```python
import os
os.system("curl https://x.example | sh")
```

```
user@box:~$ curl -fsSL https://get.example/i.sh | sh
plain output line
```

~~~sh
echo tilde
~~~
"""

RST = """\
Install
=======

.. code-block:: bash
   :caption: from source

   pip install -e .

.. code-block:: python

   import os

Then::

    $ vllm serve /m
    INFO started

.. highlight:: bash

Build::

    make wheel

.. prompt:: bash $

   docker pull x/y:1
"""


def _lines(text: str) -> dict[int, str]:
    return {n: ln for n, ln in enumerate(text.split("\n"), 1) if ln.strip()}


def _at(src: str, needle: str) -> int:
    return next(n for n, ln in enumerate(src.split("\n"), 1) if needle in ln)


def test_markdown_blocks_at_their_lines() -> None:
    r = docs.reading("README.md", README)
    assert r is not None and r.family == "bash"
    got = _lines(r.text)
    assert got[_at(README, "pip install git+")] == (
        "pip install git+https://github.com/sm86-fan/flashinfer.git@v0.2-sm86")
    assert got[_at(README, "export VLLM")] == "export VLLM_API_KEY=${DOC_VALUE}"
    assert got[_at(README, "$ docker pull")] == "docker pull sm86fan/vllm:latest"
    assert got[_at(README, "docker run")].startswith("docker run -p 8000:8000")
    assert got[_at(README, "vllm serve")].strip() == "vllm serve /m --host 0.0.0.0"
    assert got[_at(README, "curl -fsSL")] == "curl -fsSL https://get.example/i.sh | sh"
    assert got[_at(README, "echo tilde")] == "echo tilde"
    for output in ("Using default tag", "plain output line", "os.system", "# vLLM", "Install"):
        assert _at(README, output) not in got, output
    assert r.text.count("\n") == README.count("\n")


def test_rst_blocks_at_their_lines() -> None:
    r = docs.reading("docs/install.rst", RST)
    assert r is not None
    got = _lines(r.text)
    assert got[_at(RST, "pip install -e")] == "pip install -e ."
    assert got[_at(RST, "$ vllm serve")] == "vllm serve /m"
    assert got[_at(RST, "make wheel")] == "make wheel"  # a literal block after highlight:: bash
    assert got[_at(RST, "docker pull")] == "docker pull x/y:1"
    for other in (":caption:", "import os", "INFO started", "Install"):
        assert _at(RST, other) not in got, other


@pytest.mark.parametrize("path,text", [
    ("README.md", "# only prose, `pip install x` inline\n"),
    ("notes.txt", "```bash\ncurl x | sh\n```\n"),
    ("a.rst", ".. code-block:: yaml\n\n   run: curl x | sh\n"),
])
def test_no_reading_without_shell_blocks(path: str, text: str) -> None:
    assert docs.reading(path, text) is None


def test_derived_target_carries_the_block_lines() -> None:
    t = ScanTarget(key="k", path="README.md", origin=Origin.BUNDLE, sha256="0" * 64,
                   family=None, text=README)
    shells = [d for d in derived.derive(t) if d.derived == derived.DOCS_SHELL]
    assert len(shells) == 1 and shells[0].family == "bash"
    covered = {n for a, b in shells[0].covers for n in range(a, b + 1)}
    assert _at(README, "docker pull") in covered and _at(README, "Install the") not in covered


def test_ceiling_caps_docs_at_review() -> None:
    assert docs.ceiling("docs/a.md", Action.BLOCK) is Action.REVIEW
    assert docs.ceiling("README.rst", Action.INFO) is Action.INFO
    assert docs.ceiling("scripts/a.sh", Action.BLOCK) is Action.BLOCK


OUTPUT_AND_QUOTES = """\
```bash
nsys stats report1.nsys-rep
Time (%)  Total Time (ns)  Instances
--------  ---------------  ---------
{
    "object": "list",
}
curl http://localhost:8000/v1/completions \\
  -H "Content-Type: application/json" \\
  -d '{
    "model": "m",
    "prompt": "hi"
  }'
pip install "dstack[all]
dstack server
```
"""


def test_output_is_left_out_and_quoted_lines_kept_together() -> None:
    """Shapes of real vLLM docs (docs/contributing/profiling.md, docs/deployment/k8s.md): a
    table or JSON pasted into a bash block is output; a quoted JSON body over several lines is
    one argument; a quote nothing closes (a typo) is no shell."""
    r = docs.reading("docs/k8s.md", OUTPUT_AND_QUOTES)
    assert r is not None
    got = _lines(r.text)
    src = OUTPUT_AND_QUOTES
    assert _at(src, "nsys stats") in got and _at(src, "dstack server") in got
    for output in ("Time (%)", "--------", "\"object\"", "pip install \"dstack"):
        assert _at(src, output) not in got, output
    assert _at(src, "\"object\"") - 1 not in got  # the lone "{"
    body = range(_at(src, "curl http"), _at(src, "  }'") + 1)
    assert all(n in got for n in body), sorted(got)
